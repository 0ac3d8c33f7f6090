package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/storage"
)

// StaleMemory is a memory that may no longer hold, and why.
type StaleMemory struct {
	Memory  Memory   `json:"memory"`
	Reasons []string `json:"reasons"`
}

// StaleRequest asks for a namespace's stale memories.
type StaleRequest struct {
	Namespace string `json:"namespace,omitempty"`
}

// Stale lists the memories of a namespace that may no longer hold: those
// marked stale, and active ones that a live memory supersedes (a valid
// supersedes edge). Supersession is derived when asked, on every node the
// same way, and never written into the memory: `memmesh update ID --status
// active` or invalidating the edge ends it.
func (n *Node) Stale(ctx context.Context, req StaleRequest) ([]StaleMemory, error) {
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return nil, err
	}
	out := []StaleMemory{}
	marked, err := n.List(ctx, ListRequest{Namespace: ns, Statuses: []crdt.Status{crdt.StatusStale}, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for _, m := range marked {
		out = append(out, StaleMemory{Memory: m, Reasons: []string{"marked stale"}})
	}
	superseded, err := n.superseded(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(superseded)) {
		m, err := n.load(id)
		if err != nil || m.Namespace != ns || m.Status != crdt.StatusActive || !live(&m, n.now()) {
			continue
		}
		out = append(out, StaleMemory{Memory: n.view(m), Reasons: []string{"superseded by " + strings.Join(superseded[id], ", ")}})
	}
	return out, nil
}

// superseded maps each memory id that a live memory supersedes now to the
// display ids of the memories that supersede it.
func (n *Node) superseded(ctx context.Context) (map[string][]string, error) {
	now := n.now()
	out := map[string][]string{}
	err := n.store.Scan(storage.KindEdge, storage.Term{Field: "rel", Value: "supersedes"}, func(edgeID string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := n.loadEdge(edgeID)
		if err != nil || !validAt(&e, now) {
			return err
		}
		to, ok := strings.CutPrefix(e.To, IDPrefix)
		from, ok2 := strings.CutPrefix(e.From, IDPrefix)
		if !ok || !ok2 {
			return nil
		}
		if by, err := n.load(from); err != nil || by.Status != crdt.StatusActive {
			return nil // a retired memory supersedes nothing
		}
		out[to] = append(out[to], n.shortID(from))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find superseded memories: %w", err)
	}
	return out, nil
}

// contradictions returns the pairs of live memories that a valid
// contradicts edge connects: conflicts until someone resolves them (by
// invalidating the edge, or retiring one side).
func (n *Node) contradictions(ctx context.Context) ([][2]string, error) {
	now := n.now()
	var out [][2]string
	err := n.store.Scan(storage.KindEdge, storage.Term{Field: "rel", Value: "contradicts"}, func(edgeID string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := n.loadEdge(edgeID)
		if err != nil || !validAt(&e, now) {
			return err
		}
		pair := [2]string{}
		for i, end := range []string{e.From, e.To} {
			id, ok := strings.CutPrefix(end, IDPrefix)
			if !ok {
				return nil
			}
			if m, err := n.load(id); err != nil || m.Status != crdt.StatusActive {
				return nil
			}
			pair[i] = id
		}
		out = append(out, pair)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find contradictions: %w", err)
	}
	return out, nil
}
