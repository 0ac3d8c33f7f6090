package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/search"
	"github.com/memmesh/memmesh/storage"
)

// The indexer indexes a memory a peer's commit handed over instead of
// reading its record back: the two must be the same memory, whatever
// the document holds (tags, touches, expiry, confirmation, revisions,
// a sync conflict).
func TestHandedOverMemoryEqualsItsRecord(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 50 {
		m := &model.Memory{
			ID:         crdt.NewIDFrom(r),
			Namespace:  "ns",
			Title:      fmt.Sprintf("title %d", i),
			Content:    fmt.Sprintf("content %d with a question? %d", i, r.Intn(1000)),
			Kind:       "fact",
			Tier:       model.TierAgent,
			Confidence: r.Float64(),
			Status:     model.StatusActive,
			Evergreen:  r.Intn(2) == 0,
			Provenance: model.Provenance{Device: "dev-a", Agent: "agent", Session: "s", CreatedAt: at, UpdatedAt: at},
		}
		if r.Intn(2) == 0 {
			m.Tags = []string{"b", "a"}
			m.Touches = []string{"src/x.go"}
			m.ExpiresAt = at.Add(time.Duration(r.Intn(1000)) * time.Hour)
		}
		doc, err := crdt.NewMemoryDoc(crdt.ActorID("dev-a"), m)
		if err != nil {
			t.Fatal(err)
		}
		if r.Intn(2) == 0 {
			if _, err := doc.AppendRevision("edited", "dev-a", "agent-a", at.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := doc.SetConfirmed(at.Add(time.Hour), "person"); err != nil {
				t.Fatal(err)
			}
		}
		if r.Intn(3) == 0 {
			other, err := doc.Fork(crdt.ActorID("dev-b"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.AppendRevision("theirs", "dev-b", "", at.Add(2*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if _, err := doc.AppendRevision("ours", "dev-a", "agent-a", at.Add(2*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := doc.Merge(other); err != nil {
				t.Fatal(err)
			}
			other.Close()
		}
		handed, err := doc.Materialize()
		doc.Close()
		if err != nil {
			t.Fatal(err)
		}
		rec, err := memoryRecord(&handed, nil)
		if err != nil {
			t.Fatal(err)
		}
		var back model.Memory
		if err := json.Unmarshal(rec.Value, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(handed, back) {
			t.Fatalf("memory %d: handed over\n%+v\nread back\n%+v", i, handed, back)
		}
	}
}

// While a pull holds the indexer, it indexes the memories handed over in
// whole batches as they come, without waiting for the pull to end; less
// than a batch waits for the end.
func TestIndexerIndexesAlongsideAPull(t *testing.T) {
	t.Parallel()
	store, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	index, err := search.Open(t.TempDir(), search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer index.Close()
	clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	ix := newIndexer(store, index, clk, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ix.run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	pull := func(n int) { // as a pull's commit does
		var recs []storage.Record
		var mems []*model.Memory
		for i := range n {
			m := &model.Memory{ID: crdt.NewID(), Namespace: "ns", Content: fmt.Sprintf("fact %d", i), Kind: "fact",
				Tier: model.TierAgent, Status: model.StatusActive, Provenance: model.Provenance{Device: "d", CreatedAt: at, UpdatedAt: at}}
			rec, err := memoryRecord(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			recs, mems = append(recs, rec), append(mems, m)
		}
		seq, err := store.Commit(recs...)
		if err != nil {
			t.Fatal(err)
		}
		ix.handed.handOver(seq, mems)
		ix.notify()
	}
	count := func() uint64 {
		n, err := index.Count()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// gathering waits until the indexer waits out its gather delay.
	gathering := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := clk.BlockUntilContext(ctx, 1); err != nil {
			t.Fatalf("the indexer no longer waits out a gather delay (%d memories indexed): %v", count(), err)
		}
	}
	// waitFor lets gather delays pass until cond holds; it fails once a
	// minute went by with no memory indexed.
	waitFor := func(what string, cond func() bool) {
		last, since := count(), time.Now()
		for !cond() {
			if n := count(); n != last {
				last, since = n, time.Now()
			}
			if time.Since(since) > time.Minute {
				t.Fatalf("%s: %d memories indexed, none for a minute", what, count())
			}
			clk.Advance(gatherDelay)
			time.Sleep(10 * time.Millisecond)
		}
	}

	// one memory indexed first: the indexer has started, and its first
	// pass (which indexes every change) is over
	pull(1)
	waitFor("the first memory", func() bool { return count() == 1 })

	release := ix.hold()
	pull(100)
	for range 4 { // the indexer takes each gather delay, and waits again
		gathering()
		clk.Advance(gatherDelay)
	}
	gathering()
	if n := count(); n != 1 {
		t.Fatalf("%d memories indexed while the pull holds less than a batch", n-1)
	}
	pull(indexBatch)
	waitFor("a whole batch handed over during the pull", func() bool { return count() >= 1+indexBatch })
	release()
	waitFor("the pull's end", func() bool { return count() == 1+100+indexBatch })
	if n := ix.handed.len(); n != 0 {
		t.Errorf("%d memories still held once indexed", n)
	}
}
