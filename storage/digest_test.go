package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// storedDigest reads the digest's buckets from the database, as Open
// does: the merges of every commit's shares.
func storedDigest(tb testing.TB, s *Store) [256][32]byte {
	tb.Helper()
	var d [256][32]byte
	err := forEach(s.db, "digest", prefixOptions([]byte{prefixDigest}), func(k, v []byte) error {
		copy(d[k[1]][:], v)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// checkDigest fails the test unless the digest the store keeps in memory
// is the one recomputed from every record and the one stored in Pebble.
func checkDigest(tb testing.TB, s *Store, when string) {
	tb.Helper()
	got := digest(tb, s)
	if want := digestFromScratch(tb, s); got != want {
		tb.Fatalf("%s: the digest differs from the one recomputed from the records", when)
	}
	if stored := storedDigest(tb, s); got != stored {
		tb.Fatalf("%s: the digest differs from the one stored", when)
	}
}

// randomCommits commits n random batches to s from four goroutines, each
// owning its documents: new documents (some as NoneAt), new versions,
// erasures, and versions with the same heads.
func randomCommits(tb testing.TB, s *Store, r *rand.Rand, round, n int) {
	tb.Helper()
	kinds := []Kind{KindMemory, KindEdge, KindMesh, KindPurge}
	var wg sync.WaitGroup
	for w := range 4 {
		wr := rand.New(rand.NewPCG(r.Uint64(), uint64(w)))
		wg.Go(func() {
			for range n {
				recs := make([]Record, 1+wr.IntN(4))
				picked := wr.Perm(12)
				for i := range recs {
					id := fmt.Sprintf("w%d-d%02d", w, picked[i])
					rec := Record{Kind: kinds[picked[i]%len(kinds)], ID: id, Heads: randomHeads(wr),
						Value: fmt.Appendf(nil, "%d", wr.IntN(100)), Terms: []Term{{"tag", fmt.Sprint(wr.IntN(3))}}}
					switch wr.IntN(6) {
					case 0:
						rec = Record{Kind: rec.Kind, ID: id, Erase: true}
					case 1:
						rec.ID = fmt.Sprintf("w%d-r%d-n%d", w, round, wr.Uint64())
						rec.NoneAt = s.Applied()
					case 2:
						if old, err := s.Get(rec.Kind, id); err == nil {
							rec.Heads = old.Heads
						}
					}
					recs[i] = rec
				}
				if _, err := s.Commit(recs...); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDigestInMemoryIsTheStoredOne: the digest the store keeps in memory
// stays the one recomputed from the records and the one Pebble stores,
// through random concurrent commits, erasures and expunges, reopens, and
// a home restored from an older copy.
func TestDigestInMemoryIsTheStoredOne(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	dir := filepath.Join(t.TempDir(), "db")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	reopen := func() {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = Open(dir, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	copyDir := filepath.Join(t.TempDir(), "copy")
	for round := range 8 {
		randomCommits(t, s, r, round, 40)
		checkDigest(t, s, fmt.Sprintf("round %d", round))
		switch round {
		case 2:
			if err := s.Expunge(t.Context()); err != nil {
				t.Fatal(err)
			}
			checkDigest(t, s, "after an expunge")
		case 3:
			reopen()
			checkDigest(t, s, "reopened")
		case 4:
			// A copy of the home, restored after more commits.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(copyDir, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, Options{}); err != nil {
				t.Fatal(err)
			}
		case 6:
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(dir, os.DirFS(copyDir)); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, Options{}); err != nil {
				t.Fatal(err)
			}
			checkDigest(t, s, "restored from the copy")
		}
	}
}
