package crdt

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Frontier is what a member held of one device's work when it revoked
// the device: for each document, the highest sequence number of each of
// the device's Automerge actors among its changes (see Authors), and the
// memories whose tombstone names the device among their purgers. Every
// change of the device beyond it is refused by every node: an actor's
// changes to a document are numbered 1, 2, ... and each depends on the
// one before, so a sequence number at most the frontier's names a change
// the revoker held, and any other names one it did not.
//
// A frontier is a plain value: its encoding is canonical (equal
// frontiers encode to equal bytes), and DecodeFrontier refuses anything
// Encode does not make.
type Frontier struct {
	docs map[DocRef]map[string]uint64 // actor (hex) -> highest sequence number
}

// DocRef names a document across kinds, by the kind byte of package
// storage ('m' memory, 'e' edge, 'x' mesh record, 'p' tombstone).
type DocRef struct {
	Kind byte
	ID   string
}

// Frontier encoding:
//
//	version(1) = 1
//	actors:    count(uvarint) {len(uvarint) bytes}
//	documents: count(uvarint) {kind(1) id(16) count(uvarint) {actor index(uvarint) seq(uvarint)}}
//
// Documents are sorted by kind, then id, and each document's actors by
// index, with no repeats; a tombstone's document lists no actor.
const frontierVersion = 1

// ErrInvalidFrontier: DecodeFrontier was given bytes Encode does not make.
var ErrInvalidFrontier = errors.New("crdt: invalid frontier")

// AddChange records that the frontier holds actor's changes to the
// document up to seq.
func (f *Frontier) AddChange(doc DocRef, actor string, seq uint64) {
	actors := f.doc(doc)
	actors[actor] = max(actors[actor], seq)
}

// AddPurge records that the frontier holds the device's purge of the
// memory id.
func (f *Frontier) AddPurge(id string) { f.doc(DocRef{Kind: tombstoneKind, ID: id}) }

func (f *Frontier) doc(doc DocRef) map[string]uint64 {
	if f.docs == nil {
		f.docs = make(map[DocRef]map[string]uint64)
	}
	actors := f.docs[doc]
	if actors == nil {
		actors = make(map[string]uint64)
		f.docs[doc] = actors
	}
	return actors
}

// Remove takes a document out of the frontier: none of the device's
// changes to it is held.
func (f *Frontier) Remove(doc DocRef) { delete(f.docs, doc) }

// tombstoneKind is the storage kind of tombstones.
const tombstoneKind = 'p'

// Allows reports whether the frontier holds actor's change seq to the
// document.
func (f *Frontier) Allows(doc DocRef, actor string, seq uint64) bool {
	return seq <= f.docs[doc][actor]
}

// AllowsPurge reports whether the frontier holds the device's purge of
// the memory id.
func (f *Frontier) AllowsPurge(id string) bool {
	_, ok := f.docs[DocRef{Kind: tombstoneKind, ID: id}]
	return ok
}

// Len returns how many documents the frontier names.
func (f *Frontier) Len() int { return len(f.docs) }

// Intersect returns what both frontiers hold.
func (f *Frontier) Intersect(o *Frontier) *Frontier {
	out := &Frontier{}
	for doc, actors := range f.docs {
		others, ok := o.docs[doc]
		if !ok {
			continue
		}
		both := make(map[string]uint64)
		for actor, seq := range actors {
			if s, ok := others[actor]; ok {
				both[actor] = min(seq, s)
			}
		}
		if len(both) > 0 || doc.Kind == tombstoneKind {
			out.doc(doc)
			out.docs[doc] = both
		}
	}
	return out
}

// Encode returns the frontier's canonical bytes.
func (f *Frontier) Encode() ([]byte, error) {
	docs := slices.SortedFunc(maps.Keys(f.docs), func(a, b DocRef) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.ID, b.ID))
	})
	var actors []string
	for _, doc := range docs {
		for actor := range f.docs[doc] {
			actors = append(actors, actor)
		}
	}
	slices.Sort(actors)
	actors = slices.Compact(actors)
	index := make(map[string]uint64, len(actors))
	b := []byte{frontierVersion}
	b = binary.AppendUvarint(b, uint64(len(actors)))
	for i, actor := range actors {
		raw, err := hex.DecodeString(actor)
		if err != nil || len(raw) == 0 {
			return nil, fmt.Errorf("%w: actor %q", ErrInvalidFrontier, actor)
		}
		index[actor] = uint64(i)
		b = binary.AppendUvarint(b, uint64(len(raw)))
		b = append(b, raw...)
	}
	b = binary.AppendUvarint(b, uint64(len(docs)))
	for _, doc := range docs {
		id, err := idEncoding.DecodeString(doc.ID)
		if err != nil || !ValidID(doc.ID) {
			return nil, fmt.Errorf("%w: document %q", ErrInvalidFrontier, doc.ID)
		}
		b = append(b, doc.Kind)
		b = append(b, id...)
		entries := f.docs[doc]
		b = binary.AppendUvarint(b, uint64(len(entries)))
		for _, actor := range slices.SortedFunc(maps.Keys(entries), func(x, y string) int { return cmp.Compare(index[x], index[y]) }) {
			b = binary.AppendUvarint(b, index[actor])
			b = binary.AppendUvarint(b, entries[actor])
		}
	}
	return b, nil
}

// DecodeFrontier parses bytes made by Encode. Every count is checked
// against the bytes that remain before anything is allocated for it.
func DecodeFrontier(data []byte) (*Frontier, error) {
	c := cursor{b: data}
	if v := c.byte(); c.err == nil && v != frontierVersion {
		return nil, fmt.Errorf("%w: version %d", ErrInvalidFrontier, v)
	}
	actors := make([]string, c.count(2))
	for i := range actors {
		raw := c.take(c.uleb())
		if len(raw) == 0 && c.err == nil {
			c.fail(errors.New("an empty actor"))
		}
		actors[i] = hex.EncodeToString(raw)
		if i > 0 && actors[i] <= actors[i-1] && c.err == nil {
			c.fail(errors.New("actors out of order"))
		}
	}
	f := &Frontier{}
	n := c.count(1 + 16 + 1)
	var last DocRef
	for i := range n {
		kind := c.byte()
		doc := DocRef{Kind: kind, ID: idEncoding.EncodeToString(c.take(16))}
		if c.err == nil && i > 0 && cmp.Or(cmp.Compare(doc.Kind, last.Kind), strings.Compare(doc.ID, last.ID)) <= 0 {
			c.fail(errors.New("documents out of order"))
		}
		last = doc
		entries := f.doc(doc)
		prev := -1
		for range c.count(2) {
			idx, seq := c.uleb(), c.uleb()
			switch {
			case c.err != nil:
			case idx >= uint64(len(actors)) || int(idx) <= prev:
				c.fail(fmt.Errorf("actor index %d", idx))
			case seq == 0 || kind == tombstoneKind:
				c.fail(fmt.Errorf("sequence number %d in a %q document", seq, kind))
			default:
				prev = int(idx)
				entries[actors[idx]] = seq
			}
		}
	}
	if c.err == nil && len(c.b) > 0 {
		c.fail(errors.New("trailing bytes"))
	}
	if c.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFrontier, c.err)
	}
	return f, nil
}
