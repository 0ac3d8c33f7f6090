package search

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/model"
)

// dictionaryHolds reports whether the term dictionary of any field of the
// index in dir holds term. The index is opened anew, so it reads what its
// segment files hold: a removed memory's terms stay in its segment's
// dictionary until a merge rewrites it. (The dictionary is a compressed
// automaton: its files cannot simply be searched for the word.)
func dictionaryHolds(tb testing.TB, dir, term string) bool {
	tb.Helper()
	idx, err := bleve.OpenUsing(dir, runtimeConfig(defaultFlushDelay))
	if err != nil {
		tb.Fatal(err)
	}
	defer idx.Close()
	fields, err := idx.Fields()
	if err != nil {
		tb.Fatal(err)
	}
	for _, field := range fields {
		d, err := idx.FieldDictPrefix(field, []byte(term))
		if err != nil {
			tb.Fatal(err)
		}
		e, err := d.Next()
		d.Close()
		if err != nil {
			tb.Fatal(err)
		}
		if e != nil {
			return true
		}
	}
	return false
}

// TestExpungeRemovesDeletedMemoriesFromFiles removes a memory from an
// index of one segment, the case that bleve's own merges leave alone.
func TestExpungeRemovesDeletedMemoriesFromFiles(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ix.Close() }()
	const canary = "zqcanaryword"
	batch := []model.Memory{mem("secret", "", "the "+canary+" is here")}
	for i := range 50 {
		batch = append(batch, mem(fmt.Sprintf("m%02d", i), "", fmt.Sprintf("filler note %d about builds", i)))
	}
	apply(t, ix, batch...)
	if err := ix.Apply(nil, []string{"secret"}, 99); err != nil {
		t.Fatal(err)
	}
	if err := awaitPersisted(context.Background(), ix.persisted); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if !dictionaryHolds(t, dir, canary) {
		t.Fatal("the removed memory's word is in no dictionary before Expunge: the test proves nothing")
	}

	if ix, err = Open(dir, testOptions(t)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Expunge(context.Background()); err != nil {
		t.Fatalf("Expunge: %v", err)
	}
	if res := search(t, ix, Query{Text: "filler builds", Limit: 1000}); len(res.Hits) != 50 {
		t.Fatalf("%d hits for the other memories after Expunge, want 50", len(res.Hits))
	}
	if n, err := ix.Count(); err != nil || n != 50 {
		t.Fatalf("Count after Expunge = %d, %v; want 50", n, err)
	}
	if wm, err := ix.Watermark(); err != nil || wm != 99 {
		t.Fatalf("watermark after Expunge = %d, %v; want 99", wm, err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if dictionaryHolds(t, dir, canary) {
		t.Fatal("after Expunge the index files still hold the removed memory's word")
	}
}

// TestExpungeWhileASearchHoldsOldSegments: scorch deletes the files of old
// snapshots when it persists a new one, and keeps those a reader holds at
// that moment. A search that ends after the merged index is persisted
// must not leave Expunge waiting for a persist that nothing would make.
func TestExpungeWhileASearchHoldsOldSegments(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(t)
	opts.FlushDelay = -1 // as in the simulation, where a stall was seen
	ix, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for i := range 3 { // three batches: three segments to merge
		apply(t, ix, mem(fmt.Sprintf("m%d", i), "", fmt.Sprintf("note %d about builds", i)))
	}
	if err := ix.Apply(nil, []string{"m0"}, 9); err != nil {
		t.Fatal(err)
	}
	if err := awaitPersisted(context.Background(), ix.persisted); err != nil {
		t.Fatal(err)
	}
	old, err := segmentFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	adv, err := ix.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	reader, err := adv.Reader() // a search in progress
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ix.Expunge(ctx) }()
	// The search ends once the merged index is on disk beside the old
	// segments, which the search kept.
	for {
		now, err := segmentFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(now, func(f string) bool { return !slices.Contains(old, f) }) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Expunge returned before it merged: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	// The persist that wrote it, and could not delete the old files, is
	// over once the persister begins its loop again.
	wrote := persistAttempts(t, ix)
	testwait.Until(t, "the persister loops again", func() bool { return persistAttempts(t, ix) > wrote })
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Expunge after the search ended: %v", err)
	}
}
