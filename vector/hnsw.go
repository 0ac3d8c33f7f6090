package vector

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// graph is a hierarchical navigable small world index (Malkov and
// Yashunin, 2016) over a store's slots: each slot links to its nearest
// neighbours on layer 0 and, with falling odds, on layers above, so a
// search descends greedily from a sparse top layer and then explores
// layer 0 with ef candidates. Deletion unlinks a slot and reconnects its
// neighbours, so the index never needs a full rebuild.
type graph struct {
	st *store
	m  int // links per slot above layer 0; 2m on layer 0
	// efBuild is the candidates searched when a slot is linked in,
	// efSearch the least searched for a query.
	efBuild, efSearch int
	rng               *rand.Rand

	links [][][]uint32 // links[slot][layer]; nil for a slot not in the graph
	entry uint32
	top   int // the entry's layer; -1 when the graph is empty

	visited sync.Pool // of *visitSet
}

// Index parameters, chosen by the measurement in the package comment.
const (
	defaultM        = 16
	defaultEfBuild  = 100
	defaultEfSearch = 160
	maxLayer        = 16 // at m=16 a slot reaches layer 16 with odds 16^-16
)

func newGraph(st *store, seed uint64) *graph {
	return &graph{st: st, m: defaultM, efBuild: defaultEfBuild, efSearch: defaultEfSearch,
		rng: rand.New(rand.NewPCG(seed, 0x5eed)), top: -1}
}

func (g *graph) maxLinks(layer int) int {
	if layer == 0 {
		return 2 * g.m
	}
	return g.m
}

// layerFor draws a new slot's top layer: layer l with odds m^-l.
func (g *graph) layerFor() int {
	l := int(-math.Log(1-g.rng.Float64()) / math.Log(float64(g.m)))
	return min(l, maxLayer)
}

// grow makes room for slots below n.
func (g *graph) grow(n int) {
	if n > len(g.links) {
		g.links = append(g.links, make([][][]uint32, n-len(g.links))...)
	}
}

// plan is where a slot goes: its neighbours on each of its layers.
type plan struct {
	slot uint32
	nbrs [][]cand // by layer; empty above the graph's top
}

// plan finds slot's neighbours. It only reads the graph, so searches
// may run beside it; the writer must commit it before the next change.
func (g *graph) plan(slot uint32) plan {
	p := plan{slot: slot, nbrs: make([][]cand, g.layerFor()+1)}
	if g.top < 0 {
		return p
	}
	score := func(o uint32) float32 { return g.st.sim(slot, o) }
	ep := []cand{{g.entry, score(g.entry)}}
	for l := g.top; l >= len(p.nbrs); l-- {
		ep = g.searchLayer(score, ep, 1, l)
	}
	for l := min(len(p.nbrs)-1, g.top); l >= 0; l-- {
		found := g.searchLayer(score, ep, g.efBuild, l)
		p.nbrs[l] = g.selectNeighbours(found, g.m)
		ep = found
	}
	return p
}

// commit links a planned slot in, both ways.
func (g *graph) commit(p plan) {
	g.grow(int(p.slot) + 1)
	g.links[p.slot] = make([][]uint32, len(p.nbrs))
	for l, nbrs := range p.nbrs {
		g.links[p.slot][l] = candSlots(nbrs, nil)
		for _, n := range nbrs {
			g.link(n.slot, p.slot, l)
		}
	}
	if layer := len(p.nbrs) - 1; layer > g.top {
		g.entry, g.top = p.slot, layer
	}
}

// link adds to from's links on layer l, shrinking them when full to the
// neighbours the selection heuristic keeps.
func (g *graph) link(from, to uint32, l int) {
	ls := append(g.links[from][l], to)
	if len(ls) > g.maxLinks(l) {
		cs := make([]cand, len(ls))
		for i, o := range ls {
			cs[i] = cand{o, g.st.sim(from, o)}
		}
		ls = candSlots(g.selectNeighbours(cs, g.maxLinks(l)), ls[:0])
	}
	g.links[from][l] = ls
}

// selectNeighbours keeps at most n of cs, nearest first, skipping one
// nearer to a kept neighbour than to the base: links then spread in
// every direction instead of crowding into the nearest cluster.
func (g *graph) selectNeighbours(cs []cand, n int) []cand {
	slices.SortFunc(cs, byScoreDesc)
	kept := make([]cand, 0, n)
	for _, c := range cs {
		if len(kept) == n {
			break
		}
		ok := true
		for _, k := range kept {
			if g.st.sim(c.slot, k.slot) > c.score {
				ok = false
				break
			}
		}
		if ok {
			kept = append(kept, c)
		}
	}
	return kept
}

// removal is the graph without some slots: the new links of each slot
// that linked to one of them.
type removal struct {
	gone    []uint32
	relinks []relinked
}

type relinked struct {
	slot  uint32
	layer int
	links []uint32
}

// planRemoval finds, in one pass over the graph, every link to the gone
// slots (all in the graph), and replaces each by the best of the
// linking slot's other links and the gone slots' links. It only reads
// the graph, as plan does.
func (g *graph) planRemoval(gone []uint32) removal {
	isGone := make([]bool, len(g.links))
	for _, s := range gone {
		isGone[s] = true
	}
	r := removal{gone: gone}
	for slot, layers := range g.links {
		if layers == nil || isGone[slot] {
			continue
		}
		for l, ls := range layers {
			if slices.ContainsFunc(ls, func(o uint32) bool { return isGone[o] }) {
				r.relinks = append(r.relinks, relinked{uint32(slot), l, g.relink(uint32(slot), l, isGone)})
			}
		}
	}
	return r
}

// relink is slot's new links on layer l, without the gone slots.
func (g *graph) relink(slot uint32, l int, isGone []bool) []uint32 {
	seen := map[uint32]bool{slot: true}
	var cs []cand
	add := func(o uint32) {
		if !seen[o] && !isGone[o] {
			seen[o] = true
			cs = append(cs, cand{o, g.st.sim(slot, o)})
		}
	}
	for _, o := range g.links[slot][l] {
		if !isGone[o] {
			add(o)
			continue
		}
		for _, oo := range g.links[o][l] {
			add(oo)
		}
	}
	return candSlots(g.selectNeighbours(cs, g.maxLinks(l)), nil)
}

// commitRemoval takes the planned slots out of the graph.
func (g *graph) commitRemoval(r removal) {
	for _, rl := range r.relinks {
		g.links[rl.slot][rl.layer] = rl.links
	}
	entryGone := false
	for _, s := range r.gone {
		g.links[s] = nil
		entryGone = entryGone || s == g.entry
	}
	if entryGone {
		g.newEntry()
	}
}

// newEntry makes a slot of the highest layer the entry.
func (g *graph) newEntry() {
	g.top = -1
	for slot, layers := range g.links {
		if len(layers)-1 > g.top {
			g.entry, g.top = uint32(slot), len(layers)-1
		}
	}
}

// search returns up to k slots nearest q, best first.
func (g *graph) search(q *query, k int) []cand {
	if g.top < 0 {
		return nil
	}
	score := func(o uint32) float32 { return g.st.score(q, o) }
	ep := []cand{{g.entry, score(g.entry)}}
	for l := g.top; l > 0; l-- {
		ep = g.searchLayer(score, ep, 1, l)
	}
	found := g.searchLayer(score, ep, max(k, g.efSearch), 0)
	slices.SortFunc(found, byScoreDesc)
	return found[:min(k, len(found))]
}

// searchLayer is the best-first search of one layer from the entries
// ep: it keeps the ef best slots seen and stops when the best candidate
// left is worse than the worst of them.
func (g *graph) searchLayer(score func(uint32) float32, ep []cand, ef, l int) []cand {
	vs := g.visits()
	defer g.visited.Put(vs)
	var todo candHeap // best on top
	best := candHeap{worstOnTop: true}
	for _, e := range ep {
		vs.visit(e.slot)
		todo.push(e)
		best.push(e)
	}
	for best.len() > ef {
		best.pop()
	}
	for todo.len() > 0 {
		c := todo.pop()
		if best.len() >= ef && c.score < best.peek().score {
			break
		}
		for _, o := range g.links[c.slot][l] {
			if !vs.visit(o) {
				continue
			}
			s := score(o)
			if best.len() < ef || s > best.peek().score {
				todo.push(cand{o, s})
				best.push(cand{o, s})
				if best.len() > ef {
					best.pop()
				}
			}
		}
	}
	return best.items
}

func (g *graph) visits() *visitSet {
	vs, _ := g.visited.Get().(*visitSet)
	if vs == nil {
		vs = &visitSet{}
	}
	vs.reset(len(g.links))
	return vs
}

// visitSet marks slots seen by one search: a slot is seen when its mark
// is the search's number, so a new search costs no clearing.
type visitSet struct {
	mark []uint32
	n    uint32
}

func (v *visitSet) reset(slots int) {
	if len(v.mark) < slots {
		v.mark = make([]uint32, slots+slots/4)
		v.n = 0
	}
	v.n++
	if v.n == 0 { // wrapped: old marks could match
		clear(v.mark)
		v.n = 1
	}
}

// visit marks slot and reports whether it was not yet seen.
func (v *visitSet) visit(slot uint32) bool {
	if v.mark[slot] == v.n {
		return false
	}
	v.mark[slot] = v.n
	return true
}

// cand is a slot and its cosine to what a search looks for.
type cand struct {
	slot  uint32
	score float32
}

func byScoreDesc(a, b cand) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	}
	return int(a.slot) - int(b.slot)
}

func candSlots(cs []cand, into []uint32) []uint32 {
	for _, c := range cs {
		into = append(into, c.slot)
	}
	return into
}

// candHeap is a binary heap of candidates, best on top, or worst on top
// when worstOnTop.
type candHeap struct {
	items      []cand
	worstOnTop bool
}

func (h *candHeap) len() int   { return len(h.items) }
func (h *candHeap) peek() cand { return h.items[0] }
func (h *candHeap) above(i, j int) bool {
	if h.worstOnTop {
		return h.items[i].score < h.items[j].score
	}
	return h.items[i].score > h.items[j].score
}

func (h *candHeap) push(c cand) {
	h.items = append(h.items, c)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.above(i, p) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *candHeap) pop() cand {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && h.above(c+1, c) {
			c++
		}
		if !h.above(c, i) {
			break
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
	return top
}

func (g *graph) has(slot uint32) bool { return int(slot) < len(g.links) && g.links[slot] != nil }
