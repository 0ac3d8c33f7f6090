package vector

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func newSeeded(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

func randomVector(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// checkTopK holds got to be the k nearest of stored by cosine, computed
// apart in float64: float32 rounding may only swap near-equal scores.
func checkTopK(t *testing.T, stored map[string][]float32, q []float32, k int, got []Hit) {
	t.Helper()
	const tol = 1e-4
	type ref struct {
		id    string
		score float64
	}
	var all []ref
	for id, v := range stored {
		all = append(all, ref{id, cosine(q, v)})
	}
	slices.SortFunc(all, func(a, b ref) int { return strings.Compare(a.id, b.id) })
	slices.SortStableFunc(all, func(a, b ref) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	want := all[:min(k, len(all))]
	if len(got) != len(want) {
		t.Fatalf("%d hits, want %d", len(got), len(want))
	}
	seen := map[string]bool{}
	for i, h := range got {
		if seen[h.ID] {
			t.Fatalf("hit %d: %s twice", i, h.ID)
		}
		seen[h.ID] = true
		v, ok := stored[h.ID]
		if !ok {
			t.Fatalf("hit %d: %s is not stored", i, h.ID)
		}
		if d := math.Abs(float64(h.Score) - cosine(q, v)); d > tol {
			t.Fatalf("hit %d: %s scores %v, its cosine is %v", i, h.ID, h.Score, cosine(q, v))
		}
		if d := math.Abs(float64(h.Score) - want[i].score); d > tol {
			t.Fatalf("hit %d: %s scores %v, the %d-th best cosine is %v (%s)", i, h.ID, h.Score, i+1, want[i].score, want[i].id)
		}
		if i > 0 && h.Score > got[i-1].Score {
			t.Fatalf("hit %d scores %v, above hit %d's %v", i, h.Score, i-1, got[i-1].Score)
		}
	}
}

// TestSearchFindsNearest adds, replaces and removes vectors at random and
// checks every search against a brute-force reference, on collections
// scanned on one goroutine and split across several.
func TestSearchFindsNearest(t *testing.T) {
	for _, tc := range []struct{ n, dims, k int }{{500, 64, 10}, {3000, 96, 50}, {splitAt + 3000, 16, 50}} {
		t.Run(fmt.Sprintf("n%d", tc.n), func(t *testing.T) {
			r := newSeeded(t)
			e, err := NewExact(tc.dims)
			if err != nil {
				t.Fatal(err)
			}
			stored := map[string][]float32{}
			for i := range tc.n {
				id := fmt.Sprintf("m%d", r.IntN(tc.n*2)) // some ids come twice: a replacement
				if i%7 == 0 && len(stored) > 0 {
					id = fmt.Sprintf("m%d", r.IntN(tc.n*2))
					_, had := stored[id]
					if e.Remove(id) != had {
						t.Fatalf("Remove(%s) reported %v, stored: %v", id, !had, had)
					}
					delete(stored, id)
					continue
				}
				v := randomVector(r, tc.dims)
				if err := e.Add(id, v); err != nil {
					t.Fatal(err)
				}
				stored[id] = v
			}
			if e.Len() != len(stored) {
				t.Fatalf("Len %d, want %d", e.Len(), len(stored))
			}
			for range 20 {
				q := randomVector(r, tc.dims)
				got, err := e.Search(q, tc.k)
				if err != nil {
					t.Fatal(err)
				}
				checkTopK(t, stored, q, tc.k, got)
			}
		})
	}
}

func TestRemoveForgetsTheVector(t *testing.T) {
	r := newSeeded(t)
	e, _ := NewExact(8)
	stored := map[string][]float32{}
	for i := range 5 {
		id := fmt.Sprintf("m%d", i)
		stored[id] = randomVector(r, 8)
		if err := e.Add(id, stored[id]); err != nil {
			t.Fatal(err)
		}
	}
	// The middle slot, then the last one, then one that is not there.
	for _, id := range []string{"m2", "m4"} {
		if !e.Remove(id) {
			t.Fatalf("Remove(%s) found nothing", id)
		}
		delete(stored, id)
		got, _ := e.Search(stored["m0"], 5)
		checkTopK(t, stored, stored["m0"], 5, got)
		// Its own vector finds a removed id no more.
		q := randomVector(r, 8)
		got, _ = e.Search(q, 5)
		for _, h := range got {
			if h.ID == id {
				t.Fatalf("removed %s found", id)
			}
		}
	}
	if e.Remove("m2") {
		t.Fatal("a second Remove of m2 found it")
	}
	if e.Len() != 3 {
		t.Fatalf("Len %d, want 3", e.Len())
	}
	// An id removed can be added again.
	stored["m2"] = randomVector(r, 8)
	if err := e.Add("m2", stored["m2"]); err != nil {
		t.Fatal(err)
	}
	got, _ := e.Search(stored["m2"], 1)
	if len(got) != 1 || got[0].ID != "m2" || math.Abs(float64(got[0].Score)-1) > 1e-5 {
		t.Fatalf("search by m2's vector: %v", got)
	}
}

func TestAddReplaces(t *testing.T) {
	e, _ := NewExact(2)
	if err := e.Add("a", []float32{1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := e.Add("a", []float32{0, 3}); err != nil {
		t.Fatal(err)
	}
	got, _ := e.Search([]float32{0, 1}, 10)
	if e.Len() != 1 || len(got) != 1 || got[0].ID != "a" || math.Abs(float64(got[0].Score)-1) > 1e-6 {
		t.Fatalf("Len %d, hits %v: want a alone, at cosine 1 (stored normalised)", e.Len(), got)
	}
}

func TestTiesComeInOrderOfID(t *testing.T) {
	e, _ := NewExact(2)
	for _, id := range []string{"c", "a", "d", "b"} {
		if err := e.Add(id, []float32{1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := e.Search([]float32{1, 0}, 4)
	var ids []string
	for _, h := range got {
		ids = append(ids, h.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d"}) {
		t.Fatalf("ids %v, want a b c d", ids)
	}
}

// TestBadInputChangesNothing: every out-of-bounds call is refused with
// its error, and the collection answers as before.
func TestBadInputChangesNothing(t *testing.T) {
	for _, dims := range []int{0, -1, MaxDims + 1} {
		if _, err := NewExact(dims); !errors.Is(err, ErrBadDims) {
			t.Errorf("NewExact(%d): %v, want ErrBadDims", dims, err)
		}
	}
	e, _ := NewExact(3)
	if err := e.Add("a", []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	adds := []struct {
		id   string
		v    []float32
		want error
	}{
		{"a", []float32{1, 2}, ErrBadVector},
		{"a", []float32{1, 2, 3, 4}, ErrBadVector},
		{"a", nil, ErrBadVector},
		{"a", []float32{nan, 0, 0}, ErrBadVector},
		{"a", []float32{0, -inf, 0}, ErrBadVector},
		{"a", []float32{0, 0, 0}, ErrBadVector},
		{"", []float32{1, 0, 0}, ErrBadID},
		{strings.Repeat("x", MaxIDLen+1), []float32{1, 0, 0}, ErrBadID},
	}
	for _, a := range adds {
		if err := e.Add(a.id, a.v); !errors.Is(err, a.want) {
			t.Errorf("Add(%.10q, %v): %v, want %v", a.id, a.v, err, a.want)
		}
	}
	searches := []struct {
		q    []float32
		k    int
		want error
	}{
		{[]float32{1, 2, 3}, 0, ErrBadK},
		{[]float32{1, 2, 3}, -5, ErrBadK},
		{[]float32{1, 2, 3}, MaxK + 1, ErrBadK},
		{[]float32{1, 2}, 1, ErrBadVector},
		{[]float32{nan, 2, 3}, 1, ErrBadVector},
		{[]float32{0, 0, 0}, 1, ErrBadVector},
	}
	for _, s := range searches {
		if got, err := e.Search(s.q, s.k); !errors.Is(err, s.want) || got != nil {
			t.Errorf("Search(%v, %d): %v, %v, want %v", s.q, s.k, got, err, s.want)
		}
	}
	got, err := e.Search([]float32{1, 2, 3}, MaxK)
	if err != nil || e.Len() != 1 || len(got) != 1 || got[0].ID != "a" || math.Abs(float64(got[0].Score)-1) > 1e-6 {
		t.Fatalf("after refused calls: Len %d, %v, %v; want a at cosine 1", e.Len(), got, err)
	}
}

// TestScanSeesEverySlot: a collection large enough to be scanned in parts
// is scanned whole, every slot once, whatever the parts' bounds.
func TestScanSeesEverySlot(t *testing.T) {
	r := newSeeded(t)
	e, _ := NewExact(4)
	n := splitAt + 1001
	for i := range n {
		if err := e.Add(fmt.Sprintf("m%d", i), randomVector(r, 4)); err != nil {
			t.Fatal(err)
		}
	}
	q, _ := e.unit(randomVector(r, 4))
	seen := make([]bool, n)
	for _, h := range e.scan(q, n) {
		if seen[h.slot] {
			t.Fatalf("slot %d scanned twice", h.slot)
		}
		seen[h.slot] = true
	}
	if i := slices.Index(seen, false); i >= 0 {
		t.Fatalf("slot %d of %d never scanned", i, n)
	}
}
