package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// ChangesRequest asks what changed after a position of the change log, so
// that a client keeping a copy of part of the store (the server-memory
// profile's graph) updates it instead of reading it all again.
type ChangesRequest struct {
	// After is the position the client's copy is at: the Next of the last
	// answer. A position beyond the log's end (a client that started from
	// ^uint64(0), or whose node was replaced) answers Reset.
	After uint64 `json:"after"`
	// Namespace keeps the memories of this namespace only; "" keeps all.
	Namespace string `json:"namespace,omitempty"`
	// Limit bounds the documents read, up to and by default
	// MaxChangesLimit; a commit of several documents comes whole.
	Limit int `json:"limit,omitempty"`
}

// MaxChangesLimit is the most documents one Changes call reads.
const MaxChangesLimit = 10_000

// ChangesResult is what changed, each document in its newest version.
type ChangesResult struct {
	Memories []Memory `json:"memories"` // any status: a memory deleted or moved away changed too
	Edges    []Edge   `json:"edges"`    // deleted ones too
	Purged   []string `json:"purged"`   // ids (m-...) of memories erased
	// Elsewhere holds the ids of the memories changed in other namespaces
	// than the one asked for: one of them may have moved out of it.
	Elsewhere []string `json:"elsewhere,omitempty"`
	Next      uint64   `json:"next"` // the position to ask from next
	More      bool     `json:"more"` // Limit cut the answer: ask again from Next
	// Reset says that After is beyond the log: the client's copy cannot be
	// brought up to date and must be read again; Next is the log's end.
	Reset bool `json:"reset,omitempty"`
}

// Changes returns the memories, edges and erasures committed, locally or
// by a peer, after req.After, in the order of the change log. It reads
// the materialised records of the changed documents only.
func (n *Node) Changes(ctx context.Context, req ChangesRequest) (ChangesResult, error) {
	limit := req.Limit
	if limit == 0 {
		limit = MaxChangesLimit
	}
	if limit < 0 || limit > MaxChangesLimit {
		return ChangesResult{}, invalidf("limit %d: use 1 to %d", req.Limit, MaxChangesLimit)
	}
	out := ChangesResult{Memories: []Memory{}, Edges: []Edge{}, Purged: []string{}}
	end := n.store.DurableSeq()
	if req.After > end {
		out.Next, out.Reset = end, true
		return out, nil
	}
	nsTerm := storage.Term{Field: "ns", Value: req.Namespace}
	read := 0
	next, err := n.store.Changes(req.After, limit, func(rec storage.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		read++
		switch rec.Kind {
		case storage.KindPurge:
			out.Purged = append(out.Purged, DisplayID(rec.ID))
		case storage.KindEdge:
			var e model.Edge
			if err := json.Unmarshal(rec.Value, &e); err != nil {
				return fmt.Errorf("decode edge %s: %w", rec.ID, err)
			}
			out.Edges = append(out.Edges, Edge{e})
		case storage.KindMemory:
			if req.Namespace != "" && !slices.Contains(rec.Terms, nsTerm) {
				out.Elsewhere = append(out.Elsewhere, DisplayID(rec.ID))
				return nil
			}
			var m model.Memory
			if err := json.Unmarshal(rec.Value, &m); err != nil {
				return fmt.Errorf("decode memory %s: %w", rec.ID, err)
			}
			out.Memories = append(out.Memories, n.view(m))
		}
		return nil
	})
	if err != nil {
		return ChangesResult{}, fmt.Errorf("changes after %d: %w", req.After, err)
	}
	out.Next, out.More = next, read >= limit && next < end
	return out, nil
}
