package crdt

import (
	"encoding/hex"
	"fmt"

	"github.com/automerge/automerge-go"
)

// Change columns of a document chunk, as id<<4 | type: the actor index
// of each change (uLEB) and its sequence number (delta).
const (
	colChangeActor = 0<<4 | 1
	colChangeSeq   = 0<<4 | 3
)

// maxChanges caps the changes Authors walks in one document: a run of
// rows in a column may claim any length.
const maxChanges = maxOps

// Authors returns the actors that made changes to a saved document, each
// with the highest sequence number of its changes (an actor's changes
// to a document are numbered 1, 2, ... and each depends on the one
// before, so the highest names them all). It reads the document's change
// metadata without loading it into Automerge, with the bounds checkSaved
// applies; it does not check the rest of the document.
func Authors(data []byte) (map[string]uint64, error) {
	h, err := readHeader(data)
	if err != nil {
		return nil, err
	}
	actors := make([]string, len(h.actors))
	for i, a := range h.actors {
		actors[i] = hex.EncodeToString(a)
	}
	budget := int64(maxInflated)
	var actorCol, seqCol []byte
	for _, col := range h.changeCols {
		keep := col.id == colChangeActor || col.id == colChangeSeq
		b, err := col.data(&h.rest, &budget, keep)
		if err != nil {
			return nil, err
		}
		switch col.id {
		case colChangeActor:
			actorCol = b
		case colChangeSeq:
			seqCol = b
		}
	}
	return changeAuthors(actors, actorCol, seqCol)
}

// changeAuthors pairs the rows of the change actor and sequence columns.
func changeAuthors(actors []string, actorCol, seqCol []byte) (map[string]uint64, error) {
	idx, seqs := rle{c: cursor{b: actorCol}}, rle{c: cursor{b: seqCol}, signed: true}
	out := make(map[string]uint64)
	var seq int64
	for row := 0; ; row++ {
		a, null, ok := idx.next()
		if !ok {
			break
		}
		if row >= maxChanges {
			return nil, fmt.Errorf("%w: more than %d changes", ErrTooLarge, maxChanges)
		}
		d, _ := seqs.nextOrNull()
		seq += int64(d)
		if null || a >= uint64(len(actors)) || seq <= 0 {
			return nil, fmt.Errorf("%w: change %d has actor %d of %d and sequence number %d", ErrCorrupt, row, a, len(actors), seq)
		}
		out[actors[a]] = max(out[actors[a]], uint64(seq))
	}
	if err := idx.c.err; err != nil {
		return nil, fmt.Errorf("%w: change actors: %w", ErrCorrupt, err)
	}
	if err := seqs.c.err; err != nil {
		return nil, fmt.Errorf("%w: change sequence numbers: %w", ErrCorrupt, err)
	}
	return out, nil
}

// Without returns a saved document without the changes drop selects (by
// actor and sequence number) and every change that depends on one of
// them, directly or not, with how many it left out. It returns data
// itself when nothing is left out, and nil when everything is: no
// document remains. data gets the checks LoadMemoryDoc applies before
// Automerge parses it; the result is Automerge's save of what is left,
// which any loader then checks as it checks a peer's bytes.
func Without(data []byte, drop func(actor string, seq uint64) bool) ([]byte, int, error) {
	if err := checkBytes(data); err != nil {
		return nil, 0, err
	}
	am, err := automerge.Load(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	cost := docOverhead + loadedByteCost*int64(len(data))
	defer func() { noteGarbage(cost) }()
	changes, err := am.Changes()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	dropped := make(map[automerge.ChangeHash]bool)
	// Changes come with their dependencies first, but a fixed point does
	// not rely on it.
	for more := true; more; {
		more = false
		for _, ch := range changes {
			h := ch.Hash()
			if dropped[h] {
				continue
			}
			bad := drop(ch.ActorID(), ch.ActorSeq())
			for _, dep := range ch.Dependencies() {
				bad = bad || dropped[dep]
			}
			if bad {
				dropped[h] = true
				more = true
			}
		}
	}
	switch len(dropped) {
	case 0:
		return data, 0, nil
	case len(changes):
		return nil, len(dropped), nil
	}
	// What is kept is closed under dependencies: its heads are the kept
	// changes no kept change depends on, and the document as of them
	// holds exactly the kept changes.
	isDep := make(map[automerge.ChangeHash]bool)
	for _, ch := range changes {
		if !dropped[ch.Hash()] {
			for _, dep := range ch.Dependencies() {
				isDep[dep] = true
			}
		}
	}
	var heads []automerge.ChangeHash
	for _, ch := range changes {
		if h := ch.Hash(); !dropped[h] && !isDep[h] {
			heads = append(heads, h)
		}
	}
	kept, err := am.Fork(heads...)
	if err != nil {
		return nil, 0, fmt.Errorf("crdt: fork without %d changes: %w", len(dropped), err)
	}
	out := kept.Save()
	cost += docOverhead + loadedByteCost*int64(len(out))
	return out, len(dropped), nil
}
