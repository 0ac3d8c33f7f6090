package vector

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/viterin/vek/vek32"
)

// Bounds of an Exact collection and of its calls.
const (
	MaxDims  = 4096
	MaxK     = 1000
	MaxIDLen = 256
	// splitAt is the size from which a search scans parts of the
	// collection on several goroutines: below it, starting them costs
	// more than it saves (see the measurement in the package comment).
	splitAt = 16384
)

// Errors of Exact's calls, wrapped with what was wrong.
var (
	ErrBadVector = errors.New("vector: bad vector")
	ErrBadID     = errors.New("vector: bad id")
	ErrBadK      = errors.New("vector: bad k")
	ErrBadDims   = errors.New("vector: bad dimensions")
)

// Hit is a stored vector found by a search: its id and its cosine to
// the query.
type Hit struct {
	ID    string
	Score float32
}

// Exact searches by scanning every vector: float32 dot products over
// one contiguous slice. It is safe for concurrent use.
type Exact struct {
	dims int

	mu    sync.RWMutex
	flat  []float32      // slot i holds flat[i*dims:(i+1)*dims]
	ids   []string       // the id in each slot
	slots map[string]int // id to slot
}

// NewExact returns an empty collection of vectors of dims values.
func NewExact(dims int) (*Exact, error) {
	if dims < 1 || dims > MaxDims {
		return nil, fmt.Errorf("%w: %d, want 1 to %d", ErrBadDims, dims, MaxDims)
	}
	return &Exact{dims: dims, slots: map[string]int{}}, nil
}

// Dims is the number of values of every vector of the collection.
func (e *Exact) Dims() int { return e.dims }

// Len is the number of vectors stored.
func (e *Exact) Len() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.ids)
}

// Add stores v under id, replacing what id held. It keeps v normalised
// (a copy), so that scores are cosines whatever the provider's rounding.
func (e *Exact) Add(id string, v []float32) error {
	if err := checkID(id); err != nil {
		return err
	}
	unit, err := e.unit(v)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if slot, ok := e.slots[id]; ok {
		copy(e.vec(slot), unit)
		return nil
	}
	e.slots[id] = len(e.ids)
	e.ids = append(e.ids, id)
	e.flat = append(e.flat, unit...)
	return nil
}

// Remove drops id's vector; it reports whether there was one. The last
// slot moves into the freed one, so the collection stays contiguous.
func (e *Exact) Remove(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	slot, ok := e.slots[id]
	if !ok {
		return false
	}
	last := len(e.ids) - 1
	if slot != last {
		copy(e.vec(slot), e.vec(last))
		e.ids[slot] = e.ids[last]
		e.slots[e.ids[slot]] = slot
	}
	delete(e.slots, id)
	e.ids[last] = ""
	e.ids = e.ids[:last]
	e.flat = e.flat[:last*e.dims]
	return true
}

// Search returns the k stored vectors nearest query by cosine, best
// first; equal scores come in order of id.
func (e *Exact) Search(query []float32, k int) ([]Hit, error) {
	if k < 1 || k > MaxK {
		return nil, fmt.Errorf("%w: %d, want 1 to %d", ErrBadK, k, MaxK)
	}
	q, err := e.unit(query)
	if err != nil {
		return nil, err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	hits := e.scan(q, k)
	bestFirst(hits, func(a, b hit) int { return strings.Compare(e.ids[a.slot], e.ids[b.slot]) })
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{ID: e.ids[h.slot], Score: h.score}
	}
	return out, nil
}

// scan keeps the best k slots, on one goroutine per core for a large
// collection. Ties at the k-th score keep whichever came first, so a
// search asks for more than it returns only through k itself.
func (e *Exact) scan(q []float32, k int) []hit {
	n := len(e.ids)
	parts := runtime.GOMAXPROCS(0)
	if n < splitAt || parts < 2 {
		return e.scanRange(q, k, 0, n)
	}
	found := make([][]hit, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { found[p] = e.scanRange(q, k, n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
	return merge(k, found...)
}

func (e *Exact) scanRange(q []float32, k, lo, hi int) []hit {
	t := &topK{k: k}
	for i := lo; i < hi; i++ {
		t.offer(i, vek32.Dot(q, e.vec(i)))
	}
	return t.hits
}

func (e *Exact) vec(slot int) []float32 { return e.flat[slot*e.dims : (slot+1)*e.dims] }

// unit checks v and returns it normalised, as a copy.
func (e *Exact) unit(v []float32) ([]float32, error) {
	if len(v) != e.dims {
		return nil, fmt.Errorf("%w: %d values, want %d", ErrBadVector, len(v), e.dims)
	}
	var sum float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: a value is not a finite number", ErrBadVector)
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return nil, fmt.Errorf("%w: zero vector", ErrBadVector)
	}
	inv := float32(1 / math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out, nil
}

func checkID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%w: %d bytes, want 1 to %d", ErrBadID, len(id), MaxIDLen)
	}
	return nil
}
