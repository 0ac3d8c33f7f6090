package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/gitstale"
	"github.com/memmesh/memmesh/internal/aging"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// staleListLimit is how many active memories Stale examines.
const staleListLimit = 1000

// Stale lists the memories of a namespace that may no longer hold, with
// the reasons: marked stale; superseded by a live memory (a valid
// supersedes edge); not updated for longer than the namespace's stale-after
// age (default 60 days); or linked to nothing and older than 30 days.
// Evergreen memories are stale only when marked. Everything but the mark
// is derived when asked, on every node the same way, and never written
// into the memory: updating it, linking it or invalidating the edge ends
// it.
func (n *Node) Stale(ctx context.Context, req api.StaleRequest) ([]api.StaleMemory, error) {
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return nil, err
	}
	out := []api.StaleMemory{}
	marked, err := n.List(ctx, api.ListRequest{Namespace: ns, Statuses: []model.Status{model.StatusStale}, Limit: staleListLimit})
	if err != nil {
		return nil, err
	}
	for _, m := range marked {
		out = append(out, api.StaleMemory{Memory: m, Reasons: []string{"marked stale"}})
	}
	active, err := n.List(ctx, api.ListRequest{Namespace: ns, Statuses: []model.Status{model.StatusActive}, Limit: staleListLimit})
	if err != nil {
		return nil, err
	}
	rules := n.staleRules(ctx)
	defer rules.close()
	for i := range active {
		reasons, err := rules.reasons(&active[i].Memory)
		if err != nil {
			return nil, err
		}
		if len(reasons) > 0 {
			out = append(out, api.StaleMemory{Memory: active[i], Reasons: reasonTexts(reasons)})
		}
	}
	return out, nil
}

// staleRules judges whether active memories may no longer hold.
type staleRules struct {
	now      time.Time
	days     map[string]int // stale-after per namespace, filled as asked
	settings func(ns string) model.MeshRecord
	// supersededBy gives the display ids of the live memories that
	// supersede a memory now.
	supersededBy func(id string) ([]string, error)
	// linked reports whether a valid edge starts or ends at a memory.
	linked func(id string) (bool, error)
	// valid holds the valid edges at the memories asked about, read once
	// (by edgesAt).
	valid map[string][]model.Edge
	// edges returns the valid edges at a memory (edgesAt).
	edges func(id string) ([]model.Edge, error)
	// git judges memories against their namespace's git trees.
	git *gitstale.Judge
}

// staleRules returns the rules as they stand now, reading a memory's
// edges when they are asked about it.
func (n *Node) staleRules(ctx context.Context) *staleRules {
	r := &staleRules{now: n.now(), days: map[string]int{}, settings: n.namespaceSettings, valid: map[string][]model.Edge{},
		git: n.git.NewJudge(ctx)}
	r.supersededBy = func(id string) ([]string, error) {
		edges, err := n.edgesAt(r, id)
		if err != nil {
			return nil, err
		}
		var by []string
		for _, e := range edges {
			from, ok := strings.CutPrefix(e.From, IDPrefix)
			if !ok || e.Rel != "supersedes" || e.To != DisplayID(id) {
				continue
			}
			active, err := n.isActive(from)
			if err != nil {
				return nil, err
			}
			if active {
				by = append(by, n.shortID(from)) // a retired memory supersedes nothing
			}
		}
		return by, nil
	}
	r.edges = func(id string) ([]model.Edge, error) { return n.edgesAt(r, id) }
	r.linked = func(id string) (bool, error) {
		edges, err := r.edges(id)
		return len(edges) > 0, err
	}
	return r
}

// close ends what the rules started to judge (git readers).
func (r *staleRules) close() {
	if r.git != nil {
		r.git.Close()
	}
}

// edgesAt returns the edges valid at r.now that start or end at memory id.
func (n *Node) edgesAt(r *staleRules, id string) ([]model.Edge, error) {
	if edges, ok := r.valid[id]; ok {
		return edges, nil
	}
	edges, err := n.validEdges(id, r.now)
	if err != nil {
		return nil, err
	}
	r.valid[id] = edges
	return edges, nil
}

// staleReason is one reason a memory may no longer hold.
type staleReason = gitstale.Reason

func reasonTexts(rs []staleReason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text
	}
	return out
}

// reasons gives the reasons an active memory may no longer hold (none: it
// holds).
func (r *staleRules) reasons(m *model.Memory) ([]staleReason, error) {
	var reasons []staleReason
	by, err := r.supersededBy(m.ID)
	if err != nil {
		return nil, err
	}
	if len(by) > 0 {
		reasons = append(reasons, staleReason{Rule: api.StaleSuperseded, Text: "superseded by " + strings.Join(by, ", ")})
	}
	if m.Evergreen {
		return reasons, nil
	}
	if r.git != nil {
		gitReasons, err := r.git.Reasons(m, func() ([]model.Edge, error) { return r.edges(m.ID) }, "")
		if err != nil {
			return nil, err
		}
		reasons = append(reasons, gitReasons...)
	}
	days, ok := r.days[m.Namespace]
	if !ok {
		days = int(r.settings(m.Namespace).StaleDays)
		if days == 0 {
			days = aging.DefaultStaleDays
		}
		r.days[m.Namespace] = days
	}
	if age := r.now.Sub(m.Provenance.UpdatedAt); age > time.Duration(days)*24*time.Hour {
		reasons = append(reasons, staleReason{Rule: api.StaleByAge, Text: fmt.Sprintf("not updated for %d days (stale after %dd)", int(age.Hours()/24), days)})
	}
	if r.now.Sub(m.Provenance.CreatedAt) > aging.OrphanAge {
		linked, err := r.linked(m.ID)
		if err != nil {
			return nil, err
		}
		if !linked {
			reasons = append(reasons, staleReason{Rule: api.StaleUnlinked, Text: "linked to nothing, and older than 30 days"})
		}
	}
	return reasons, nil
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
		if active, err := n.isActive(from); err != nil || !active {
			return err // a retired memory supersedes nothing
		}
		out[to] = append(out[to], n.shortID(from))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find superseded memories: %w", err)
	}
	return out, nil
}

// contradiction is two live memories a valid contradicts edge connects,
// and their namespaces.
type contradiction struct {
	ids        [2]string
	namespaces [2]string
}

// contradictions returns the pairs of live memories that a valid
// contradicts edge connects: conflicts until someone resolves them (by
// invalidating the edge, or retiring one side).
func (n *Node) contradictions(ctx context.Context) ([]contradiction, error) {
	now := n.now()
	var out []contradiction
	err := n.store.Scan(storage.KindEdge, storage.Term{Field: "rel", Value: "contradicts"}, func(edgeID string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := n.loadEdge(edgeID)
		if err != nil || !validAt(&e, now) {
			return err
		}
		var c contradiction
		for i, end := range []string{e.From, e.To} {
			id, ok := strings.CutPrefix(end, IDPrefix)
			if !ok {
				return nil
			}
			m, err := n.load(id)
			if storageNotFound(err) {
				return nil
			}
			if err != nil || m.Status != model.StatusActive {
				return err
			}
			c.ids[i], c.namespaces[i] = id, m.Namespace
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find contradictions: %w", err)
	}
	return out, nil
}
