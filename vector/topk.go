package vector

import (
	"cmp"
	"container/heap"
	"slices"
)

// hit is a scored slot of a collection.
type hit struct {
	slot  int
	score float32
}

// topK keeps the k best hits offered, worst on top, so that a hit costs
// one comparison unless it beats the worst kept.
type topK struct {
	k    int
	hits []hit
}

func (t *topK) Len() int           { return len(t.hits) }
func (t *topK) Less(i, j int) bool { return t.hits[i].score < t.hits[j].score }
func (t *topK) Swap(i, j int)      { t.hits[i], t.hits[j] = t.hits[j], t.hits[i] }
func (t *topK) Push(x any)         { t.hits = append(t.hits, x.(hit)) }
func (t *topK) Pop() any {
	h := t.hits[len(t.hits)-1]
	t.hits = t.hits[:len(t.hits)-1]
	return h
}

func (t *topK) offer(slot int, score float32) {
	if len(t.hits) < t.k {
		heap.Push(t, hit{slot, score})
		return
	}
	if score > t.hits[0].score {
		t.hits[0] = hit{slot, score}
		heap.Fix(t, 0)
	}
}

// merge keeps the best k of parts' hits.
func merge(k int, parts ...[]hit) []hit {
	t := &topK{k: k}
	for _, p := range parts {
		for _, h := range p {
			t.offer(h.slot, h.score)
		}
	}
	return t.hits
}

// bestFirst sorts hits by score, best first; less breaks ties, so that
// equal scores come out in one order.
func bestFirst(hits []hit, less func(a, b hit) int) {
	slices.SortFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return less(a, b)
	})
}
