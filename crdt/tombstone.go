package crdt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Tombstone records that a memory was purged: its content, history and
// links erased on every node, for good. Unlike memories it is not an
// Automerge document, since nothing of the memory may survive in its
// history: it is a small value, and two tombstones of one memory (purged
// on two machines) merge into the earlier one, so every node ends up with
// the same bytes and heads.
type Tombstone struct {
	ID string    `json:"id"` // the memory's id
	At time.Time `json:"at"` // when it was purged
	By string    `json:"by"` // the device that purged it
}

// MaxTombstoneSize caps an encoded tombstone; DecodeTombstone refuses
// larger input before parsing it.
const MaxTombstoneSize = 512

// ErrInvalidTombstone: DecodeTombstone was given bytes that are not a
// valid tombstone.
var ErrInvalidTombstone = errors.New("crdt: invalid tombstone")

// tombstoneWire is the encoded form: the time in milliseconds, and a
// version so that the format can grow.
type tombstoneWire struct {
	V  int    `json:"v"`
	ID string `json:"id"`
	At int64  `json:"at"`
	By string `json:"by"`
}

// tombstoneVersion is the only encoding version this package knows.
const tombstoneVersion = 1

// Check reports whether t is a valid tombstone: a memory id, a time, and
// the id of the device that purged it.
func (t Tombstone) Check() error {
	if err := checkID("tombstone", t.ID); err != nil {
		return err
	}
	if t.At.IsZero() || t.At.UnixMilli() <= 0 {
		return fmt.Errorf("%w: no time", ErrInvalidTombstone)
	}
	if t.By == "" || len(t.By) > 64 || strings.Trim(t.By, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
		return fmt.Errorf("%w: device %q", ErrInvalidTombstone, t.By)
	}
	return nil
}

// Encode returns the canonical bytes of t: equal tombstones encode to equal
// bytes. The time is kept to the millisecond.
func (t Tombstone) Encode() ([]byte, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	return json.Marshal(tombstoneWire{V: tombstoneVersion, ID: t.ID, At: t.At.UnixMilli(), By: t.By})
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
// unknown fields or version, invalid values) fails with
// ErrInvalidTombstone.
func DecodeTombstone(data []byte) (Tombstone, error) {
	if len(data) > MaxTombstoneSize {
		return Tombstone{}, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidTombstone, len(data), MaxTombstoneSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w tombstoneWire
	if err := dec.Decode(&w); err != nil {
		return Tombstone{}, fmt.Errorf("%w: %v", ErrInvalidTombstone, err)
	}
	if dec.More() {
		return Tombstone{}, fmt.Errorf("%w: trailing data", ErrInvalidTombstone)
	}
	if w.V != tombstoneVersion {
		return Tombstone{}, fmt.Errorf("%w: version %d", ErrInvalidTombstone, w.V)
	}
	t := Tombstone{ID: w.ID, At: time.UnixMilli(w.At).UTC(), By: w.By}
	if err := t.Check(); err != nil {
		return Tombstone{}, fmt.Errorf("%w: %w", ErrInvalidTombstone, err)
	}
	return t, nil
}

// MergeTombstones returns the one of two tombstones of the same memory that
// every node keeps: the earlier purge, and of two at the same millisecond
// the one by the smaller device id. The result does not depend on the
// order of the arguments.
func MergeTombstones(a, b Tombstone) (Tombstone, error) {
	if a.ID != b.ID {
		return Tombstone{}, fmt.Errorf("%w: tombstones of %s and %s", ErrIDMismatch, a.ID, b.ID)
	}
	ma, mb := a.At.UnixMilli(), b.At.UnixMilli()
	if mb < ma || mb == ma && b.By < a.By {
		a = b
	}
	a.At = time.UnixMilli(a.At.UnixMilli()).UTC()
	return a, nil
}
