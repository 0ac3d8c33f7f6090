package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// Changes returns the memories, edges and erasures committed, locally or
// by a peer, after req.After, in the order of the change log. It reads
// the materialised records of the changed documents only.
func (n *Node) Changes(ctx context.Context, req api.ChangesRequest) (api.ChangesResult, error) {
	limit := req.Limit
	if limit == 0 {
		limit = api.MaxChangesLimit
	}
	if limit < 0 || limit > api.MaxChangesLimit {
		return api.ChangesResult{}, api.Invalidf("limit %d: use 1 to %d", req.Limit, api.MaxChangesLimit)
	}
	out := api.ChangesResult{Memories: []api.Memory{}, Edges: []api.Edge{}, Purged: []string{}}
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
		if rec.Erase {
			// Erased without a purge: the work of a revoked device.
			switch rec.Kind {
			case storage.KindMemory:
				out.Purged = append(out.Purged, DisplayID(rec.ID))
			case storage.KindEdge:
				out.Edges = append(out.Edges, api.Edge{Edge: model.Edge{ID: rec.ID, Deleted: true}})
			}
			return nil
		}
		switch rec.Kind {
		case storage.KindPurge:
			out.Purged = append(out.Purged, DisplayID(rec.ID))
		case storage.KindEdge:
			var e model.Edge
			if err := json.Unmarshal(rec.Value, &e); err != nil {
				return fmt.Errorf("decode edge %s: %w", rec.ID, err)
			}
			out.Edges = append(out.Edges, api.Edge{Edge: e})
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
		return api.ChangesResult{}, fmt.Errorf("changes after %d: %w", req.After, err)
	}
	out.Next, out.More = next, read >= limit && next < end
	return out, nil
}
