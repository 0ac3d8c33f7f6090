// Package semantic keeps a vector of every memory's text on this machine
// and finds the memories nearest the meaning of a query.
//
// Vectors are derived data, like the search index: the configured
// embedder (package embed) makes them in the background, a batch at a
// time after each commit, and a vector.Set keeps them in their own folder,
// tagged with the model. They are never replicated: each machine makes
// its own, and a change of model makes them again. Search works by words
// alone until they are ready and whenever the embedder fails; a failure
// is reported in Status, never by failing a search.
package semantic

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/vector"
)

// Source is what the vectors are made from: the memories of the store.
type Source interface {
	// Each calls fn with the id and text of every memory to embed.
	Each(ctx context.Context, fn func(id, text string) error) error
	// Text returns the text of the memory id to embed; ok is false when
	// there is none any more.
	Text(id string) (text string, ok bool, err error)
}

// Config configures an Index.
type Config struct {
	Dir      string         // the folder of the vectors
	Embedder embed.Embedder // nil: no search by meaning
	Source   Source
	Clock    clock.Clock  // nil: the system's
	Logger   *slog.Logger // nil: slog.Default()
	// Embedded, when set, is told of the vectors made for memories that
	// Changed reported (not those a start or a reindex makes again, nor
	// those of a backlog of bulkPending or more), in the goroutine of Run.
	Embedded func(ids []string, vecs [][]float32)
}

const (
	// maxPending bounds the memories waiting for a vector; past it the
	// queue is dropped and the next pass reads every memory again.
	maxPending = 100_000
	// queryTimeout bounds the embedding of a query: a provider slower
	// than that leaves the search to words.
	queryTimeout = 2 * time.Second
	// quietAfterFailure is how long queries skip the embedder after it
	// failed one, so that a provider that is down costs one timeout,
	// not one per search; the next success of the background work ends
	// it sooner.
	quietAfterFailure = 10 * time.Second
	// Backoff of the background work after the embedder failed.
	minBackoff = time.Second
	maxBackoff = 5 * time.Minute
)

// Index keeps the vectors up to date and searches them. Its methods are
// safe for concurrent use; with no embedder it does nothing and finds
// nothing.
type Index struct {
	cfg  Config
	emb  embed.Embedder
	log  *slog.Logger
	clk  clock.Clock
	wake chan struct{}

	mu        sync.Mutex
	set       *vector.Set       // nil until the model's dims are known
	known     map[string]uint64 // memory id -> sum of its text
	pending   map[string]string // memory id -> its text, "" to read it from Source
	gone      map[string]bool   // memory ids whose vectors are to delete: true to erase
	rescan    bool              // read every memory again (at start, after an overflow, a reindex)
	reindex   bool              // discard every vector first
	err       error             // the embedder's last failure, cleared by a success
	quietTill time.Time         // queries skip the embedder until then
	closed    bool
}

// New returns an Index; Run does its work.
func New(cfg Config) *Index {
	ix := &Index{
		cfg:     cfg,
		emb:     cfg.Embedder,
		log:     cfg.Logger,
		clk:     cfg.Clock,
		wake:    make(chan struct{}, 1),
		known:   map[string]uint64{},
		pending: map[string]string{},
		gone:    map[string]bool{},
		rescan:  true,
	}
	if ix.log == nil {
		ix.log = slog.Default()
	}
	if ix.clk == nil {
		ix.clk = clock.System()
	}
	return ix
}

// Enabled reports whether an embedder is set.
func (ix *Index) Enabled() bool { return ix.emb != nil }

// TextOf is the text of a memory that is embedded: its title and its
// content, cut to what an embedder takes.
func TextOf(title, content string) string {
	text := content
	if title != "" {
		text = title + "\n" + content
	}
	if len(text) <= embed.MaxTextBytes {
		return text
	}
	cut := embed.MaxTextBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// sum is the checksum stored with a vector: the vector is up to date
// while the memory's text has the same sum.
func sum(text string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	return h.Sum64()
}

// Changed tells the index of memories written (id and text to embed),
// removed, and erased (purged: their vectors leave the files too).
func (ix *Index) Changed(put map[string]string, removed, erased []string) {
	if ix.emb == nil {
		return
	}
	ix.mu.Lock()
	for id, text := range put {
		s := sum(text)
		ix.known[id] = s
		delete(ix.gone, id)
		if ix.set != nil {
			if have, ok := ix.set.Sum(id); ok && have == s {
				delete(ix.pending, id)
				continue
			}
		}
		ix.queue(id, text)
	}
	for _, id := range removed {
		delete(ix.known, id)
		delete(ix.pending, id)
		if _, erase := ix.gone[id]; !erase {
			ix.gone[id] = false
		}
	}
	for _, id := range erased {
		delete(ix.known, id)
		delete(ix.pending, id)
		ix.gone[id] = true
	}
	ix.mu.Unlock()
	ix.signal()
}

// queue adds id to the pending memories, or, when too many wait, drops
// them all for a rescan. Called with mu held.
func (ix *Index) queue(id, text string) {
	if len(ix.pending) >= maxPending {
		clear(ix.pending)
		ix.rescan = true
		return
	}
	ix.pending[id] = text
}

func (ix *Index) signal() {
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// Reindex discards every vector and makes them again, in Run's goroutine.
func (ix *Index) Reindex() error {
	if ix.emb == nil {
		return errors.New("semantic: search by meaning is off: set [embed] provider in config.toml")
	}
	ix.mu.Lock()
	ix.reindex = true
	ix.mu.Unlock()
	ix.signal()
	return nil
}

// Status says how far the vectors are.
func (ix *Index) Status() api.EmbedStatus {
	if ix.emb == nil {
		return api.EmbedStatus{Provider: "off"}
	}
	info := ix.emb.Info()
	st := api.EmbedStatus{Provider: info.Provider, Model: info.Model, Dims: info.Dims}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st.Total, st.Scanning = len(ix.known), ix.rescan || ix.reindex
	if ix.set != nil {
		for id, s := range ix.known {
			if have, ok := ix.set.Sum(id); ok && have == s {
				st.Embedded++
			}
		}
	}
	if ix.err != nil {
		st.Error = ix.err.Error()
	}
	return st
}

// Near returns the memories nearest the meaning of text, at most k, best
// first; none when the vectors are not there or the embedder fails (the
// failure is in Status).
func (ix *Index) Near(ctx context.Context, text string, k int) []Hit {
	ix.mu.Lock()
	set, quiet := ix.set, ix.clk.Now().Before(ix.quietTill)
	ix.mu.Unlock()
	if set == nil || quiet || set.Len() == 0 || text == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	vecs, err := ix.emb.Embed(ctx, []string{TextOf("", text)})
	if err == nil && len(vecs) != 1 {
		err = fmt.Errorf("%w: %d vectors for one text", embed.ErrDims, len(vecs))
	}
	if err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			ix.failed(fmt.Errorf("embed a query: %w", err), true)
		}
		return nil
	}
	return ix.nearVector(set, vecs[0], k)
}

// NearVector returns the memories nearest vec, at most k, best first.
func (ix *Index) NearVector(vec []float32, k int) []Hit {
	ix.mu.Lock()
	set := ix.set
	ix.mu.Unlock()
	if set == nil {
		return nil
	}
	return ix.nearVector(set, vec, k)
}

func (ix *Index) nearVector(set *vector.Set, vec []float32, k int) []Hit {
	hits, err := set.Search(vec, min(max(k, 1), vector.MaxK))
	if err != nil {
		ix.log.Warn("search by meaning", "err", err)
		return nil
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{ID: h.ID, Cosine: float64(h.Score)}
	}
	return out
}

// Hit is a memory near a query, with the cosine of their vectors.
type Hit struct {
	ID     string
	Cosine float64
}

// failed records a failure of the embedder; a query's failure also quiets
// queries for a while.
func (ix *Index) failed(err error, query bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.err == nil {
		ix.log.Warn("search by meaning unavailable; searching by words", "err", err)
	}
	ix.err = err
	if query {
		ix.quietTill = ix.clk.Now().Add(quietAfterFailure)
	}
}

// Close stops using the vectors; Run must have returned.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.closed = true
	if ix.set == nil {
		return nil
	}
	err := ix.set.Close()
	ix.set = nil
	return err
}
