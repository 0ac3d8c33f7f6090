package semantic

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/embed/model2vec"
	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/testwait"
)

// tinyModel loads m2vtest's topic model under name.
func tinyModel(t *testing.T, name string) *model2vec.Model {
	t.Helper()
	m, err := model2vec.Load(m2vtest.TopicModel(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// memories is a Source over a map, as the store would be.
type memories struct {
	mu    sync.Mutex
	texts map[string]string
}

func (m *memories) Each(ctx context.Context, fn func(id, text string) error) error {
	m.mu.Lock()
	texts := maps.Clone(m.texts)
	m.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(texts)) {
		if err := fn(id, texts[id]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memories) Text(id string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.texts[id]
	return t, ok, nil
}

func (m *memories) set(id, text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.texts[id] = text
}

// counting counts the texts an embedder embeds and fails while down.
type counting struct {
	embed.Embedder
	texts atomic.Int64
	down  atomic.Bool
}

func (c *counting) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if c.down.Load() {
		return nil, fmt.Errorf("%w: connection refused", embed.ErrUnavailable)
	}
	c.texts.Add(int64(len(texts)))
	return c.Embedder.Embed(ctx, texts)
}

// startIndex runs an Index until the test ends.
func startIndex(t *testing.T, cfg Config) *Index {
	t.Helper()
	ix, stop := runIndex(t, cfg)
	t.Cleanup(stop)
	return ix
}

// runIndex runs an Index until stop, which closes it.
func runIndex(t *testing.T, cfg Config) (ix *Index, stop func()) {
	t.Helper()
	ix = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ix.Run(ctx) }()
	var once sync.Once
	return ix, func() {
		once.Do(func() {
			cancel()
			<-done
			if err := ix.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func waitEmbedded(t *testing.T, ix *Index, total int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%d memories embedded", total), func() bool {
		st := ix.Status()
		return st.Total == total && st.Embedded == total
	})
}

func nearIDs(ix *Index, text string) []string {
	var ids []string
	for _, h := range ix.Near(context.Background(), text, 10) {
		ids = append(ids, h.ID)
	}
	return ids
}

func TestVectorsFollowTheMemories(t *testing.T) {
	src := &memories{texts: map[string]string{
		"pgx":    "Use pgx, not lib/pq",
		"kafka":  "Events go through Kafka topics",
		"deploy": "Ship to staging before a release",
	}}
	emb := &counting{Embedder: tinyModel(t, "topics")}
	dir := t.TempDir()
	ix := startIndex(t, Config{Dir: dir, Embedder: emb, Source: src})
	waitEmbedded(t, ix, 3)
	if got := nearIDs(ix, "message queue"); len(got) == 0 || got[0] != "kafka" {
		t.Fatalf("nearest a message queue: %v, want kafka first", got)
	}
	if got := nearIDs(ix, "which database library"); len(got) == 0 || got[0] != "pgx" {
		t.Fatalf("nearest a database library: %v, want pgx first", got)
	}
	st := ix.Status()
	if st.Provider != "builtin" || st.Model != "topics" || st.Dims != 4 || st.Error != "" {
		t.Errorf("status %+v", st)
	}

	// An edit makes the memory's vector again; a removal deletes it.
	src.set("pgx", "Kafka brokers need three replicas")
	ix.Changed(map[string]string{"pgx": "Kafka brokers need three replicas"}, []string{"deploy"}, nil)
	testwait.Until(t, "the edit embedded and the removal gone", func() bool {
		got := nearIDs(ix, "message broker")
		return ix.Status().Total == 2 && ix.Status().Embedded == 2 && len(got) == 2 && !slices.Contains(got, "deploy")
	})
	for _, h := range ix.Near(context.Background(), "database driver", 5) {
		if h.ID == "pgx" && h.Cosine > 0.5 {
			t.Errorf("the edited memory is still near its old text: cosine %.2f", h.Cosine)
		}
	}
}

func TestStoredVectorsAreKept(t *testing.T) {
	src := &memories{texts: map[string]string{"a": "pgx driver", "b": "kafka queue"}}
	model := tinyModel(t, "topics")
	dir := t.TempDir()
	first := &counting{Embedder: model}
	ix, stop := runIndex(t, Config{Dir: dir, Embedder: first, Source: src})
	waitEmbedded(t, ix, 2)
	stop()

	// The same model at the next start embeds nothing again.
	again := &counting{Embedder: model}
	src.set("c", "staging rollout")
	ix, stop = runIndex(t, Config{Dir: dir, Embedder: again, Source: src})
	waitEmbedded(t, ix, 3)
	stop()
	if n := again.texts.Load(); n != 1 {
		t.Errorf("the next start embedded %d texts, want only the new memory's", n)
	}

	// Another model makes every vector again.
	other := &counting{Embedder: tinyModel(t, "topics-v2")}
	ix = startIndex(t, Config{Dir: dir, Embedder: other, Source: src})
	waitEmbedded(t, ix, 3)
	if n := other.texts.Load(); n != 3 {
		t.Errorf("a new model embedded %d texts, want all 3", n)
	}
}

func TestProviderDownLeavesSearchToWords(t *testing.T) {
	src := &memories{texts: map[string]string{"a": "pgx driver", "b": "kafka queue"}}
	emb := &counting{Embedder: tinyModel(t, "topics")}
	emb.down.Store(true)
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	ix := startIndex(t, Config{Dir: t.TempDir(), Embedder: emb, Source: src, Clock: clk})
	testwait.Until(t, "the failure reported", func() bool { return ix.Status().Error != "" })
	if st := ix.Status(); st.Embedded != 0 || !strings.Contains(st.Error, "connection refused") {
		t.Fatalf("status while down: %+v", st)
	}
	if got := ix.Near(context.Background(), "kafka", 5); got != nil {
		t.Fatalf("near while the provider is down: %v", got)
	}
	emb.down.Store(false)
	testwait.Until(t, "the vectors made once the provider is back", func() bool {
		clk.Advance(maxBackoff)
		st := ix.Status()
		return st.Embedded == 2 && st.Error == ""
	})
}

func TestOffDoesNothing(t *testing.T) {
	ix := New(Config{Dir: t.TempDir(), Source: &memories{}})
	ix.Run(context.Background()) // returns at once
	ix.Changed(map[string]string{"a": "text"}, nil, nil)
	if st := ix.Status(); st != (api.EmbedStatus{Provider: "off"}) {
		t.Errorf("status %+v", st)
	}
	if ix.Near(context.Background(), "text", 5) != nil {
		t.Error("near without an embedder")
	}
	if err := ix.Reindex(); err == nil {
		t.Error("reindex without an embedder")
	}
}

// TestTextsWithoutMeaningAreLeftToWords: a text of no word the model
// knows has no vector; it leaves the count, and the others of its batch
// are embedded.
func TestTextsWithoutMeaningAreLeftToWords(t *testing.T) {
	src := &memories{texts: map[string]string{"a": "pgx driver", "b": "ha, dogs will be dogs", "c": "kafka queue"}}
	ix := startIndex(t, Config{Dir: t.TempDir(), Embedder: tinyModel(t, "topics"), Source: src})
	waitEmbedded(t, ix, 2)
	if got := nearIDs(ix, "message broker"); len(got) != 2 || got[0] != "c" {
		t.Fatalf("near a message broker: %v", got)
	}
}

// TestReindexMakesEveryVectorAgain: a reindex embeds every memory again,
// though their texts did not change.
func TestReindexMakesEveryVectorAgain(t *testing.T) {
	src := &memories{texts: map[string]string{"a": "pgx driver", "b": "kafka queue", "c": "staging rollout"}}
	emb := &counting{Embedder: tinyModel(t, "topics")}
	ix := startIndex(t, Config{Dir: t.TempDir(), Embedder: emb, Source: src})
	waitEmbedded(t, ix, 3)
	before := emb.texts.Load()
	if err := ix.Reindex(); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "every memory embedded again", func() bool {
		st := ix.Status()
		return !st.Scanning && st.Embedded == 3 && emb.texts.Load() == before+3
	})
	if got := nearIDs(ix, "message broker"); len(got) == 0 || got[0] != "b" {
		t.Fatalf("near a message broker after a reindex: %v", got)
	}
}
