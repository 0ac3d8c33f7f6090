package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/memmesh/memmesh/internal/homescan"
)

// storeWithCanary opens a store in dir on disk and commits many records,
// with flushes and several versions of the canary's record in between, so
// that the canary's values sit in the log, the memtable and tables of
// several levels. It returns the store and the canary's record.
func storeWithCanary(t *testing.T, dir, canary string) (*Store, Record) {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret := memory("secretid", "old "+canary, Term{"tag", canary + "-tag"}, Term{"ns", "proj"})
	for round := range 4 {
		var batch []Record
		for i := range 200 {
			batch = append(batch, memory(fmt.Sprintf("r%d-%03d", round, i), strings.Repeat("filler ", 20), Term{"ns", "proj"}))
		}
		commit(t, s, batch...)
		if round == 1 {
			commit(t, s, secret)
		}
		if round == 2 {
			secret = memory("secretid", "new "+canary, Term{"tag", canary + "-tag2"}, Term{"ns", "proj"})
			commit(t, s, secret)
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
		if round == 2 {
			if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// And once more in the live log and memtable.
	commit(t, s, memory("secretid", "newest "+canary, Term{"tag", canary + "-tag3"}, Term{"ns", "proj"}))
	if got := homescan.Holding(t, dir, canary); len(got) == 0 {
		t.Fatalf("the canary is in no file before the erasure: the test proves nothing")
	}
	return s, secret
}

func TestEraseThenExpungeLeavesNothingInFiles(t *testing.T) {
	dir := t.TempDir()
	const canary = "c4nary-9f3k2"
	s, _ := storeWithCanary(t, dir, canary)
	defer s.Close()
	before := digest(t, s)

	seq := commit(t, s, Record{Kind: KindMemory, ID: "secretid", Erase: true},
		Record{Kind: KindPurge, ID: "secretid", Heads: []string{"h"}, Value: []byte("tombstone"), Doc: []byte("tombstone")})
	if !s.ErasePending() {
		t.Fatal("ErasePending is false after an erasure")
	}
	if _, err := s.Get(KindMemory, "secretid"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of an erased record: %v, want ErrNotFound", err)
	}
	if _, err := s.GetDoc(KindMemory, "secretid"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetDoc of an erased document: %v, want ErrNotFound", err)
	}
	if ids := scanIDs(t, s, KindMemory, Term{"ns", "proj"}); len(ids) != 800 {
		t.Fatalf("%d memories in ns proj after the erasure, want the 800 others", len(ids))
	}
	recs, _ := changes(t, s, 0, 0)
	for _, r := range recs {
		if r.Kind == KindMemory && r.ID == "secretid" {
			t.Fatal("the change log still lists the erased record")
		}
	}
	if recs[len(recs)-1].Seq != seq || recs[len(recs)-1].Kind != KindPurge {
		t.Fatalf("the last change is %v %s, want the tombstone", recs[len(recs)-1].Kind, recs[len(recs)-1].ID)
	}
	// The digest is what the store holds: the erased share is gone.
	if got, want := digest(t, s), digestFromScratch(t, s); got != want {
		t.Fatal("digest after the erasure differs from the digest of what is stored")
	}
	if digest(t, s) == before {
		t.Fatal("digest did not change")
	}

	if err := s.Expunge(context.Background()); err != nil {
		t.Fatalf("Expunge: %v", err)
	}
	if s.ErasePending() {
		t.Fatal("ErasePending after Expunge")
	}
	if got := homescan.Holding(t, dir, canary); len(got) > 0 {
		t.Fatalf("after Expunge these files still hold the canary: %v", got)
	}
	// The rest is intact.
	if got, err := s.Get(KindMemory, "r3-199"); err != nil || !strings.HasPrefix(string(got.Value), "filler") {
		t.Fatalf("another record after Expunge: %v %q", err, got.Value)
	}
	if got, err := s.Get(KindPurge, "secretid"); err != nil || string(got.Value) != "tombstone" {
		t.Fatalf("the tombstone after Expunge: %v %q", err, got.Value)
	}
}

func TestExpungeAfterCrashCompactsEverything(t *testing.T) {
	dir := t.TempDir()
	const canary = "c4nary-7h1x0"
	s, _ := storeWithCanary(t, dir, canary)
	commit(t, s, Record{Kind: KindMemory, ID: "secretid", Erase: true})
	// Closing without Expunge stands for a crash after the erasure: the
	// keys to compact were known only to the process that is gone.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.ErasePending() {
		t.Fatal("ErasePending is false after reopening a store whose erasure was not expunged")
	}
	if err := s.Expunge(context.Background()); err != nil {
		t.Fatalf("Expunge: %v", err)
	}
	if got := homescan.Holding(t, dir, canary); len(got) > 0 {
		t.Fatalf("after Expunge these files still hold the canary: %v", got)
	}
	if s.ErasePending() {
		t.Fatal("ErasePending after Expunge")
	}
}

func TestEraseMissingAndTwice(t *testing.T) {
	s := openAt(t, vfs.NewMem(), "db")
	commit(t, s, memory("a", "x"))
	before := digest(t, s)
	// Erasing what is not stored changes nothing and leaves nothing to do.
	commit(t, s, Record{Kind: KindMemory, ID: "nope", Erase: true}, memory("b", "y"))
	if s.ErasePending() {
		t.Fatal("ErasePending after erasing a missing record")
	}
	commit(t, s, Record{Kind: KindMemory, ID: "b", Erase: true})
	if digest(t, s) != before {
		t.Fatal("digest after adding and erasing b differs from before")
	}
	if _, err := s.Commit(Record{Kind: KindMemory, ID: "a", Erase: true}, memory("a", "z")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("erasing and writing one record in one commit: %v, want ErrInvalid", err)
	}
}

// TestExpungeDropsTombstonesMovedDown erases a record written in the same
// memtable: the flush drops the value under the deletion, whose table then
// lands on empty levels, where a compaction moves it down whole instead of
// rewriting it; the tombstone keeps its key (a tag, here) until a later
// compaction meets it at the last level.
func TestExpungeDropsTombstonesMovedDown(t *testing.T) {
	const canary = "c4nary-m0ved"
	for i := range 20 {
		dir := t.TempDir()
		s, err := Open(dir, Options{TextTerms: []string{"tag"}})
		if err != nil {
			t.Fatal(err)
		}
		commit(t, s, memory("other", "a record that stays", Term{"ns", "proj"}))
		commit(t, s, memory("secretid", "a value", Term{"tag", fmt.Sprintf("%s-%d", canary, i)}, Term{"ns", "proj"}))
		commit(t, s, Record{Kind: KindMemory, ID: "secretid", Erase: true})
		if err := s.Expunge(context.Background()); err != nil {
			t.Fatalf("Expunge: %v", err)
		}
		if got := homescan.Holding(t, dir, canary); len(got) > 0 {
			t.Fatalf("round %d: after Expunge these files still hold the erased tag: %v", i, got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExpungeScanSkipsDigestMerges: after a crash an expunge looks for
// deletion tombstones in the whole keyspace. A commit that lands between
// its compaction and that scan adds a merge operand to the digest; the
// scan (Pebble's ScanInternal) panicked on it, taking the daemon down.
// The scan runs here right after a commit, with nothing compacted.
func TestExpungeScanSkipsDigestMerges(t *testing.T) {
	s := openMem(t)
	commit(t, s, memory("a", "v1", Term{"tag", "x"}))
	if _, err := s.tombstones(context.Background(), nil, true); err != nil {
		t.Fatal(err)
	}
}

// TestLoggedErasure: an erasure with Logged set leaves an entry that
// those who follow the change log read as the document's erasure, until
// the document is stored again; then only the newer entry is read.
func TestLoggedErasure(t *testing.T) {
	s := openAt(t, vfs.NewMem(), "db")
	commit(t, s, memory("a", "x"), memory("b", "y"))
	start := s.DurableSeq()
	commit(t, s, Record{Kind: KindMemory, ID: "a", Erase: true, Logged: true})
	commit(t, s, Record{Kind: KindMemory, ID: "nope", Erase: true, Logged: true}, memory("c", "z"))
	changes := func(after uint64) []string {
		var out []string
		if _, err := s.Changes(after, 0, func(r Record) error {
			out = append(out, fmt.Sprintf("%s erase=%v", r.ID, r.Erase))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := strings.Join(changes(0), ","), "b erase=false,a erase=true,c erase=false"; got != want {
		t.Fatalf("changes %s, want %s (an erasure of what is not stored logs nothing)", got, want)
	}
	if _, err := s.Get(KindMemory, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get an erased document: %v", err)
	}
	commit(t, s, memory("a", "back"))
	if got, want := strings.Join(changes(start), ","), "c erase=false,a erase=false"; got != want {
		t.Fatalf("changes after a's return %s, want %s", got, want)
	}
}

// TestAside keeps bytes aside for a document through a rewrite and an
// erasure that carry them, and drops them with an erasure that does not:
// a purge leaves nothing of the memory.
func TestAside(t *testing.T) {
	s := openAt(t, vfs.NewMem(), "db")
	defer s.Close()
	aside := func(id string) string {
		t.Helper()
		v, err := s.Aside(KindMemory, id)
		if errors.Is(err, ErrNotFound) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	commit(t, s, memory("a", "x"), memory("b", "y"))
	rewritten := memory("a", "x without what was refused")
	rewritten.Aside = []byte("a as it was")
	commit(t, s, rewritten, Record{Kind: KindMemory, ID: "b", Erase: true, Logged: true, Aside: []byte("b as it was")})
	if aside("a") != "a as it was" || aside("b") != "b as it was" {
		t.Fatalf("kept aside: a %q, b %q", aside("a"), aside("b"))
	}
	commit(t, s, memory("a", "edited again"))
	var kept []string
	if err := s.Asides(func(kind Kind, id string, doc []byte) error {
		kept = append(kept, fmt.Sprintf("%v %s %s", kind, id, doc))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 {
		t.Fatalf("Asides after a plain write: %q, want both kept", kept)
	}
	// A purge erases the stored memory a, and the memory b that only
	// its aside holds.
	commit(t, s, Record{Kind: KindMemory, ID: "a", Erase: true}, Record{Kind: KindMemory, ID: "b", Erase: true})
	if aside("a") != "" || aside("b") != "" {
		t.Fatalf("kept aside after erasures: a %q, b %q", aside("a"), aside("b"))
	}
	if _, err := s.Get(KindMemory, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of the erased a: %v, want ErrNotFound", err)
	}
	if _, err := s.GetDoc(KindMemory, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetDoc of the erased a: %v, want ErrNotFound", err)
	}
	if !s.ErasePending() {
		t.Fatal("no expunge pending after dropping what was kept aside")
	}
	commit(t, s, Record{Kind: KindMemory, ID: "c", Erase: true, Aside: []byte("c")})
	if err := s.DropAside(KindMemory, "c"); err != nil {
		t.Fatal(err)
	}
	if aside("c") != "" {
		t.Fatal("DropAside left it")
	}
}
