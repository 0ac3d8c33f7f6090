package vector

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	mrand "math/rand"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/hnsw"
	"github.com/viterin/vek/vek32"
)

// The measurement behind the package comment. It runs only when asked:
//
//	go test ./vector -run TestMeasure -count=1 -timeout 60m -vector.measure
var (
	measure     = flag.Bool("vector.measure", false, "run the side-by-side measurement of exact and approximate search")
	measureNs   = flag.String("vector.n", "10000,100000", "collection sizes to measure")
	measureDims = flag.String("vector.dims", "256,768", "dimensions to measure")
	measureSeed = flag.Uint64("vector.seed", 0, "seed of the synthetic data; 0 picks one from the clock")
	hnswMaxN    = flag.Int("vector.hnswmax", 100000, "largest size at which the approximate index is built")
)

const (
	measureK       = 50
	measureQueries = 200
	clusters       = 200
)

func dotLoop(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func dotInt8(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// quantise maps v to int8 with one scale for the vector (its largest
// magnitude maps to 127), so that dot(a,b) ≈ sa*sb*Σ qa·qb.
func quantise(v []float32, q []int8) float32 {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	if m == 0 {
		return 0
	}
	s := m / 127
	for i, x := range v {
		q[i] = int8(math.Round(float64(x / s)))
	}
	return s
}

type dataset struct {
	dims    int
	flat    []float32 // n vectors of dims values
	qflat   []int8
	scales  []float32
	queries [][]float32
}

func (d *dataset) n() int              { return len(d.scales) }
func (d *dataset) vec(i int) []float32 { return d.flat[i*d.dims : (i+1)*d.dims] }
func (d *dataset) qvec(i int) []int8   { return d.qflat[i*d.dims : (i+1)*d.dims] }

func normalise(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

// noisy is centre plus gaussian noise of the given spread, normalised.
func noisy(r *rand.Rand, centre []float32, spread float64, out []float32) {
	for i := range out {
		c := float32(0)
		if centre != nil {
			c = centre[i]
		}
		out[i] = c + float32(r.NormFloat64()*spread)
	}
	normalise(out)
}

// makeDataset draws clustered unit vectors, as texts on a few hundred
// topics give, and queries near stored vectors.
func makeDataset(seed uint64, n, dims int) *dataset {
	r := rand.New(rand.NewPCG(seed, uint64(n*dims)))
	centres := make([][]float32, clusters)
	for i := range centres {
		centres[i] = make([]float32, dims)
		noisy(r, nil, 1, centres[i])
	}
	// A spread per dimension of 1.2/sqrt(dims) puts a vector at cosine
	// about 0.55 to its centre: clusters overlap, as topics do.
	spread := 1.2 / math.Sqrt(float64(dims))
	d := &dataset{dims: dims, flat: make([]float32, n*dims), qflat: make([]int8, n*dims), scales: make([]float32, n)}
	for i := range n {
		noisy(r, centres[r.IntN(clusters)], spread, d.vec(i))
		d.scales[i] = quantise(d.vec(i), d.qvec(i))
	}
	for range measureQueries {
		// A query is closer to one stored vector than stored vectors
		// are to their centre: a question about a stored memory.
		q := make([]float32, dims)
		noisy(r, d.vec(r.IntN(n)), spread/2, q)
		d.queries = append(d.queries, q)
	}
	return d
}

type searcher func(q []float32) []hit

func (d *dataset) exactFloat(dot func(a, b []float32) float32, lo, hi int, q []float32) []hit {
	t := &topK{k: measureK}
	for i := lo; i < hi; i++ {
		t.offer(i, dot(q, d.vec(i)))
	}
	return t.hits
}

func (d *dataset) exactInt8(lo, hi int, q []float32) []hit {
	qq := make([]int8, d.dims)
	qs := quantise(q, qq)
	t := &topK{k: measureK}
	for i := lo; i < hi; i++ {
		t.offer(i, qs*d.scales[i]*float32(dotInt8(qq, d.qvec(i))))
	}
	return t.hits
}

// split runs part over halves of the collection on two goroutines, as
// the two cores of the budget machine allow, and merges the best k.
func split(n int, part func(lo, hi int) []hit) []hit {
	var a, b []hit
	var wg sync.WaitGroup
	wg.Go(func() { a = part(0, n/2) })
	b = part(n/2, n)
	wg.Wait()
	return merge(measureK, a, b)
}

type row struct {
	method             string
	p50, p99           time.Duration
	recall10, recall50 float64
	build              time.Duration
	bytesPerVec        float64
	note               string
}

func timeQueries(d *dataset, s searcher) (p50, p99 time.Duration, results [][]hit) {
	durs := make([]time.Duration, len(d.queries))
	for i, q := range d.queries {
		start := time.Now()
		hits := s(q)
		durs[i] = time.Since(start)
		results = append(results, sortedHits(hits))
	}
	slices.Sort(durs)
	return durs[len(durs)/2], durs[len(durs)*99/100], results
}

func sortedHits(h []hit) []hit {
	bestFirst(h, func(a, b hit) int { return a.slot - b.slot })
	return h
}

// recall is the share of the true best k found among the best k returned.
func recall(truth, got [][]hit, k int) float64 {
	var found, total int
	for i := range truth {
		want := map[int]bool{}
		for _, h := range truth[i][:min(k, len(truth[i]))] {
			want[h.slot] = true
		}
		for _, h := range got[i][:min(k, len(got[i]))] {
			if want[h.slot] {
				found++
			}
		}
		total += len(want)
	}
	return float64(found) / float64(total)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func parseInts(t *testing.T, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("bad list %q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}

func TestMeasure(t *testing.T) {
	if !*measure {
		t.Skip("a measurement, not a test: run with -vector.measure")
	}
	seed := *measureSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d, GOMAXPROCS %d, k %d, %d queries", seed, runtime.GOMAXPROCS(0), measureK, measureQueries)
	fmt.Fprintf(os.Stdout, "seed %d GOMAXPROCS %d k %d queries %d\n", seed, runtime.GOMAXPROCS(0), measureK, measureQueries)
	fmt.Fprintf(os.Stdout, "%-7s %-5s %-22s %10s %10s %6s %6s %10s %8s %s\n", "N", "dims", "method", "p50", "p99", "r@10", "r@50", "build", "B/vec", "note")
	for _, dims := range parseInts(t, *measureDims) {
		for _, n := range parseInts(t, *measureNs) {
			for _, r := range measureOne(t, seed, n, dims) {
				fmt.Fprintf(os.Stdout, "%-7d %-5d %-22s %10s %10s %6.3f %6.3f %10s %8.0f %s\n", n, dims, r.method,
					r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.recall10, r.recall50,
					r.build.Round(time.Millisecond), r.bytesPerVec, r.note)
			}
		}
	}
}

func measureOne(t *testing.T, seed uint64, n, dims int) []row {
	d := makeDataset(seed, n, dims)
	floatBytes := float64(dims * 4)
	int8Bytes := float64(dims + 4)
	loop := func(q []float32) []hit { return d.exactFloat(dotLoop, 0, n, q) }
	p50, p99, truth := timeQueries(d, loop)
	rows := []row{{method: "float32 loop", p50: p50, p99: p99, recall10: 1, recall50: 1, bytesPerVec: floatBytes, note: "reference"}}
	add := func(name string, s searcher, bytesPerVec float64) {
		p50, p99, got := timeQueries(d, s)
		rows = append(rows, row{method: name, p50: p50, p99: p99, recall10: recall(truth, got, 10), recall50: recall(truth, got, 50), bytesPerVec: bytesPerVec})
	}
	add("float32 vek", func(q []float32) []hit { return d.exactFloat(vek32.Dot, 0, n, q) }, floatBytes)
	add("int8 loop", func(q []float32) []hit { return d.exactInt8(0, n, q) }, int8Bytes)
	add("float32 vek 2 cores", func(q []float32) []hit {
		return split(n, func(lo, hi int) []hit { return d.exactFloat(vek32.Dot, lo, hi, q) })
	}, floatBytes)
	add("int8 loop 2 cores", func(q []float32) []hit {
		return split(n, func(lo, hi int) []hit { return d.exactInt8(lo, hi, q) })
	}, int8Bytes)
	add("Exact (vek, split)", exactSearcher(t, d), floatBytes)
	if n <= *hnswMaxN {
		for _, m := range []int{16, 32} {
			rows = append(rows, measureHNSW(t, d, truth, m, 128)...)
		}
	}
	return rows
}

// exactSearcher searches d with this package's Exact, ids being slots.
func exactSearcher(t *testing.T, d *dataset) searcher {
	e, err := NewExact(d.dims)
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.n() {
		if err := e.Add(strconv.Itoa(i), d.vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	return func(q []float32) []hit {
		found, err := e.Search(q, measureK)
		if err != nil {
			t.Fatal(err)
		}
		hits := make([]hit, len(found))
		for i, f := range found {
			slot, _ := strconv.Atoi(f.ID)
			hits[i] = hit{slot, f.Score}
		}
		return hits
	}
}

// measureHNSW builds a graph of m neighbours per node, searching buildEf
// candidates while inserting, then measures queries at several ef.
func measureHNSW(t *testing.T, d *dataset, truth [][]hit, m, buildEf int) []row {
	before := heapInUse()
	g := hnsw.NewGraph[int]()
	g.M, g.EfSearch = m, buildEf
	g.Rng = mrand.New(mrand.NewSource(int64(d.n()))) // a reproducible graph
	start := time.Now()
	for i := range d.n() {
		// The graph keeps the slice it is given: a copy, as a store
		// would hand it, so its memory counts below.
		g.Add(hnsw.MakeNode(i, slices.Clone(d.vec(i))))
	}
	build := time.Since(start)
	perVec := float64(heapInUse()-before) / float64(d.n())

	var buf bytes.Buffer
	start = time.Now()
	if err := g.Export(&buf); err != nil {
		t.Fatalf("export: %v", err)
	}
	save := time.Since(start)
	size := buf.Len()
	loaded := hnsw.NewGraph[int]()
	start = time.Now()
	if err := loaded.Import(&buf); err != nil {
		t.Fatalf("import: %v", err)
	}
	load := time.Since(start)

	var rows []row
	// The graph's search keeps only k candidates and stops at the first
	// step that does not beat the best one, so ef alone changes little;
	// asking for ef results and keeping the best k widens the search.
	for _, ef := range []int{50, 128, 256} {
		g.EfSearch = ef
		search := func(q []float32) []hit {
			t := &topK{k: measureK}
			for _, nd := range g.Search(q, ef) {
				t.offer(nd.Key, dotLoop(q, nd.Value))
			}
			return t.hits
		}
		p50, p99, got := timeQueries(d, search)
		rows = append(rows, row{method: fmt.Sprintf("hnsw M%d ef%d", m, ef), p50: p50, p99: p99,
			recall10: recall(truth, got, 10), recall50: recall(truth, got, 50), build: build, bytesPerVec: perVec,
			note: fmt.Sprintf("export %d B/vec in %s, import %s", size/d.n(), save.Round(time.Millisecond), load.Round(time.Millisecond))})
	}
	return rows
}
