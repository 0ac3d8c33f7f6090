package node

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/rules"
)

// maxDeviceRef bounds a device filter: a device id is 52 characters, a
// name a label.
const maxDeviceRef = rules.MaxLabelLen

// findDevice resolves a device filter (api.SearchRequest.Device) to the
// id the search index holds: a device id, a unique prefix of one (in any
// case), or a device's name in the registry. It looks among the devices
// of the registry and those that wrote the memories indexed here, which
// include devices no longer in the registry and those of imported
// memories, once the index holds every durable change. "" is no filter.
func (n *Node) findDevice(ctx context.Context, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", nil
	}
	if len(ref) > maxDeviceRef || !utf8.ValidString(ref) {
		return "", api.Invalidf("device: give a device id, a prefix of one or a name, of at most %d bytes", maxDeviceRef)
	}
	if err := n.indexer.waitFor(ctx, n.store.DurableSeq()); err != nil {
		return "", err
	}
	devices, err := n.registry.Devices()
	if err != nil {
		return "", err
	}
	prefix := strings.ToUpper(ref)
	exact, byPrefix := map[string]bool{}, map[string]bool{}
	for _, d := range devices {
		switch {
		case d.Key == ref || d.Name == ref:
			exact[d.Key] = true
		case strings.HasPrefix(d.Key, prefix):
			byPrefix[d.Key] = true
		}
	}
	for _, p := range []string{ref, prefix} {
		indexed, err := n.index.Devices(p, 3)
		if err != nil {
			return "", err
		}
		for _, id := range indexed {
			if id == ref {
				exact[id] = true
			} else {
				byPrefix[id] = true
			}
		}
	}
	if len(exact) == 0 {
		exact = byPrefix
	}
	switch len(exact) {
	case 0:
		return "", api.InputError(api.ErrNotFound, "device %q: no device of that id, prefix or name wrote a memory here (see memmesh devices)", ref)
	case 1:
		for id := range exact {
			return id, nil
		}
	}
	return "", api.InputError(api.ErrAmbiguous, "device %q matches %d devices; give more of its id", ref, len(exact))
}
