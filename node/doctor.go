package node

import (
	"context"
	"fmt"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/graph"
	"github.com/memmesh/memmesh/storage"
)

// Doctor checks the replicated graph and memories for what merging cannot
// decide: cycles in acyclic relations, sync conflicts and contradictions;
// and reports the revocations this node holds and what it refused of
// revoked devices' work.
func (n *Node) Doctor(ctx context.Context) (api.DoctorReport, error) {
	rep := api.DoctorReport{Cycles: []api.Cycle{}, Conflicts: []string{}, Contradictions: [][2]string{}}
	var err error
	if rep.Revocations, rep.Refused, err = n.registry.Revocations(); err != nil {
		return rep, err
	}
	facts, err := n.graphFacts(ctx)
	if err != nil {
		return rep, err
	}
	rep.Cycles = append(rep.Cycles, facts.cycles...)
	for _, c := range facts.pairs {
		rep.Contradictions = append(rep.Contradictions, [2]string{DisplayID(c.ids[0]), DisplayID(c.ids[1])})
	}
	err = n.store.Scan(storage.KindMemory, storage.Term{Field: "conflict", Value: "yes"}, func(id string) error {
		rep.Conflicts = append(rep.Conflicts, DisplayID(id))
		return nil
	})
	return rep, err
}

// cycles finds the cycles of every acyclic relation among the edges valid
// now.
// graphFacts are what the brief and doctor report about the whole graph:
// contradictions and cycles. Finding them reads every contradicts edge and
// every edge of an acyclic relation, so they are kept until the store
// changes, or for at most factsMaxAge, since an edge's validity can end
// without a change.
type graphFacts struct {
	seq    uint64
	at     time.Time
	pairs  []contradiction
	cycles []api.Cycle
}

const factsMaxAge = time.Minute

func (n *Node) graphFacts(ctx context.Context) (graphFacts, error) {
	n.factsMu.Lock()
	defer n.factsMu.Unlock()
	seq, now := n.store.DurableSeq(), n.now()
	if f := n.facts; f != nil && f.seq == seq && !now.Before(f.at) && now.Sub(f.at) < factsMaxAge {
		return *f, nil
	}
	pairs, err := n.contradictions(ctx)
	if err != nil {
		return graphFacts{}, err
	}
	cycles, err := n.cycles(ctx)
	if err != nil {
		return graphFacts{}, err
	}
	n.facts = &graphFacts{seq: seq, at: now, pairs: pairs, cycles: cycles}
	return *n.facts, nil
}

func (n *Node) cycles(ctx context.Context) ([]api.Cycle, error) {
	now := n.now()
	var out []api.Cycle
	for _, rel := range api.AcyclicRelations {
		var edges []graph.Edge
		err := n.store.Scan(storage.KindEdge, storage.Term{Field: "rel", Value: rel}, func(id string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, err := n.loadEdge(id)
			if err != nil {
				return err
			}
			if validAt(&e, now) {
				edges = append(edges, graph.Edge{From: e.From, To: e.To})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cycles of %s: %w", rel, err)
		}
		for _, members := range graph.Cycles(edges) {
			out = append(out, api.Cycle{Rel: rel, Members: members})
		}
	}
	return out, nil
}
