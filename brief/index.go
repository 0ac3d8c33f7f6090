package brief

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/graph"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// syncBatch is the most changes the index takes from the change log at
// once.
const syncBatch = 2048

// rankIndex holds, in memory, what the brief ranks memories by: for every
// live memory of every namespace the fields its score and section come
// from, and the edges at it. It is built from storage once, then follows
// the store's change log, which carries local writes and replicated ones
// alike, so a brief reads no record but those it shows and scans nothing
// in storage. It holds no content.
type rankIndex struct {
	mu    sync.Mutex
	built bool
	strs  map[string]string // interned strings
	// The kept rankings by namespace, and the memories to score again in
	// them.
	ranked map[string]*nsRanking
	dirty  map[string]struct{}
	// timed holds the memories with an edge that has a validity window:
	// their standing can change without a change, so they are scored
	// again at every brief.
	timed map[string]struct{}
	done  uint64                           // every change up to this seq is applied
	mems  map[string]*rankEntry            // live memories by full id
	byNS  map[string]map[string]*rankEntry // the same, by namespace
	edges map[string]*rankEdge             // edges with a memory end, by edge id
	adj   map[string]*rankAdj              // full memory id -> the edges at it, whether the memory is live or not
	// acyclic holds the edges of acyclic relations, for cycles.
	acyclic map[string]*rankEdge
	// acyclicVer counts the changes to acyclic; the cycles found at
	// cycleVer and cycleAt are kept until the next such change or
	// rankMaxAge (validity windows end without a change).
	acyclicVer uint64
	cycleVer   uint64
	cycleAt    time.Time
	cycleList  []api.Cycle
}

// rankEntry is what the brief knows of a memory without reading it. Its
// strings are interned: many memories share them.
type rankEntry struct {
	adj                       *rankAdj
	ns, kind, device          string
	tier                      model.Tier
	status                    model.Status
	confidence                float64
	evergreen, conflict       bool
	created, updated, expires time.Time
}

// rankAdj holds the edges at a memory; its entry points to it, so that
// ranking finds them without a lookup. Their summary is kept until an
// edge here changes, or a memory at the other end does; an edge with a
// validity window makes it be summed up again each time.
type rankAdj struct {
	edges []*rankEdge
	slot  int // the memory's place among a ranking's candidates, while it runs
	fresh bool
	timed bool
	sum   edgeSummary
}

// edgeSummary is what ranking reads of the edges valid at a memory.
type edgeSummary struct {
	degree       int      // edges that are not between near duplicates
	linked       bool     // any edge
	dup          bool     // an auto-link to a near duplicate
	contradicts  []string // full ids of the active memories it contradicts
	supersededBy []string // full ids of the active memories that supersede it
}

// summary returns the summary of the edges valid at now at memory id.
func (ri *rankIndex) summary(id string, a *rankAdj, now time.Time) *edgeSummary {
	if a.fresh && !a.timed {
		return &a.sum
	}
	a.sum, a.timed = edgeSummary{}, false
	for _, ed := range a.edges {
		a.timed = a.timed || !ed.validFrom.IsZero() || !ed.validTo.IsZero()
		if !ed.valid(now) {
			continue
		}
		a.sum.linked = true
		if nearDuplicate(ed) {
			a.sum.dup = true
		} else {
			a.sum.degree++
		}
		switch {
		case ed.rel == "contradicts":
			other := ed.toID
			if other == id {
				other = ed.fromID
			}
			if other != id && ri.active(other) {
				a.sum.contradicts = append(a.sum.contradicts, other)
			}
		case ed.rel == "supersedes" && ed.toID == id && ed.fromID != "" && ri.active(ed.fromID):
			a.sum.supersededBy = append(a.sum.supersededBy, ed.fromID)
		}
	}
	a.fresh = true
	if a.timed {
		ri.timed[id] = struct{}{}
	} else {
		delete(ri.timed, id)
	}
	return &a.sum
}

// touched marks what a change at memory id may change: its own score and
// summary and those of the memories at its edges' other ends.
func (ri *rankIndex) touched(id string) {
	ri.changed(id)
	if a, ok := ri.adj[id]; ok {
		for _, ed := range a.edges {
			ri.changed(ed.fromID)
			ri.changed(ed.toID)
		}
	}
}

// changed marks memory id's summary and score to be made again.
func (ri *rankIndex) changed(id string) {
	if id == "" {
		return
	}
	if a, ok := ri.adj[id]; ok {
		a.fresh = false
	}
	ri.dirty[id] = struct{}{}
}

// adjOf returns the edges at memory id, made empty when there are none.
func (ri *rankIndex) adjOf(id string) *rankAdj {
	a, ok := ri.adj[id]
	if !ok {
		a = &rankAdj{slot: -1}
		ri.adj[id] = a
	}
	return a
}

// rankEdge is an edge as the brief uses it.
type rankEdge struct {
	from, rel, to, origin string   // from and to in display form; rel and origin interned
	fromID, toID          string   // full memory ids of the ends (within from and to), "" for an artefact
	fromAdj, toAdj        *rankAdj // the edges at those memories, nil for an artefact
	validFrom, validTo    time.Time
}

// valid reports whether e holds at t: from validFrom and before validTo,
// where they are set.
func (e *rankEdge) valid(t time.Time) bool {
	return (e.validFrom.IsZero() || !t.Before(e.validFrom)) && (e.validTo.IsZero() || t.Before(e.validTo))
}

// intern returns the one copy of s the index keeps.
func (ri *rankIndex) intern(s string) string {
	if v, ok := ri.strs[s]; ok {
		return v
	}
	ri.strs[s] = s
	return s
}

func newRankIndex() *rankIndex {
	return &rankIndex{strs: map[string]string{}, ranked: map[string]*nsRanking{}, dirty: map[string]struct{}{}, timed: map[string]struct{}{}, mems: map[string]*rankEntry{}, byNS: map[string]map[string]*rankEntry{},
		edges: map[string]*rankEdge{}, adj: map[string]*rankAdj{}, acyclic: map[string]*rankEdge{}}
}

// sync brings the index up to date with every durable change: at the
// first call it reads every memory and edge record, then only the changes
// since. Call it with ri.mu held.
func (ri *rankIndex) sync(ctx context.Context, store Store) error {
	if !ri.built {
		seq := store.DurableSeq()
		for _, kind := range []storage.Kind{storage.KindMemory, storage.KindEdge} {
			if err := store.All(kind, func(rec storage.Record) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				return ri.apply(rec)
			}); err != nil {
				return fmt.Errorf("build the brief's index: %w", err)
			}
		}
		ri.built, ri.done = true, seq
	}
	for ri.done < store.DurableSeq() {
		last, err := store.Changes(ri.done, syncBatch, ri.apply)
		if err != nil {
			return fmt.Errorf("update the brief's index: %w", err)
		}
		if last == ri.done {
			return nil // the rest is not durable yet
		}
		ri.done = last
	}
	return nil
}

// apply takes one changed record into the index.
func (ri *rankIndex) apply(rec storage.Record) error {
	if rec.Erase {
		switch rec.Kind {
		case storage.KindMemory:
			ri.touched(rec.ID)
			ri.removeMemory(rec.ID)
		case storage.KindEdge:
			ri.removeEdge(rec.ID)
		}
		return nil
	}
	switch rec.Kind {
	case storage.KindPurge:
		ri.touched(rec.ID)
		ri.removeMemory(rec.ID)
	case storage.KindMemory:
		var m model.Memory
		if err := json.Unmarshal(rec.Value, &m); err != nil {
			return fmt.Errorf("decode memory %s: %w", rec.ID, err)
		}
		ri.removeMemory(m.ID)
		ri.touched(m.ID)
		if m.Status != model.StatusActive && m.Status != model.StatusStale {
			return nil
		}
		e := &rankEntry{adj: ri.adjOf(m.ID), ns: ri.intern(m.Namespace), kind: ri.intern(m.Kind), device: ri.intern(m.Provenance.Device),
			tier: m.Tier, status: m.Status, confidence: m.Confidence, evergreen: m.Evergreen, conflict: len(m.Conflict) > 0,
			created: m.Provenance.CreatedAt, updated: m.Provenance.UpdatedAt, expires: m.ExpiresAt}
		ri.mems[m.ID] = e
		if ri.byNS[m.Namespace] == nil {
			ri.byNS[m.Namespace] = map[string]*rankEntry{}
		}
		ri.byNS[m.Namespace][m.ID] = e
	case storage.KindEdge:
		var e model.Edge
		if err := json.Unmarshal(rec.Value, &e); err != nil {
			return fmt.Errorf("decode edge %s: %w", rec.ID, err)
		}
		ri.removeEdge(e.ID)
		from, isMem := strings.CutPrefix(e.From, api.IDPrefix)
		if !isMem {
			from = ""
		}
		to, isMem := strings.CutPrefix(e.To, api.IDPrefix)
		if !isMem {
			to = ""
		}
		if e.Deleted || (from == "" && to == "") {
			return nil
		}
		re := &rankEdge{from: e.From, rel: ri.intern(e.Rel), to: e.To, origin: ri.intern(e.Origin),
			fromID: from, toID: to, validFrom: e.ValidFrom, validTo: e.ValidTo}
		ri.edges[e.ID] = re
		if slices.Contains(api.AcyclicRelations, re.rel) {
			ri.acyclic[e.ID] = re
			ri.acyclicVer++
		}
		for _, end := range []struct {
			id  string
			adj **rankAdj
		}{{from, &re.fromAdj}, {to, &re.toAdj}} {
			if end.id != "" {
				a := ri.adjOf(end.id)
				a.edges = append(a.edges, re)
				*end.adj = a
				ri.changed(end.id)
			}
		}
	}
	return nil
}

func (ri *rankIndex) removeMemory(id string) {
	if e, ok := ri.mems[id]; ok {
		delete(ri.mems, id)
		if len(e.adj.edges) == 0 {
			delete(ri.adj, id)
		}
		delete(ri.byNS[e.ns], id)
		if len(ri.byNS[e.ns]) == 0 {
			delete(ri.byNS, e.ns)
		}
	}
}

func (ri *rankIndex) removeEdge(id string) {
	re, ok := ri.edges[id]
	if !ok {
		return
	}
	delete(ri.edges, id)
	if _, ok := ri.acyclic[id]; ok {
		delete(ri.acyclic, id)
		ri.acyclicVer++
	}
	for _, end := range []string{re.fromID, re.toID} {
		if end == "" {
			continue
		}
		if a := ri.adj[end]; a != nil {
			a.edges = slices.DeleteFunc(a.edges, func(x *rankEdge) bool { return x == re })
		}
		ri.changed(end)
	}
}

// active reports whether the memory with full id is live and active.
func (ri *rankIndex) active(id string) bool {
	e, ok := ri.mems[id]
	return ok && e.status == model.StatusActive
}

// touchesNamespace reports whether any of the endpoints is a live memory
// of ns.
func (ri *rankIndex) touchesNamespace(endpoints []string, ns string) bool {
	for _, end := range endpoints {
		if id, ok := strings.CutPrefix(end, api.IDPrefix); ok {
			if e, ok := ri.mems[id]; ok && e.ns == ns {
				return true
			}
		}
	}
	return false
}

// nearDuplicate reports whether e is a link memmesh made between two near
// duplicates: it says they are alike, not that either matters more.
func nearDuplicate(e *rankEdge) bool {
	return e.origin == api.OriginAutoLink && e.fromID != "" && e.toID != ""
}

// cycles returns the cycles of every acyclic relation among the edges
// valid at now.
func (ri *rankIndex) cycles(now time.Time) []api.Cycle {
	if ri.cycleList != nil && ri.cycleVer == ri.acyclicVer && !now.Before(ri.cycleAt) && now.Sub(ri.cycleAt) < rankMaxAge {
		return ri.cycleList
	}
	byRel := map[string][]graph.Edge{}
	for _, e := range ri.acyclic {
		if e.valid(now) {
			byRel[e.rel] = append(byRel[e.rel], graph.Edge{From: e.from, To: e.to})
		}
	}
	var out []api.Cycle
	for _, rel := range api.AcyclicRelations {
		for _, members := range graph.Cycles(byRel[rel]) {
			out = append(out, api.Cycle{Rel: rel, Members: members})
		}
	}
	ri.cycleVer, ri.cycleAt, ri.cycleList = ri.acyclicVer, now, append([]api.Cycle{}, out...)
	return out
}
