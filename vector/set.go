package vector

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of a Set and of its calls.
const (
	MaxDims   = 4096
	MaxK      = 1000
	MaxIDLen  = 256
	MaxTagLen = 256
)

// Errors of a Set's calls, wrapped with what was wrong.
var (
	ErrBadVector = errors.New("vector: bad vector")
	ErrBadID     = errors.New("vector: bad id")
	ErrBadK      = errors.New("vector: bad k")
	ErrBadDims   = errors.New("vector: bad dimensions")
	ErrBadTag    = errors.New("vector: bad tag")
	ErrTooMany   = errors.New("vector: too many items")
	ErrClosed    = errors.New("vector: closed")
)

// File names in a Set's folder.
const (
	logName   = "vectors"
	graphName = "graph"
)

// Tuning, chosen by the measurement in the package comment.
const (
	// exactWork is the most stored values (vectors × dims) searched by
	// scanning them all, about 1 ms on the machine measured: exact, and
	// as fast as the graph there; beyond, the graph answers.
	exactWork = 4 << 20
	// splitWork is the least stored values scanned on several
	// goroutines: below it, starting them costs more than it saves.
	splitWork = 1 << 20
	// compactMin is the least file size worth compacting.
	compactMin = 1 << 20
	// graphEvery is the changes after which the graph file is written
	// again, so that an Open after a crash links few vectors in (about
	// a second's worth, at the put rates measured).
	graphEvery = 2048
)

// Options of a Set.
type Options struct {
	Dims   int          // 1..4096
	Tag    string       // the model's tag, e.g. "builtin/potion-base-8M/256" (≤ 256 bytes)
	Logger *slog.Logger // nil: slog.Default()
}

// Item is a vector to store.
type Item struct {
	ID  string    // a memory id, 1..256 bytes
	Sum uint64    // the caller's checksum of the text the vector was made from
	Vec []float32 // Dims values, not all zero, all finite; stored normalised
}

// Hit is a stored vector found by a search: its id and its cosine to
// the query.
type Hit struct {
	ID    string
	Score float32
}

// Set is the vectors of one embedding model, persisted in one folder. It
// is safe for concurrent use.
type Set struct {
	dir, tag string
	dims     int
	log      *slog.Logger

	// wmu orders the writers, so that the file's order is the order in
	// which changes reach memory; searches only wait for mu.
	wmu       sync.Mutex
	f         *os.File
	size      int64  // of the vectors file
	gen       uint64 // the vectors file's generation
	chain     uint32 // the chained CRC of its records
	liveBytes int64  // what the live vectors take in the file
	changed   int    // changes since the graph file was written
	err       error  // set when the file may hold a partial record

	mu        sync.RWMutex
	st        *store
	g         *graph
	closed    bool
	exactWork int // exactWork, lowered by tests to reach the graph

	// ready is set when the graph holds every live vector; until then
	// searches scan. A graph built at Open is built in the background,
	// a vector at a time between writes, and stops at closing.
	ready    atomic.Bool
	closing  atomic.Bool
	building sync.WaitGroup
}

// Open opens the Set in dir, creating dir if needed. Vectors of another
// Tag or Dims are discarded. A torn or corrupt tail is cut off and
// logged: the file holds derived data, so only a failing disk fails Open.
func Open(dir string, opts Options) (*Set, error) {
	return open(dir, opts, exactWork, 1)
}

func open(dir string, opts Options, work int, seed uint64) (*Set, error) {
	if opts.Dims < 1 || opts.Dims > MaxDims {
		return nil, fmt.Errorf("%w: %d, want 1 to %d", ErrBadDims, opts.Dims, MaxDims)
	}
	if len(opts.Tag) > MaxTagLen {
		return nil, fmt.Errorf("%w: %d bytes, want at most %d", ErrBadTag, len(opts.Tag), MaxTagLen)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("vector: %w", err)
	}
	st := newStore(opts.Dims)
	s := &Set{dir: dir, tag: opts.Tag, dims: opts.Dims, log: log.With("component", "vector", "dir", dir),
		st: st, g: newGraph(st, seed), exactWork: work}
	if err := s.load(); err != nil {
		if s.f != nil {
			s.f.Close()
		}
		return nil, fmt.Errorf("vector: open %s: %w", dir, err)
	}
	if !s.ready.Load() {
		s.building.Go(s.build)
	}
	return s, nil
}

// build links every live vector into the graph, one at a time under
// wmu, so that writes go on between; a write links its own vectors in.
// It stops when the Set closes, and ends by writing the graph file.
func (s *Set) build() {
	start := time.Now()
	s.log.Info("building the graph", "vectors", s.Len())
	for slot := 0; ; slot++ {
		if !s.buildStep(&slot) {
			break
		}
	}
	if s.ready.Load() {
		s.log.Info("graph built", "vectors", s.Len(), "took", time.Since(start).Round(time.Millisecond))
	}
}

// buildStep links in the vector at *slot if it is not in the graph yet.
// Past the last slot it checks that none was missed (a compaction
// renumbers slots), starting over if one was; it reports whether to go
// on.
func (s *Set) buildStep(slot *int) bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closing.Load() || s.f == nil {
		return false
	}
	if *slot >= s.st.cap() {
		if missed := s.unlinked(); missed >= 0 {
			*slot = missed - 1
			return true
		}
		s.ready.Store(true)
		s.changed = graphEvery // the whole graph is not in the file
		if err := s.upkeep(); err != nil {
			s.log.Warn("graph built, but not saved", "err", err)
		}
		return false
	}
	s.relink(nil, []uint32{uint32(*slot)})
	return true
}

// unlinked is the first live slot out of the graph, or -1.
func (s *Set) unlinked() int {
	for slot := range s.st.cap() {
		if s.st.live(uint32(slot)) && !s.g.has(uint32(slot)) {
			return slot
		}
	}
	return -1
}

// Tag is the model's tag the Set was opened with.
func (s *Set) Tag() string { return s.tag }

// Dims is the number of values of every vector.
func (s *Set) Dims() int { return s.dims }

// Len is the number of vectors stored.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.len()
}

// Sum is the Sum stored with id's vector.
func (s *Set) Sum(id string) (uint64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	slot, ok := s.st.slots[id]
	if !ok {
		return 0, false
	}
	return s.st.sums[slot], true
}

// Each calls fn with every stored id and its Sum, in no order, until fn
// returns false. fn must not call the Set's writing methods.
func (s *Set) Each(fn func(id string, sum uint64) bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for slot, id := range s.st.ids {
		if id != "" && !fn(id, s.st.sums[slot]) {
			return
		}
	}
}

// Put stores items, replacing the vectors of ids already stored. It is
// durable when it returns; a refused or failed call changes nothing.
func (s *Set) Put(items []Item) error {
	if len(items) > MaxBatch {
		return fmt.Errorf("%w: %d, want at most %d", ErrTooMany, len(items), MaxBatch)
	}
	cs := make([]change, len(items))
	for i, it := range items {
		if err := checkID(it.ID); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		c := change{op: opPut, id: it.ID, sum: it.Sum, code: make([]int8, s.dims)}
		var err error
		if c.scale, err = quantise(it.Vec, s.dims, c.code); err != nil {
			return fmt.Errorf("item %d (%.40q): %w", i, it.ID, err)
		}
		cs[i] = c
	}
	return s.write(opPut, cs)
}

// Delete drops the vectors of ids; unknown ids are ignored. It is
// durable when it returns.
func (s *Set) Delete(ids []string) error {
	if len(ids) > MaxBatch {
		return fmt.Errorf("%w: %d, want at most %d", ErrTooMany, len(ids), MaxBatch)
	}
	for i, id := range ids {
		if err := checkID(id); err != nil {
			return fmt.Errorf("id %d: %w", i, err)
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Only writers change the store, and wmu keeps them out.
	var cs []change
	for _, id := range ids {
		if _, ok := s.st.slots[id]; ok {
			cs = append(cs, change{op: opDelete, id: id})
		}
	}
	return s.writeLocked(opDelete, cs)
}

// Erase drops the vectors of ids, as Delete does, and then rewrites the
// file with the live vectors alone, so that no byte of the vectors of ids
// is left in it (an erasure: a vector says something of its text).
func (s *Set) Erase(ids []string) error {
	if err := s.Delete(ids); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.f == nil {
		return ErrClosed
	}
	return s.compact()
}

func (s *Set) write(op byte, cs []change) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLocked(op, cs)
}

// writeLocked appends cs to the file, fsyncs it and applies them.
func (s *Set) writeLocked(op byte, cs []change) error {
	if s.f == nil {
		return ErrClosed
	}
	if s.err != nil {
		return s.err
	}
	if len(cs) == 0 {
		return nil
	}
	rec := encodeRecord(op, cs, s.dims)
	if err := s.append(rec); err != nil {
		return err
	}
	s.relink(s.apply(cs))
	s.changed += len(cs)
	return s.upkeep()
}

// append writes rec at the end of the file and fsyncs it. On failure it
// cuts the file back, so that a later record does not follow a partial
// one; if even that fails, the Set refuses writes until reopened.
func (s *Set) append(rec []byte) error {
	_, err := s.f.WriteAt(rec, s.size)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		if terr := s.f.Truncate(s.size); terr != nil {
			s.err = fmt.Errorf("vector: the file may end in a partial record (%w), reopen: %w", terr, err)
		}
		return fmt.Errorf("vector: write: %w", err)
	}
	s.size += int64(len(rec))
	s.chain = chainRecord(s.chain, rec)
	return nil
}

// apply makes cs, one record's changes, the state of the store, and
// returns the slots to take out of the graph (replaced or deleted) and
// to link in (put).
func (s *Set) apply(cs []change) (out, in []uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		slot, had := s.st.slots[c.id]
		if had && s.g.has(slot) {
			out = append(out, slot)
		}
		if had {
			s.liveBytes -= int64(itemSize(opPut, c.id, s.dims))
		}
		if c.op == opDelete {
			s.st.remove(c.id)
			continue
		}
		in = append(in, s.st.put(c.id, c.sum, c.scale, c.code))
		s.liveBytes += int64(itemSize(opPut, c.id, s.dims))
	}
	return out, in
}

// relink takes slots out of the graph in one pass and links live ones
// in, each once. Finding a slot's neighbours, the costly part, holds
// only the read lock, so searches go on meanwhile; the caller holds wmu,
// so nothing else changes the graph.
func (s *Set) relink(out, in []uint32) {
	out = slices.Compact(slices.Sorted(slices.Values(out)))
	if len(out) > 0 {
		s.mu.RLock()
		r := s.g.planRemoval(out)
		s.mu.RUnlock()
		s.mu.Lock()
		s.g.commitRemoval(r)
		s.mu.Unlock()
	}
	for _, slot := range slices.Compact(slices.Sorted(slices.Values(in))) {
		s.mu.RLock()
		todo := s.st.live(slot) && !s.g.has(slot)
		var p plan
		if todo {
			p = s.g.plan(slot)
		}
		s.mu.RUnlock()
		if todo {
			s.mu.Lock()
			s.g.commit(p)
			s.mu.Unlock()
		}
	}
}

// upkeep compacts the file when dead records outweigh live ones, and
// writes the graph file when many changes are not in it.
func (s *Set) upkeep() error {
	if s.size > compactMin && s.size > 2*s.liveBytes {
		return s.compact()
	}
	if s.changed >= graphEvery {
		return s.saveGraph()
	}
	return nil
}

// Search returns the k stored vectors nearest q by cosine, best first;
// equal scores come in order of id. A small Set is scanned whole; a
// large one is searched through the graph, which finds nearly all of
// the nearest (see the package comment).
func (s *Set) Search(q []float32, k int) ([]Hit, error) {
	if k < 1 || k > MaxK {
		return nil, fmt.Errorf("%w: %d, want 1 to %d", ErrBadK, k, MaxK)
	}
	qq := &query{code: make([]int8, s.dims)}
	var err error
	if qq.scale, err = quantise(q, s.dims, qq.code); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	var found []cand
	if !s.ready.Load() || s.st.len()*s.dims <= s.exactWork {
		found = s.scan(qq, k)
	} else {
		found = s.g.search(qq, k)
	}
	slices.SortFunc(found, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(s.st.ids[a.slot], s.st.ids[b.slot])
	})
	out := make([]Hit, len(found))
	for i, c := range found {
		// int8 rounding may take a cosine a little past ±1.
		out[i] = Hit{ID: s.st.ids[c.slot], Score: max(-1, min(c.score, 1))}
	}
	return out, nil
}

// scan keeps the best k of all live slots, on one goroutine per core
// for a large store.
func (s *Set) scan(q *query, k int) []cand {
	n := s.st.cap()
	parts := runtime.GOMAXPROCS(0)
	if n*s.dims < splitWork || parts < 2 {
		return s.scanRange(q, k, 0, n)
	}
	found := make([][]cand, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { found[p] = s.scanRange(q, k, n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
	best := candHeap{worstOnTop: true}
	for _, f := range found {
		for _, c := range f {
			offer(&best, c, k)
		}
	}
	return best.items
}

func (s *Set) scanRange(q *query, k, lo, hi int) []cand {
	best := candHeap{worstOnTop: true}
	for slot := uint32(lo); slot < uint32(hi); slot++ {
		if s.st.live(slot) {
			offer(&best, cand{slot, s.st.score(q, slot)}, k)
		}
	}
	return best.items
}

// offer keeps c in best if it is among the k best offered.
func offer(best *candHeap, c cand, k int) {
	if best.len() < k {
		best.push(c)
	} else if c.score > best.peek().score {
		best.pop()
		best.push(c)
	}
}

// Close writes the graph file, so that the next Open need not link
// vectors in, and closes the vectors file.
func (s *Set) Close() error {
	s.closing.Store(true)
	s.building.Wait()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.f == nil {
		return ErrClosed
	}
	var err error
	if s.changed > 0 && s.err == nil && s.ready.Load() {
		err = s.saveGraph()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return err
}

func checkID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%w: %d bytes, want 1 to %d", ErrBadID, len(id), MaxIDLen)
	}
	return nil
}

func (s *Set) path(name string) string { return filepath.Join(s.dir, name) }

func newGen() uint64 { return rand.Uint64() | 1 }
