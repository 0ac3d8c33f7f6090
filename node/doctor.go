package node

import (
	"context"
	"fmt"

	"github.com/memmesh/memmesh/graph"
	"github.com/memmesh/memmesh/storage"
)

// Cycle is a set of endpoints that edges of one acyclic relation connect
// in a cycle. Link refuses to close one, but two machines can each add an
// edge that is fine alone and closes a cycle once both are merged: such a
// cycle is reported, not hidden, until someone unlinks or invalidates an
// edge on it.
type Cycle struct {
	Rel     string   `json:"rel"`
	Members []string `json:"members"` // endpoints on the cycle, sorted
}

// DoctorReport lists what needs a person's or an agent's decision.
type DoctorReport struct {
	Cycles         []Cycle     `json:"cycles"`
	Conflicts      []string    `json:"conflicts"`      // memories with unresolved sync conflicts
	Contradictions [][2]string `json:"contradictions"` // live memories a contradicts edge connects
}

// Doctor checks the replicated graph and memories for what merging cannot
// decide: cycles in acyclic relations, sync conflicts and contradictions.
func (n *Node) Doctor(ctx context.Context) (DoctorReport, error) {
	rep := DoctorReport{Cycles: []Cycle{}, Conflicts: []string{}, Contradictions: [][2]string{}}
	cycles, err := n.cycles(ctx)
	if err != nil {
		return rep, err
	}
	rep.Cycles = append(rep.Cycles, cycles...)
	pairs, err := n.contradictions(ctx)
	if err != nil {
		return rep, err
	}
	for _, p := range pairs {
		rep.Contradictions = append(rep.Contradictions, [2]string{DisplayID(p[0]), DisplayID(p[1])})
	}
	err = n.store.Scan(storage.KindMemory, storage.Term{Field: "conflict", Value: "yes"}, func(id string) error {
		rep.Conflicts = append(rep.Conflicts, DisplayID(id))
		return nil
	})
	return rep, err
}

// cycles finds the cycles of every acyclic relation among the edges valid
// now.
func (n *Node) cycles(ctx context.Context) ([]Cycle, error) {
	now := n.now()
	var out []Cycle
	for _, rel := range AcyclicRelations {
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
			out = append(out, Cycle{Rel: rel, Members: members})
		}
	}
	return out, nil
}
