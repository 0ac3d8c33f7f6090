package brief

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/aging"
	"github.com/memmesh/memmesh/model"
)

// A namespace's ranking is kept between briefs: every live memory scored
// and sorted by how it takes the budget. A change re-scores only the
// memories it touched (the one changed, and those whose edges it changed
// or whose linked memory it retired) and moves them in the order. The
// ranking is made again from the index when it is older than rankMaxAge,
// since scores move with time (recency, decay, age), or when the
// namespace's stale-after age changed.
const rankMaxAge = time.Minute

// nsRanking is one namespace's ranking.
type nsRanking struct {
	at        time.Time
	staleDays int
	byID      map[string]*candidate // every live memory of the namespace
	order     []*candidate          // the same, by compare
}

// rankParams are what scores depend on besides the memory.
type rankParams struct {
	now       time.Time
	staleDays int
	halfLife  time.Duration
}

// rankNamespace returns the candidates of ns in the order they take the
// budget, and the cycles through ns. Conflicts come first, then the top
// open task and the top stale alert, then the rest in order; a cluster of
// near duplicates shows as its best-ranked member, counting the others.
// Call it with mk.ranks.mu held; the sequence reads the ranking, so use it
// before releasing the lock.
func (mk *Maker) rankNamespace(ctx context.Context, ns string, now time.Time) (iter.Seq[candidate], []api.Cycle, error) {
	ri := mk.ranks
	if err := ri.sync(ctx, mk.cfg.Store); err != nil {
		return nil, nil, err
	}
	p := rankParams{now: now, staleDays: cmp.Or(mk.cfg.Host.StaleDays(ns), aging.DefaultStaleDays), halfLife: mk.cfg.HalfLife}
	r := mk.ranking(ns, p)
	var cycles []api.Cycle
	for _, c := range ri.cycles(now) {
		if ri.touchesNamespace(c.Members, ns) {
			cycles = append(cycles, c)
		}
	}
	since := mk.lastAsked(ns, now)
	return func(yield func(candidate) bool) {
		seen := map[string]bool{} // near duplicates of a memory shown
		emit := func(c *candidate) bool {
			if seen[c.id] {
				return true
			}
			e := ri.mems[c.id]
			if e == nil || (!e.expires.IsZero() && !now.Before(e.expires)) {
				return true
			}
			out := *c
			if c.dup && c.section != api.SectionConflicts {
				out.similar = mk.cluster(r, c.id, now, seen)
			}
			switch {
			case out.section != api.SectionActive:
			case e.device != mk.cfg.Device && !e.updated.Before(since):
				out.section = api.SectionFromPeers
			case e.kind == "decision" && now.Sub(e.updated) <= recentDecisions:
				out.section = api.SectionDecisions
			}
			return yield(out)
		}
		lead := 0
		for lead < len(r.order) && r.order[lead].section == api.SectionConflicts {
			if !emit(r.order[lead]) {
				return
			}
			lead++
		}
		// The top open task and the top stale alert always get room.
		first := map[string]bool{}
		for _, sec := range []int{api.SectionTasks, api.SectionStale} {
			if i := slices.IndexFunc(r.order[lead:], func(c *candidate) bool { return c.section == sec }); i >= 0 {
				first[r.order[lead+i].id] = true
				if !emit(r.order[lead+i]) {
					return
				}
			}
		}
		for _, c := range r.order[lead:] {
			if !first[c.id] && !emit(c) {
				return
			}
		}
	}, cycles, nil
}

// ranking returns the ranking of ns as of p.now: the kept one with the
// memories changed since re-scored, or a new one.
func (mk *Maker) ranking(ns string, p rankParams) *nsRanking {
	ri := mk.ranks
	// Every kept ranking takes the changes to its memories.
	for id := range ri.timed {
		ri.dirty[id] = struct{}{}
	}
	for id := range ri.dirty {
		for _, r := range ri.ranked {
			if c, ok := r.byID[id]; ok {
				r.remove(c)
			}
		}
		e, ok := ri.mems[id]
		if !ok {
			delete(ri.timed, id)
			continue
		}
		if r := ri.ranked[e.ns]; r != nil {
			// Scored now: a change may be an edge whose validity ended
			// now.
			r.insert(mk.score(id, e, rankParams{now: p.now, staleDays: r.staleDays, halfLife: p.halfLife}))
		}
	}
	clear(ri.dirty)
	if r := ri.ranked[ns]; r != nil && r.staleDays == p.staleDays && !p.now.Before(r.at) && p.now.Sub(r.at) < rankMaxAge {
		return r
	}
	entries := ri.byNS[ns]
	r := &nsRanking{at: p.now, staleDays: p.staleDays, byID: make(map[string]*candidate, len(entries)), order: make([]*candidate, 0, len(entries))}
	for id, e := range entries {
		c := mk.score(id, e, p)
		r.byID[id] = c
		r.order = append(r.order, c)
	}
	slices.SortFunc(r.order, func(a, b *candidate) int { return a.compare(b) })
	ri.ranked[ns] = r
	return r
}

// remove takes c out of r.
func (r *nsRanking) remove(c *candidate) {
	if i, found := slices.BinarySearchFunc(r.order, c, func(a, b *candidate) int { return a.compare(b) }); found {
		r.order = slices.Delete(r.order, i, i+1)
	}
	delete(r.byID, c.id)
}

// insert puts c in r, in order.
func (r *nsRanking) insert(c *candidate) {
	i, _ := slices.BinarySearchFunc(r.order, c, func(a, b *candidate) int { return a.compare(b) })
	r.order = slices.Insert(r.order, i, c)
	r.byID[c.id] = c
}

// score makes the candidate of memory id: its class, score, section
// (conflicts, stale alerts, open tasks or the others: what other machines
// learned and recent decisions are told apart when shown) and why.
func (mk *Maker) score(id string, e *rankEntry, p rankParams) *candidate {
	c := &candidate{id: id, class: rankClass(e.kind, e.tier)}
	sum := mk.ranks.summary(id, e.adj, p.now)
	if e.status == model.StatusActive {
		c.why.contradicts = sum.contradicts
	}
	c.why.supersededBy = sum.supersededBy
	c.dup = sum.dup
	c.score = briefScore(e, e.confidence*aging.Decay(e.evergreen, e.updated, p.now, p.halfLife), sum.degree, aging.Maturity(mk.cfg.Host.Reads(id)), p.now)
	c.why.marked = e.status == model.StatusStale
	if !e.evergreen {
		if age := p.now.Sub(e.updated); age > time.Duration(p.staleDays)*24*time.Hour {
			c.why.ageDays, c.why.staleDays = int(age.Hours()/24), p.staleDays
		}
		c.why.orphan = p.now.Sub(e.created) > aging.OrphanAge && !sum.linked
	}
	switch {
	case e.conflict && e.status == model.StatusActive:
		c.section, c.why.conflict = api.SectionConflicts, true
	case len(c.why.contradicts) > 0:
		c.section = api.SectionConflicts
	case c.why.stale():
		c.section = api.SectionStale
		c.score /= 2
	case e.kind == "task":
		c.section = api.SectionTasks
	default:
		c.section = api.SectionActive
	}
	c.key = float64(c.priority())*100 - c.score
	return c
}

// cluster marks as seen the near duplicates of memory id (the memories
// of r joined to it by auto-links valid at now, but conflicts) and
// returns how many there are besides it.
func (mk *Maker) cluster(r *nsRanking, id string, now time.Time, seen map[string]bool) int {
	seen[id] = true
	count := 0
	queue := []string{id}
	for len(queue) > 0 {
		at := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, ed := range mk.ranks.adjOf(at).edges {
			if !nearDuplicate(ed) || !ed.valid(now) {
				continue
			}
			other := ed.toID
			if other == at {
				other = ed.fromID
			}
			c, ok := r.byID[other]
			if !ok || seen[other] || c.section == api.SectionConflicts {
				continue
			}
			seen[other] = true
			count++
			queue = append(queue, other)
		}
	}
	return count
}
