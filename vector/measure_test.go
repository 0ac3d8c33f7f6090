package vector

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/viterin/vek/vek32"
)

// The measurement behind the package comment. It runs only when asked:
//
//	go test ./vector -run TestMeasure -count=1 -timeout 60m -vector.measure
var (
	measure     = flag.Bool("vector.measure", false, "run the measurement of exact and graph search")
	measureNs   = flag.String("vector.n", "10000,25000,50000,100000", "collection sizes to measure")
	measureDims = flag.String("vector.dims", "256,768", "dimensions to measure")
	measureSeed = flag.Uint64("vector.seed", 0, "seed of the synthetic data; 0 picks one from the clock")
	measureEfs  = flag.String("vector.ef", "96,160,256", "least candidates of a graph search to measure")
)

const (
	measureK       = 50
	measureQueries = 200
	clusters       = 200
	putBatch       = 500
)

type dataset struct {
	dims    int
	flat    []float32 // n vectors of dims values
	queries [][]float32
}

func (d *dataset) n() int              { return len(d.flat) / d.dims }
func (d *dataset) vec(i int) []float32 { return d.flat[i*d.dims : (i+1)*d.dims] }

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
	d := &dataset{dims: dims, flat: make([]float32, n*dims)}
	for i := range n {
		noisy(r, centres[r.IntN(clusters)], spread, d.vec(i))
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

// exactFloat is the reference: the k nearest by float32 dot products.
func (d *dataset) exactFloat(q []float32) []int {
	best := candHeap{worstOnTop: true}
	for i := range d.n() {
		offer(&best, cand{uint32(i), vek32.Dot(q, d.vec(i))}, measureK)
	}
	slices.SortFunc(best.items, byScoreDesc)
	return candInts(best.items)
}

func candInts(cs []cand) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = int(c.slot)
	}
	return out
}

type row struct {
	method   string
	p50, p99 time.Duration
	recall10 float64
	note     string
}

func timeQueries(d *dataset, search func(q []float32) []int) (p50, p99 time.Duration, results [][]int) {
	durs := make([]time.Duration, len(d.queries))
	for i, q := range d.queries {
		start := time.Now()
		found := search(q)
		durs[i] = time.Since(start)
		results = append(results, found)
	}
	slices.Sort(durs)
	return durs[len(durs)/2], durs[len(durs)*99/100], results
}

// recall is the share of the true best k found among the best k returned.
func recall(truth, got [][]int, k int) float64 {
	var found, total int
	for i := range truth {
		want := truth[i][:min(k, len(truth[i]))]
		for _, g := range got[i][:min(k, len(got[i]))] {
			if slices.Contains(want, g) {
				found++
			}
		}
		total += len(want)
	}
	return float64(found) / float64(total)
}

// heapInUse is the live heap, after collecting and returning what is
// free to the system, so that RSS read next counts little garbage.
func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rss is the process's resident memory, from /proc (0 elsewhere).
func rss() uint64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
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
	fmt.Printf("seed %d GOMAXPROCS %d k %d queries %d\n", seed, runtime.GOMAXPROCS(0), measureK, measureQueries)
	fmt.Printf("%-7s %-5s %-22s %10s %10s %6s %s\n", "N", "dims", "method", "p50", "p99", "r@10", "note")
	for _, dims := range parseInts(t, *measureDims) {
		for _, n := range parseInts(t, *measureNs) {
			for _, r := range measureOne(t, seed, n, dims) {
				fmt.Printf("%-7d %-5d %-22s %10s %10s %6.3f %s\n", n, dims, r.method,
					r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.recall10, r.note)
			}
		}
	}
}

// measureOne fills a Set with n vectors (timing the puts, which link
// each into the graph), reopens it (timing Open and weighing the heap it
// takes), then times searches by scanning and through the graph.
func measureOne(t *testing.T, seed uint64, n, dims int) []row {
	d := makeDataset(seed, n, dims)
	p50, p99, truth := timeQueries(d, d.exactFloat)
	rows := []row{{method: "float32 vek scan", p50: p50, p99: p99, recall10: 1, note: "the reference"}}

	dir := t.TempDir()
	opts := Options{Dims: dims, Tag: "measure"}
	s, err := open(dir, opts, 0, seed)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for lo := 0; lo < n; lo += putBatch {
		items := make([]Item, 0, putBatch)
		for i := lo; i < min(lo+putBatch, n); i++ {
			items = append(items, Item{ID: strconv.Itoa(i), Sum: uint64(i), Vec: d.vec(i)})
		}
		if err := s.Put(items); err != nil {
			t.Fatal(err)
		}
	}
	putRate := float64(n) / time.Since(start).Seconds()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	heapBefore := heapInUse()
	rssBefore := rss()
	start = time.Now()
	s, err = open(dir, opts, exactWork, seed)
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Since(start)
	if !s.ready.Load() {
		t.Fatal("the graph file was not taken")
	}
	heapPerVec := float64(heapInUse()-heapBefore) / float64(n)
	rssPerVec := float64(int64(rss())-int64(rssBefore)) / float64(n)
	rows = append(rows, row{method: "Set open", note: fmt.Sprintf("open %s, put %.0f vectors/s in batches of %d, heap %.0f B/vec, RSS %+.0f B/vec",
		opened.Round(time.Millisecond), putRate, putBatch, heapPerVec, rssPerVec)})

	search := func(q []float32) []int {
		hits, err := s.Search(q, measureK)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int, len(hits))
		for i, h := range hits {
			out[i], _ = strconv.Atoi(h.ID)
		}
		return out
	}
	add := func(method string) {
		p50, p99, got := timeQueries(d, search)
		rows = append(rows, row{method: method, p50: p50, p99: p99, recall10: recall(truth, got, 10)})
	}
	add("Set as built")
	s.exactWork = math.MaxInt
	add("Set int8 scan")
	s.exactWork = 0
	for _, ef := range parseInts(t, *measureEfs) {
		s.g.efSearch = ef
		add(fmt.Sprintf("Set graph ef%d", ef))
	}
	rows = append(rows, row{method: "Set rebuild", note: "open without the graph file: " + timeRebuild(t, s, dir, opts, seed)})
	return rows
}

// timeRebuild closes s and times an Open that finds no graph file, as
// after the file's loss, and the build of the graph that follows.
func timeRebuild(t *testing.T, s *Set, dir string, opts Options, seed uint64) string {
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, graphName)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err := open(dir, opts, exactWork, seed)
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Since(start)
	s.building.Wait()
	built := time.Since(start)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("open %s, graph ready after %s", opened.Round(time.Millisecond), built.Round(time.Millisecond))
}
