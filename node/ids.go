package node

import (
	"fmt"
	"strings"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/storage"
)

// IDPrefix starts every memory id shown to people and agents.
const IDPrefix = api.IDPrefix

// minShortID is the fewest id characters shown in a short id.
const minShortID = 8

// minRefLen is the fewest id characters accepted as a reference.
const minRefLen = 4

// DisplayID turns a stored id into the form shown to users ("m-" + id).
func DisplayID(id string) string { return IDPrefix + id }

// resolve turns a user's reference (full or short id, with or without the
// "m-" prefix) into a stored memory id.
func (n *Node) resolve(ref string) (string, error) {
	raw := strings.ToLower(strings.TrimSpace(ref))
	raw = strings.TrimPrefix(raw, IDPrefix)
	switch {
	case raw == "":
		return "", api.Invalidf("no memory id given: ids look like m-k3j5x2ab")
	case strings.Trim(raw, "abcdefghijklmnopqrstuvwxyz234567") != "":
		return "", api.Invalidf("%q is not a memory id: ids use the letters a-z and the digits 2-7 after m-, e.g. m-k3j5x2ab", ref)
	case len(raw) < minRefLen || len(raw) > 26:
		return "", api.Invalidf("%q is not a memory id: give %d to 26 characters after m-, e.g. m-k3j5x2ab", ref, minRefLen)
	}
	if crdt.ValidID(raw) {
		if _, err := n.store.Get(storage.KindMemory, raw); err != nil {
			return "", n.notFound(raw, ref, err)
		}
		return raw, nil
	}
	ids, err := n.store.IDsWithPrefix(storage.KindMemory, raw, 2)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", api.Echo(ref), err)
	}
	switch len(ids) {
	case 0:
		// A purged memory answers so, not "not found".
		purged, err := n.store.IDsWithPrefix(storage.KindPurge, raw, 2)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", api.Echo(ref), err)
		}
		if len(purged) == 1 {
			return "", n.notFound(purged[0], ref, storage.ErrNotFound)
		}
		return "", api.InputError(api.ErrNotFound, "no memory has id %s", ref)
	case 1:
		return ids[0], nil
	default:
		return "", api.InputError(api.ErrAmbiguous, "%s matches several memories; give more characters of the id", ref)
	}
}

// notFound explains why the memory id (which ref named) could not be
// read: purged, not found, or err.
func (n *Node) notFound(id, ref string, err error) error {
	if !storageNotFound(err) {
		return fmt.Errorf("read %s: %w", api.Echo(ref), err)
	}
	if perr := n.purgedMemory(id); perr != nil {
		return perr
	}
	return api.InputError(api.ErrNotFound, "no memory has id %s", ref)
}

// shortID returns the shortest prefix of id, at least minShortID long, that
// no other memory shares, in display form.
func (n *Node) shortID(id string) string {
	for l := minShortID; l < len(id); l += 2 {
		ids, err := n.store.IDsWithPrefix(storage.KindMemory, id[:l], 2)
		if err != nil || len(ids) < 2 {
			return DisplayID(id[:l])
		}
	}
	return DisplayID(id)
}
