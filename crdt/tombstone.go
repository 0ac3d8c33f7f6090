package crdt

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Tombstone records that a memory was purged: its content, history and
// links erased on every node, for good. Unlike memories it is not an
// Automerge document, since nothing of the memory may survive in its
// history: it is a small value holding who purged the memory and when.
// Two tombstones of one memory (purged on two machines) merge into their
// union, each device's earliest purge, so every node ends up with the same
// bytes and heads, and no claimed time decides which purge survives: a
// purge refused later (its device was revoked before it, see Frontier)
// leaves the others standing.
type Tombstone struct {
	ID     string  // the memory's id
	Purges []Purge // at least one; one per device, sorted by device
}

// Purge is one device's purge of a memory.
type Purge struct {
	At time.Time // when, as the device's clock said (shown, never trusted)
	By string    // the device
}

// NewTombstone returns the tombstone of the memory id purged by one
// device.
func NewTombstone(id string, at time.Time, by string) Tombstone {
	return Tombstone{ID: id, Purges: []Purge{{At: at, By: by}}}
}

// First returns the purge shown for the tombstone: the earliest, and of
// two at the same millisecond the one by the smaller device id.
func (t Tombstone) First() Purge {
	return slices.MinFunc(t.Purges, func(a, b Purge) int {
		return cmp.Or(cmp.Compare(a.At.UnixMilli(), b.At.UnixMilli()), strings.Compare(a.By, b.By))
	})
}

// MaxTombstoneSize caps an encoded tombstone; DecodeTombstone refuses
// larger input before parsing it.
const MaxTombstoneSize = 8 << 10

// maxPurges caps the purges a tombstone holds: one per device of a mesh.
const maxPurges = 64

// ErrInvalidTombstone: DecodeTombstone was given bytes that are not a
// valid tombstone.
var ErrInvalidTombstone = errors.New("crdt: invalid tombstone")

// The encoded forms: the time in milliseconds, and a version so that the
// format can grow. A tombstone of one purge is written as version 1,
// which every node reads; one of several as version 2.
type tombstoneV1 struct {
	V  int    `json:"v"`
	ID string `json:"id"`
	At int64  `json:"at"`
	By string `json:"by"`
}

type tombstoneV2 struct {
	V      int         `json:"v"`
	ID     string      `json:"id"`
	Purges []purgeWire `json:"purges"`
}

type purgeWire struct {
	At int64  `json:"at"`
	By string `json:"by"`
}

// Check reports whether t is a valid tombstone: a memory id, and one to
// maxPurges purges by distinct devices, sorted, each with a time.
func (t Tombstone) Check() error {
	if err := checkID("tombstone", t.ID); err != nil {
		return err
	}
	if len(t.Purges) == 0 || len(t.Purges) > maxPurges {
		return fmt.Errorf("%w: %d purges, want 1 to %d", ErrInvalidTombstone, len(t.Purges), maxPurges)
	}
	for i, p := range t.Purges {
		if p.At.IsZero() || p.At.UnixMilli() <= 0 {
			return fmt.Errorf("%w: no time", ErrInvalidTombstone)
		}
		if p.By == "" || len(p.By) > 64 || strings.Trim(p.By, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
			return fmt.Errorf("%w: device %q", ErrInvalidTombstone, p.By)
		}
		if i > 0 && t.Purges[i-1].By >= p.By {
			return fmt.Errorf("%w: purges not sorted by device", ErrInvalidTombstone)
		}
	}
	return nil
}

// Encode returns the canonical bytes of t: equal tombstones encode to equal
// bytes. Times are kept to the millisecond.
func (t Tombstone) Encode() ([]byte, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	if len(t.Purges) == 1 {
		p := t.Purges[0]
		return json.Marshal(tombstoneV1{V: 1, ID: t.ID, At: p.At.UnixMilli(), By: p.By})
	}
	w := tombstoneV2{V: 2, ID: t.ID}
	for _, p := range t.Purges {
		w.Purges = append(w.Purges, purgeWire{At: p.At.UnixMilli(), By: p.By})
	}
	return json.Marshal(w)
}

// Heads returns the tombstone's heads for anti-entropy: the hash of its
// encoding. Nodes with the same tombstone have the same heads.
func (t Tombstone) Heads() ([]string, error) {
	b, err := t.Encode()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return []string{hex.EncodeToString(sum[:])}, nil
}

// DecodeTombstone parses bytes made by Encode. Anything else (too large,
// unknown fields or version, invalid values, a form Encode would not
// choose) fails with ErrInvalidTombstone.
func DecodeTombstone(data []byte) (Tombstone, error) {
	if len(data) > MaxTombstoneSize {
		return Tombstone{}, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidTombstone, len(data), MaxTombstoneSize)
	}
	var version struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(data, &version); err != nil {
		return Tombstone{}, fmt.Errorf("%w: %v", ErrInvalidTombstone, err)
	}
	var t Tombstone
	switch version.V {
	case 1:
		var w tombstoneV1
		if err := decodeStrict(data, &w); err != nil {
			return Tombstone{}, err
		}
		t = NewTombstone(w.ID, time.UnixMilli(w.At).UTC(), w.By)
	case 2:
		var w tombstoneV2
		if err := decodeStrict(data, &w); err != nil {
			return Tombstone{}, err
		}
		if len(w.Purges) < 2 {
			return Tombstone{}, fmt.Errorf("%w: version 2 with %d purges", ErrInvalidTombstone, len(w.Purges))
		}
		t.ID = w.ID
		for _, p := range w.Purges {
			t.Purges = append(t.Purges, Purge{At: time.UnixMilli(p.At).UTC(), By: p.By})
		}
	default:
		return Tombstone{}, fmt.Errorf("%w: version %d", ErrInvalidTombstone, version.V)
	}
	if err := t.Check(); err != nil {
		return Tombstone{}, fmt.Errorf("%w: %w", ErrInvalidTombstone, err)
	}
	return t, nil
}

// decodeStrict decodes one JSON value with no unknown field and nothing
// after it.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTombstone, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrInvalidTombstone)
	}
	return nil
}

// MergeTombstones returns the union of two tombstones of the same memory:
// each device's earliest purge (to the millisecond), sorted by device, at
// most maxPurges of them (those of the smallest device ids). The result
// does not depend on the order of the arguments.
func MergeTombstones(a, b Tombstone) (Tombstone, error) {
	if a.ID != b.ID {
		return Tombstone{}, fmt.Errorf("%w: tombstones of %s and %s", ErrIDMismatch, a.ID, b.ID)
	}
	first := make(map[string]time.Time)
	for _, p := range slices.Concat(a.Purges, b.Purges) {
		at := time.UnixMilli(p.At.UnixMilli()).UTC()
		if was, ok := first[p.By]; !ok || at.Before(was) {
			first[p.By] = at
		}
	}
	out := Tombstone{ID: a.ID}
	for _, by := range slices.Sorted(maps.Keys(first)) {
		if len(out.Purges) == maxPurges {
			break
		}
		out.Purges = append(out.Purges, Purge{At: first[by], By: by})
	}
	return out, nil
}

// Without returns the tombstone without the purges drop selects, and
// false when none is left.
func (t Tombstone) Without(drop func(Purge) bool) (Tombstone, bool) {
	kept := slices.DeleteFunc(slices.Clone(t.Purges), drop)
	return Tombstone{ID: t.ID, Purges: kept}, len(kept) > 0
}
