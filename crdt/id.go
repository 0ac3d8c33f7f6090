package crdt

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"io"
)

// idLen is the length of a memory, revision or edge id.
const idLen = 26

// idEncoding is RFC 4648 base32 with a lowercase alphabet and no padding:
// 16 bytes encode to idLen characters.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random 128-bit id in lowercase base32. Ids are made
// without coordination on any node.
func NewID() string { return NewIDFrom(rand.Reader) }

// NewIDFrom is NewID with its 128 bits read from r (a simulation's seeded
// source), which must not fail.
func NewIDFrom(r io.Reader) string {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		panic(fmt.Sprintf("crdt: id source: %v", err))
	}
	return idEncoding.EncodeToString(b[:])
}

// ValidID reports whether id has the form NewID and EdgeID produce:
// idLen characters of the lowercase base32 alphabet.
func ValidID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// EdgeID returns the id of the edge (from, rel, to): the lowercase base32 of
// the first 16 bytes of sha256(from NUL rel NUL to). The same edge made on
// two machines therefore has the same id and merges into one document.
func EdgeID(from, rel, to string) string {
	sum := sha256.Sum256([]byte(from + "\x00" + rel + "\x00" + to))
	return idEncoding.EncodeToString(sum[:16])
}

// ActorID returns the Automerge actor id of a device: the hex of the first
// 16 bytes of sha256(device). Every change a device makes carries it.
//
// A node writes under SessionActorID instead, which starts with it.
func ActorID(device string) string {
	sum := sha256.Sum256([]byte(device))
	return hex.EncodeToString(sum[:16])
}

// SessionActorID returns the actor id a device writes under while its
// store is open: ActorID(device) followed by 8 bytes read from r, new at
// each opening. A store restored from a backup stands behind changes its
// device made since the backup, which its peers hold: written again under
// the same actor, the same sequence numbers would name other changes, and
// Automerge refuses to merge two changes of one actor and sequence number,
// so the documents would differ for good.
func SessionActorID(device string, r io.Reader) (string, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("crdt: actor: %w", err)
	}
	return ActorID(device) + hex.EncodeToString(b[:]), nil
}

func checkActor(actor string) error {
	if actor == "" || len(actor)%2 != 0 {
		return fmt.Errorf("%w: %q", ErrInvalidActor, actor)
	}
	if _, err := hex.DecodeString(actor); err != nil {
		return fmt.Errorf("%w: %q", ErrInvalidActor, actor)
	}
	return nil
}

func checkID(what, id string) error {
	if !ValidID(id) {
		return fmt.Errorf("%w: %s %q", ErrInvalidID, what, id)
	}
	return nil
}
