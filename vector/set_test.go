package vector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"bytes"
	"github.com/memmesh/memmesh/internal/syncbuf"
)

func newSeeded(t *testing.T) (*rand.Rand, uint64) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0)), seed
}

func randomVector(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// clustered draws vectors near a few centres, as embeddings of texts on
// a few topics are: the case that is hard for a graph.
type clustered struct {
	r       *rand.Rand
	centres [][]float32
}

func newClustered(r *rand.Rand, dims, n int) *clustered {
	c := &clustered{r: r}
	for range n {
		c.centres = append(c.centres, randomVector(r, dims))
	}
	return c
}

func (c *clustered) next() []float32 {
	centre := c.centres[c.r.IntN(len(c.centres))]
	v := make([]float32, len(centre))
	for i := range v {
		v[i] = centre[i] + float32(c.r.NormFloat64())
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

// oracle is what a Set should hold, searched by brute force in float64.
type oracle struct {
	vecs map[string][]float32
	sums map[string]uint64
}

func newOracle() *oracle { return &oracle{vecs: map[string][]float32{}, sums: map[string]uint64{}} }

type scored struct {
	id    string
	score float64
}

func (o *oracle) nearest(q []float32) []scored {
	all := make([]scored, 0, len(o.vecs))
	for id, v := range o.vecs {
		all = append(all, scored{id, cosine(q, v)})
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	return all
}

// quantTol bounds the error of a cosine computed from int8 vectors.
const quantTol = 0.03

// checkHits holds got to be well-formed hits of stored vectors, best
// first, each scored within quantTol of its true cosine.
func checkHits(t *testing.T, o *oracle, q []float32, k int, got []Hit) {
	t.Helper()
	if len(got) > k {
		t.Fatalf("%d hits for k=%d", len(got), k)
	}
	seen := map[string]bool{}
	for i, h := range got {
		v, ok := o.vecs[h.ID]
		if !ok || seen[h.ID] {
			t.Fatalf("hit %d: %s is not stored, or came twice", i, h.ID)
		}
		seen[h.ID] = true
		if d := math.Abs(float64(h.Score) - cosine(q, v)); d > quantTol {
			t.Fatalf("hit %d: %s scores %v, its cosine is %v", i, h.ID, h.Score, cosine(q, v))
		}
		if i > 0 && h.Score > got[i-1].Score {
			t.Fatalf("hit %d scores %v, above hit %d's %v", i, h.Score, i-1, got[i-1].Score)
		}
	}
}

// checkExact holds got to be the k nearest, but for near-ties that
// quantisation may swap.
func checkExact(t *testing.T, o *oracle, q []float32, k int, got []Hit) {
	t.Helper()
	checkHits(t, o, q, k, got)
	want := o.nearest(q)
	if len(got) != min(k, len(want)) {
		t.Fatalf("%d hits, want %d", len(got), min(k, len(want)))
	}
	if len(want) == 0 {
		return
	}
	kth := want[len(got)-1].score
	for i, h := range got {
		if c := cosine(q, o.vecs[h.ID]); c < kth-2*quantTol {
			t.Fatalf("hit %d: %s at cosine %v, but the %d-th nearest is at %v", i, h.ID, c, len(got), kth)
		}
	}
}

// recallAt10 is the share of the true 10 nearest among the first 10 hits.
func recallAt10(o *oracle, q []float32, got []Hit) (found, total int) {
	want := o.nearest(q)[:min(10, len(o.vecs))]
	ids := map[string]bool{}
	for _, h := range got[:min(10, len(got))] {
		ids[h.ID] = true
	}
	for _, w := range want {
		if ids[w.id] {
			found++
		}
	}
	return found, len(want)
}

func testOpts(dims int) Options {
	return Options{Dims: dims, Tag: "test/model", Logger: slog.New(slog.DiscardHandler)}
}

// capture is a logger whose lines a test can read.
func capture(opts Options) (Options, *syncbuf.Buffer) {
	var buf syncbuf.Buffer
	opts.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	return opts, &buf
}

// mustOpen opens a Set and waits for a graph built at Open, so that
// the test sees one state.
func mustOpen(t *testing.T, dir string, opts Options, work int, seed uint64) *Set {
	t.Helper()
	s, err := open(dir, opts, work, seed)
	if err != nil {
		t.Fatal(err)
	}
	s.building.Wait()
	if !s.ready.Load() {
		t.Fatal("the graph is not ready after its build")
	}
	return s
}

// reopen opens the Set in dir again and holds it to hold what o holds,
// in its store and its graph.
func reopen(t *testing.T, dir string, dims int, seed uint64, o *oracle) *Set {
	t.Helper()
	s := mustOpen(t, dir, testOpts(dims), 0, seed)
	checkSame(t, s, o)
	checkGraph(t, s)
	return s
}

func closeSet(t *testing.T, s *Set) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// churn puts, replaces and deletes n vectors at random, in batches, in
// s and o alike.
func churn(t *testing.T, r *rand.Rand, s *Set, o *oracle, draw func() []float32, n int) {
	t.Helper()
	for done := 0; done < n; {
		if r.IntN(6) == 0 && len(o.vecs) > 0 {
			var ids []string
			for range 1 + r.IntN(20) {
				ids = append(ids, fmt.Sprintf("m%d", r.IntN(n*2)))
			}
			if err := s.Delete(ids); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				delete(o.vecs, id)
				delete(o.sums, id)
			}
			continue
		}
		var items []Item
		for range 1 + r.IntN(50) {
			id := fmt.Sprintf("m%d", r.IntN(n*2)) // some come twice: a replacement
			items = append(items, Item{ID: id, Sum: r.Uint64(), Vec: draw()})
		}
		if err := s.Put(items); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			o.vecs[it.ID], o.sums[it.ID] = it.Vec, it.Sum
		}
		done += len(items)
	}
}

// checkSame holds s to hold what o holds, ids and sums.
func checkSame(t *testing.T, s *Set, o *oracle) {
	t.Helper()
	if s.Len() != len(o.vecs) {
		t.Fatalf("Len %d, want %d", s.Len(), len(o.vecs))
	}
	n := 0
	s.Each(func(id string, sum uint64) bool {
		n++
		if want, ok := o.sums[id]; !ok || want != sum {
			t.Fatalf("Each: %s with sum %d, want %d (stored: %v)", id, sum, want, ok)
		}
		return true
	})
	if n != len(o.vecs) {
		t.Fatalf("Each saw %d ids, want %d", n, len(o.vecs))
	}
	for id, want := range o.sums {
		if got, ok := s.Sum(id); !ok || got != want {
			t.Fatalf("Sum(%s) = %d, %v; want %d", id, got, ok, want)
		}
	}
}

// checkGraph holds the graph to hold every live slot and no other, with
// links only to slots in it.
func checkGraph(t *testing.T, s *Set) {
	t.Helper()
	if err := checkLinks(s.g.links, s.g.entry, s.g.top); err != nil {
		t.Fatal(err)
	}
	for slot := range s.st.cap() {
		if s.g.has(uint32(slot)) != s.st.live(uint32(slot)) {
			t.Fatalf("slot %d: in the graph %v, live %v", slot, s.g.has(uint32(slot)), s.st.live(uint32(slot)))
		}
	}
	for slot := s.st.cap(); slot < len(s.g.links); slot++ {
		if s.g.links[slot] != nil {
			t.Fatalf("slot %d beyond the store is in the graph", slot)
		}
	}
}

// TestSearchFindsNearest: a small Set is scanned whole and finds the k
// nearest, on one goroutine and split across several.
func TestSearchFindsNearest(t *testing.T) {
	for _, tc := range []struct{ n, dims, k int }{{300, 64, 10}, {2000, 96, 50}, {splitWork/256 + 500, 256, 50}} {
		t.Run(fmt.Sprintf("n%d", tc.n), func(t *testing.T) {
			r, _ := newSeeded(t)
			s := mustOpen(t, t.TempDir(), testOpts(tc.dims), math.MaxInt, 1)
			defer closeSet(t, s)
			o := newOracle()
			churn(t, r, s, o, func() []float32 { return randomVector(r, tc.dims) }, tc.n)
			checkSame(t, s, o)
			for range 20 {
				q := randomVector(r, tc.dims)
				got, err := s.Search(q, tc.k)
				if err != nil {
					t.Fatal(err)
				}
				checkExact(t, o, q, tc.k, got)
			}
		})
	}
}

// TestGraphFindsNearest: through the graph, a Set finds at least 90% of
// the 10 nearest on clustered vectors, after puts, replacements and
// deletes, and again after a reopen that loads the graph file and one
// that rebuilds the graph.
func TestGraphFindsNearest(t *testing.T) {
	r, seed := newSeeded(t)
	const dims = 32
	dir := t.TempDir()
	s := mustOpen(t, dir, testOpts(dims), 0, seed)
	o := newOracle()
	data := newClustered(r, dims, 20)
	churn(t, r, s, o, data.next, 4000)
	queries := make([][]float32, 100)
	for i := range queries {
		queries[i] = data.next()
	}
	check := func(s *Set, when string) {
		t.Helper()
		checkSame(t, s, o)
		checkGraph(t, s)
		var found, total int
		for _, q := range queries {
			got, err := s.Search(q, 10)
			if err != nil {
				t.Fatal(err)
			}
			checkHits(t, o, q, 10, got)
			f, n := recallAt10(o, q, got)
			found, total = found+f, total+n
		}
		rec := float64(found) / float64(total)
		t.Logf("%s: recall@10 %.3f", when, rec)
		if rec < 0.9 {
			t.Fatalf("%s: recall@10 %.3f, want at least 0.9", when, rec)
		}
	}
	check(s, "built")
	closeSet(t, s)
	s = mustOpen(t, dir, testOpts(dims), 0, seed)
	check(s, "graph file loaded")
	closeSet(t, s)
	if err := os.Remove(filepath.Join(dir, graphName)); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, testOpts(dims), 0, seed)
	check(s, "graph rebuilt")
	closeSet(t, s)
}

// TestGraphIsDeterministic: the same changes with the same seed give the
// same graph, so that a failing seed can be replayed.
func TestGraphIsDeterministic(t *testing.T) {
	_, seed := newSeeded(t)
	build := func() *Set {
		r := rand.New(rand.NewPCG(seed, 1))
		s := mustOpen(t, t.TempDir(), testOpts(16), 0, seed)
		churn(t, r, s, newOracle(), func() []float32 { return randomVector(r, 16) }, 1500)
		return s
	}
	a, b := build(), build()
	defer closeSet(t, a)
	defer closeSet(t, b)
	if a.g.entry != b.g.entry || a.g.top != b.g.top || len(a.g.links) != len(b.g.links) {
		t.Fatalf("entries %d/%d, tops %d/%d, slots %d/%d", a.g.entry, b.g.entry, a.g.top, b.g.top, len(a.g.links), len(b.g.links))
	}
	for slot := range a.g.links {
		if !slices.EqualFunc(a.g.links[slot], b.g.links[slot], slices.Equal) {
			t.Fatalf("slot %d: links %v and %v", slot, a.g.links[slot], b.g.links[slot])
		}
	}
}

// TestGraphForgetsDeleted: once deleted, a vector is linked from nowhere,
// and never found, even by its own vector.
func TestGraphForgetsDeleted(t *testing.T) {
	r, seed := newSeeded(t)
	s := mustOpen(t, t.TempDir(), testOpts(16), 0, seed)
	defer closeSet(t, s)
	o := newOracle()
	churn(t, r, s, o, func() []float32 { return randomVector(r, 16) }, 2000)
	var gone []string
	for id := range o.vecs {
		if len(gone) < len(o.vecs)/3 {
			gone = append(gone, id)
		}
	}
	if err := s.Delete(gone); err != nil {
		t.Fatal(err)
	}
	for _, id := range gone {
		got, err := s.Search(o.vecs[id], 5)
		if err != nil {
			t.Fatal(err)
		}
		delete(o.vecs, id)
		delete(o.sums, id)
		checkHits(t, o, nil, 5, nil)
		for _, h := range got {
			if h.ID == id {
				t.Fatalf("deleted %s found", id)
			}
		}
	}
	checkSame(t, s, o)
	checkGraph(t, s)
}

// TestReopenKeepsEverything: what was put and not deleted is there after
// a Close and Open, and after an Open that follows no Close (a crash):
// ids, sums and the same answers.
func TestReopenKeepsEverything(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			r, seed := newSeeded(t)
			dir := t.TempDir()
			s := mustOpen(t, dir, testOpts(24), 0, seed)
			o := newOracle()
			draw := func() []float32 { return randomVector(r, 24) }
			churn(t, r, s, o, draw, 1500)
			closeSet(t, s) // a graph file, and then changes after it
			s = mustOpen(t, dir, testOpts(24), 0, seed)
			churn(t, r, s, o, draw, 500)
			q := draw()
			before, _ := s.Search(q, 20)
			if crash {
				s.f.Close() // the process dies: no graph file written
			} else {
				closeSet(t, s)
			}
			s = reopen(t, dir, 24, seed, o)
			defer closeSet(t, s)
			after, _ := s.Search(q, 20)
			checkHits(t, o, q, 20, after)
			if !crash && !slices.Equal(before, after) {
				t.Fatalf("before reopening: %v\nafter: %v", before, after)
			}
		})
	}
}

// TestAnotherModelStartsEmpty: vectors of another tag or dims are
// discarded, and the new model's are kept.
func TestAnotherModelStartsEmpty(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, testOpts(4), exactWork, 1)
	if err := s.Put([]Item{{ID: "a", Vec: []float32{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	closeSet(t, s)
	for _, opts := range []Options{{Dims: 4, Tag: "test/other"}, {Dims: 5, Tag: "test/other"}} {
		opts.Logger = slog.New(slog.DiscardHandler)
		s := mustOpen(t, dir, opts, exactWork, 1)
		if s.Len() != 0 || s.Tag() != opts.Tag || s.Dims() != opts.Dims {
			t.Fatalf("%+v: Len %d, tag %q, dims %d", opts, s.Len(), s.Tag(), s.Dims())
		}
		if err := s.Put([]Item{{ID: "b", Sum: 7, Vec: make([]float32, opts.Dims-1)}}); !errors.Is(err, ErrBadVector) {
			t.Fatalf("a vector of the old dims: %v", err)
		}
		v := make([]float32, opts.Dims)
		v[0] = 1
		if err := s.Put([]Item{{ID: "b", Sum: 7, Vec: v}}); err != nil {
			t.Fatal(err)
		}
		closeSet(t, s)
		s = mustOpen(t, dir, opts, exactWork, 1)
		if sum, ok := s.Sum("b"); s.Len() != 1 || !ok || sum != 7 {
			t.Fatalf("%+v reopened: Len %d, Sum(b) %d %v", opts, s.Len(), sum, ok)
		}
		closeSet(t, s)
	}
}

// puts writes three records of ten vectors each and returns the file's
// size after each.
func threeRecords(t *testing.T, dir string, o *oracle) []int64 {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	s := mustOpen(t, dir, testOpts(8), 0, 1)
	var ends []int64
	for rec := range 3 {
		var items []Item
		for i := range 10 {
			items = append(items, Item{ID: fmt.Sprintf("r%d-%d", rec, i), Sum: uint64(i), Vec: randomVector(r, 8)})
		}
		if err := s.Put(items); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			o.vecs[it.ID], o.sums[it.ID] = it.Vec, it.Sum
		}
		ends = append(ends, s.size)
	}
	closeSet(t, s)
	return ends
}

func dropRecord(o *oracle, rec int) {
	for i := range 10 {
		delete(o.vecs, fmt.Sprintf("r%d-%d", rec, i))
		delete(o.sums, fmt.Sprintf("r%d-%d", rec, i))
	}
}

// TestDamagedFileIsCut: a torn last record, or a flipped byte in one,
// loses that record and those after it, keeps those before, says so in
// one log line, and leaves a file that takes new vectors.
func TestDamagedFileIsCut(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(path string, ends []int64) error
		kept  int // records
	}{
		{"torn", func(path string, ends []int64) error { return os.Truncate(path, ends[2]-5) }, 2},
		{"torn frame", func(path string, ends []int64) error { return os.Truncate(path, ends[1]+3) }, 2},
		{"flipped value", func(path string, ends []int64) error { return flip(path, ends[0]+33) }, 1},
		{"flipped id length", func(path string, ends []int64) error { return flip(path, ends[0]+40) }, 1},
		{"flipped length", func(path string, ends []int64) error { return flip(path, ends[1]+2) }, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := newOracle()
			ends := threeRecords(t, dir, o)
			if err := tc.spoil(filepath.Join(dir, logName), ends); err != nil {
				t.Fatal(err)
			}
			for rec := tc.kept; rec < 3; rec++ {
				dropRecord(o, rec)
			}
			opts, logs := capture(testOpts(8))
			s := mustOpen(t, dir, opts, 0, 1)
			checkSame(t, s, o)
			checkGraph(t, s)
			if n := strings.Count(logs.String(), "damaged"); n != 1 {
				t.Fatalf("%d log lines on the damage, want 1:\n%s", n, logs)
			}
			if err := s.Put([]Item{{ID: "new", Sum: 1, Vec: []float32{1, 0, 0, 0, 0, 0, 0, 0}}}); err != nil {
				t.Fatal(err)
			}
			o.vecs["new"], o.sums["new"] = []float32{1, 0, 0, 0, 0, 0, 0, 0}, 1
			closeSet(t, s)
			s = mustOpen(t, dir, opts, 0, 1)
			defer closeSet(t, s)
			checkSame(t, s, o)
			if n := strings.Count(logs.String(), "damaged"); n != 1 {
				t.Fatalf("reopened after the cut: %d log lines on damage, want the first alone:\n%s", n, logs)
			}
		})
	}
}

func flip(path string, at int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[at] ^= 0x10
	return os.WriteFile(path, b, 0o600)
}

// TestDamagedHeaderOrGraphFile: a flipped byte in the header starts the
// Set empty; one in the graph file rebuilds the graph, keeping every
// vector.
func TestDamagedHeaderOrGraphFile(t *testing.T) {
	dir := t.TempDir()
	o := newOracle()
	threeRecords(t, dir, o)
	if err := flip(filepath.Join(dir, graphName), 30); err != nil {
		t.Fatal(err)
	}
	opts, logs := capture(testOpts(8))
	s := mustOpen(t, dir, opts, 0, 1)
	checkSame(t, s, o)
	if !strings.Contains(logs.String(), "graph file unreadable") {
		t.Fatalf("no log line on the graph file:\n%s", logs)
	}
	q := o.vecs["r1-3"]
	got, _ := s.Search(q, 30)
	checkExact(t, o, q, 30, got)
	closeSet(t, s)

	if err := flip(filepath.Join(dir, logName), 20); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, opts, 0, 1)
	defer closeSet(t, s)
	if s.Len() != 0 || !strings.Contains(logs.String(), "vectors file unreadable") {
		t.Fatalf("Len %d after a damaged header; logs:\n%s", s.Len(), logs)
	}
}

// TestGraphFileThatDoesNotFit: a graph file whose CRC holds but whose
// links cannot be (a link to a slot past the end) is refused whole, and
// the graph is built anew from the vectors.
func TestGraphFileThatDoesNotFit(t *testing.T) {
	dir := t.TempDir()
	o := newOracle()
	threeRecords(t, dir, o)
	path := filepath.Join(dir, graphName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head := len(graphMagic) + 32
	if b[head] == 0 || b[head+1] == 0 {
		t.Fatalf("slot 0 has %d layers, %d links on layer 0: want some", b[head], b[head+1])
	}
	binary.LittleEndian.PutUint32(b[head+2:], 1<<30) // slot 0's first link
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, logs := capture(testOpts(8))
	s := mustOpen(t, dir, opts, 0, 1)
	defer closeSet(t, s)
	checkSame(t, s, o)
	checkGraph(t, s)
	if !strings.Contains(logs.String(), "does not fit") {
		t.Fatalf("no log line on the graph file:\n%s", logs)
	}
	q := o.vecs["r2-7"]
	got, _ := s.Search(q, 30)
	checkExact(t, o, q, 30, got)
}

// TestGraphBuildInBackground: an Open that must build the graph returns
// at once; until the graph is ready, searches scan and writes go on; a
// Close stops the build, and the next Open builds again.
func TestGraphBuildInBackground(t *testing.T) {
	r, seed := newSeeded(t)
	dir := t.TempDir()
	s := mustOpen(t, dir, testOpts(16), 0, seed)
	o := newOracle()
	draw := func() []float32 { return randomVector(r, 16) }
	churn(t, r, s, o, draw, 3000)
	closeSet(t, s)
	for _, stop := range []bool{true, false} {
		if err := os.Remove(filepath.Join(dir, graphName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		s, err := open(dir, testOpts(16), 0, seed)
		if err != nil {
			t.Fatal(err)
		}
		if stop {
			closeSet(t, s) // whether the build has begun or not
			continue
		}
		q := draw()
		got, err := s.Search(q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if s.ready.Load() {
			checkHits(t, o, q, 10, got)
		} else { // not ready after, so not during: a scan
			checkExact(t, o, q, 10, got)
		}
		churn(t, r, s, o, draw, 300)
		s.building.Wait()
		checkSame(t, s, o)
		checkGraph(t, s)
		closeSet(t, s)
	}
	s = reopen(t, dir, 16, seed, o)
	closeSet(t, s)
}

// TestStaleGraphFileIsNotTaken: a graph file that indexed records since
// cut off is not taken for new records that happen to end at the same
// offset: the chain of record CRCs tells them apart.
func TestStaleGraphFileIsNotTaken(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	batch := func(prefix string) []Item {
		var items []Item
		for i := range 10 {
			items = append(items, Item{ID: fmt.Sprintf("%s%d", prefix, i), Vec: randomVector(r, 8)})
		}
		return items
	}
	s := mustOpen(t, dir, testOpts(8), 0, 1)
	if err := s.Put(batch("a")); err != nil {
		t.Fatal(err)
	}
	cut := s.size
	if err := s.Put(batch("b")); err != nil {
		t.Fatal(err)
	}
	closeSet(t, s) // a graph file of a0-a9 and b0-b9
	graphPath := filepath.Join(dir, graphName)
	stale, err := os.ReadFile(graphPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, logName), cut); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, testOpts(8), 0, 1)
	cs := batch("c") // the same size as b's record
	if err := s.Put(cs); err != nil {
		t.Fatal(err)
	}
	s.f.Close() // a crash, and the old graph file back
	if err := os.WriteFile(graphPath, stale, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, logs := capture(testOpts(8))
	s, err = open(dir, opts, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSet(t, s)
	s.building.Wait()
	if !strings.Contains(logs.String(), "building the graph") {
		t.Fatalf("the stale graph file was taken:\n%s", logs)
	}
	if s.Len() != 20 {
		t.Fatalf("Len %d, want 20", s.Len())
	}
	checkGraph(t, s)
	for _, it := range cs {
		if _, ok := s.Sum(it.ID); !ok {
			t.Fatalf("%s lost", it.ID)
		}
	}
}

// TestCompaction: when replaced and deleted vectors outweigh the live
// ones, the file is rewritten with the live ones alone, the slots (freed
// ones among them) renumbered to its order, and the Set reopens to the
// same vectors and answers.
func TestCompaction(t *testing.T) {
	r, seed := newSeeded(t)
	dir := t.TempDir()
	s := mustOpen(t, dir, testOpts(256), 0, seed)
	o := newOracle()
	draw := func() []float32 { return randomVector(r, 256) }
	for range 30 { // 30 × 300 vectors of 256 values: 2.4 MB written
		var items []Item
		for range 300 {
			items = append(items, Item{ID: fmt.Sprintf("m%d", r.IntN(600)), Sum: r.Uint64(), Vec: draw()})
		}
		if err := s.Put(items); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			o.vecs[it.ID], o.sums[it.ID] = it.Vec, it.Sum
		}
		var ids []string
		for range 150 {
			ids = append(ids, fmt.Sprintf("m%d", r.IntN(600)))
		}
		if err := s.Delete(ids); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			delete(o.vecs, id)
			delete(o.sums, id)
		}
		checkGraph(t, s)
	}
	info, err := os.Stat(filepath.Join(dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > compactMin+2*s.liveBytes {
		t.Fatalf("the file is %d bytes, live vectors take %d: no compaction", info.Size(), s.liveBytes)
	}
	checkSame(t, s, o)
	q := draw()
	before, _ := s.Search(q, 10)
	checkExact(t, o, q, 10, before) // a few hundred vectors: the graph finds all
	closeSet(t, s)
	s = reopen(t, dir, 256, seed, o)
	defer closeSet(t, s)
	after, _ := s.Search(q, 10)
	if !slices.Equal(before, after) {
		t.Fatalf("before reopening: %v\nafter: %v", before, after)
	}
}

// TestConcurrentUse: puts, deletes and searches at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	_, seed := newSeeded(t)
	s := mustOpen(t, t.TempDir(), testOpts(16), 500, seed)
	defer closeSet(t, s)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range 60 {
				var items []Item
				for j := range 10 {
					items = append(items, Item{ID: fmt.Sprintf("w%d-%d", w, (i*10+j)%300), Vec: randomVector(r, 16)})
				}
				if err := s.Put(items); err != nil {
					t.Error(err)
					return
				}
				if i%5 == 0 {
					if err := s.Delete([]string{items[0].ID}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	for w := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(10+w)))
			for range 300 {
				hits, err := s.Search(randomVector(r, 16), 10)
				if err != nil {
					t.Error(err)
					return
				}
				for i := 1; i < len(hits); i++ {
					if hits[i].Score > hits[i-1].Score {
						t.Errorf("hits out of order: %v", hits)
						return
					}
				}
				s.Each(func(string, uint64) bool { return true })
			}
		})
	}
	wg.Wait()
	if n := s.Len(); n == 0 || n > 900 {
		t.Fatalf("Len %d", n)
	}
}

// TestBadInputChangesNothing: every out-of-bounds call is refused with
// its error, and the Set answers as before, in memory and reopened.
func TestBadInputChangesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, opts := range []Options{{Dims: 0}, {Dims: -1}, {Dims: MaxDims + 1}} {
		if _, err := Open(dir, opts); !errors.Is(err, ErrBadDims) {
			t.Errorf("Open(%+v): %v, want ErrBadDims", opts, err)
		}
	}
	if _, err := Open(dir, Options{Dims: 3, Tag: strings.Repeat("t", MaxTagLen+1)}); !errors.Is(err, ErrBadTag) {
		t.Errorf("Open with a long tag: %v, want ErrBadTag", err)
	}
	s := mustOpen(t, dir, testOpts(3), exactWork, 1)
	if err := s.Put([]Item{{ID: "a", Sum: 1, Vec: []float32{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	good := Item{ID: "b", Vec: []float32{3, 2, 1}}
	puts := []struct {
		items []Item
		want  error
	}{
		{[]Item{good, {ID: "a", Vec: []float32{1, 2}}}, ErrBadVector},
		{[]Item{good, {ID: "a", Vec: []float32{1, 2, 3, 4}}}, ErrBadVector},
		{[]Item{good, {ID: "a"}}, ErrBadVector},
		{[]Item{good, {ID: "a", Vec: []float32{nan, 0, 0}}}, ErrBadVector},
		{[]Item{good, {ID: "a", Vec: []float32{0, -inf, 0}}}, ErrBadVector},
		{[]Item{good, {ID: "a", Vec: []float32{0, 0, 0}}}, ErrBadVector},
		{[]Item{good, {ID: "", Vec: []float32{1, 0, 0}}}, ErrBadID},
		{[]Item{good, {ID: strings.Repeat("x", MaxIDLen+1), Vec: []float32{1, 0, 0}}}, ErrBadID},
		{make([]Item, MaxBatch+1), ErrTooMany},
	}
	for _, p := range puts {
		if err := s.Put(p.items); !errors.Is(err, p.want) {
			t.Errorf("Put(%.60v): %v, want %v", p.items, err, p.want)
		}
	}
	for _, ids := range [][]string{{"a", ""}, {"a", strings.Repeat("x", MaxIDLen+1)}, make([]string, MaxBatch+1)} {
		if err := s.Delete(ids); err == nil {
			t.Errorf("Delete(%.40v) accepted", ids)
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
	for _, q := range searches {
		if got, err := s.Search(q.q, q.k); !errors.Is(err, q.want) || got != nil {
			t.Errorf("Search(%v, %d): %v, %v, want %v", q.q, q.k, got, err, q.want)
		}
	}
	check := func(s *Set) {
		t.Helper()
		got, err := s.Search([]float32{1, 2, 3}, MaxK)
		if err != nil || s.Len() != 1 || len(got) != 1 || got[0].ID != "a" || math.Abs(float64(got[0].Score)-1) > 1e-3 {
			t.Fatalf("after refused calls: Len %d, %v, %v; want a at cosine 1", s.Len(), got, err)
		}
	}
	check(s)
	closeSet(t, s)
	s = mustOpen(t, dir, testOpts(3), exactWork, 1)
	check(s)
	closeSet(t, s)
	if _, err := s.Search([]float32{1, 2, 3}, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Search after Close: %v", err)
	}
	if err := s.Put([]Item{good}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
}

// TestTiesComeInOrderOfID: equal scores come in one order, by id.
func TestTiesComeInOrderOfID(t *testing.T) {
	s := mustOpen(t, t.TempDir(), testOpts(2), exactWork, 1)
	defer closeSet(t, s)
	var items []Item
	for _, id := range []string{"c", "a", "d", "b"} {
		items = append(items, Item{ID: id, Vec: []float32{1, 1}})
	}
	if err := s.Put(items); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Search([]float32{1, 0}, 4)
	var ids []string
	for _, h := range got {
		ids = append(ids, h.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d"}) {
		t.Fatalf("ids %v, want a b c d", ids)
	}
}

// TestOpenRemovesTemporaryFiles: files that a write cut short by a crash
// left behind are removed, and only those.
func TestOpenRemovesTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	names := []string{logName + ".tmp123", graphName + ".tmp9", "other.tmp1"}
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	closeSet(t, mustOpen(t, dir, testOpts(4), exactWork, 1))
	for i, name := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != (i < 2) {
			t.Errorf("%s: removed %v", name, gone)
		}
	}
}

// TestEraseLeavesNoTrace: after Erase, no file of the Set holds the id
// of an erased vector, and the others are all there.
func TestEraseLeavesNoTrace(t *testing.T) {
	r, seed := newSeeded(t)
	dir := t.TempDir()
	s := mustOpen(t, dir, testOpts(16), 0, seed)
	defer closeSet(t, s)
	o := newOracle()
	var items []Item
	for i := range 50 {
		items = append(items, Item{ID: fmt.Sprintf("keep-%d", i), Sum: uint64(i), Vec: randomVector(r, 16)})
	}
	items = append(items, Item{ID: "erased-memory-id", Sum: 7, Vec: randomVector(r, 16)})
	if err := s.Put(items); err != nil {
		t.Fatal(err)
	}
	for _, it := range items[:50] {
		o.vecs[it.ID], o.sums[it.ID] = it.Vec, it.Sum
	}
	if err := s.Erase([]string{"erased-memory-id"}); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("erased-memory-id")) {
			t.Errorf("%s still holds the erased vector's id", f.Name())
		}
	}
	checkSame(t, s, o)
}
