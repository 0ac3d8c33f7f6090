package storage

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// benchRecord is a typical memory: ~1 KiB value, ~1 KiB document, 6 terms.
func benchRecord(id string) Record {
	return Record{
		Kind:  KindMemory,
		ID:    id,
		Doc:   []byte(strings.Repeat("d", 1024)),
		Heads: []string{strings.Repeat("ab", 32)},
		Value: []byte(strings.Repeat("v", 1024)),
		Terms: []Term{
			{"ns", "proj"}, {"status", "active"}, {"kind", "note"},
			{"tier", "agent"}, {"tag", "go"}, {"tag", "id-" + id},
		},
	}
}

// walSyncs counts the fsyncs of write-ahead log files.
type walSyncs struct {
	vfs.FS
	n *atomic.Int64
}

func (fs walSyncs) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(name)(fs.FS.Create(name, c))
}

func (fs walSyncs) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(name)(fs.FS.ReuseForWrite(old, name, c))
}

func (fs walSyncs) wrap(name string) func(vfs.File, error) (vfs.File, error) {
	return func(f vfs.File, err error) (vfs.File, error) {
		if err != nil || !strings.HasSuffix(name, ".log") {
			return f, err
		}
		return syncCountingFile{f, fs.n}, nil
	}
}

type syncCountingFile struct {
	vfs.File
	n *atomic.Int64
}

func (f syncCountingFile) Sync() error     { f.n.Add(1); return f.File.Sync() }
func (f syncCountingFile) SyncData() error { f.n.Add(1); return f.File.SyncData() }

// BenchmarkCommitSync measures durable Commits on disk. fsyncs/op below 1
// in the parallel case shows concurrent Commits sharing WAL syncs.
func BenchmarkCommitSync(b *testing.B) {
	run := func(b *testing.B, parallel bool) {
		var syncs atomic.Int64
		s := openAt(b, walSyncs{vfs.Default, &syncs}, b.TempDir())
		var workers atomic.Int64
		b.SetBytes(2048)
		b.ReportAllocs()
		b.ResetTimer()
		syncs.Store(0)
		if parallel {
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				w := workers.Add(1)
				for i := 0; pb.Next(); i++ {
					// Each goroutine updates its own documents.
					if _, err := s.Commit(benchRecord(fmt.Sprintf("w%d-%d", w, i%100))); err != nil {
						b.Error(err)
						return
					}
				}
			})
		} else {
			for i := 0; b.Loop(); i++ {
				if _, err := s.Commit(benchRecord(fmt.Sprintf("s-%d", i%1000))); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(syncs.Load())/float64(b.N), "fsyncs/op")
	}
	b.Run("serial", func(b *testing.B) { run(b, false) })
	b.Run("parallel", func(b *testing.B) { run(b, true) })
}

// fill commits n benchmark records with random ids, as memory ids are,
// 100 per Commit, and returns their ids.
func fill(b *testing.B, s *Store, n int) []string {
	b.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	ids := make([]string, n)
	for i := 0; i < n; i += 100 {
		recs := make([]Record, 0, 100)
		for j := i; j < min(i+100, n); j++ {
			ids[j] = fmt.Sprintf("%016x%010x", r.Uint64(), j)
			recs = append(recs, benchRecord(ids[j]))
		}
		commit(b, s, recs...)
	}
	settle(b, s)
	return ids
}

// settle flushes the memtable and waits for compactions, so that reads
// are measured on a steady LSM rather than against background work.
func settle(b *testing.B, s *Store) {
	b.Helper()
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.db.Metrics().Compact.NumInProgress > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

func BenchmarkGet(b *testing.B) {
	s := openAt(b, vfs.Default, b.TempDir())
	ids := fill(b, s, 10_000)
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(KindMemory, ids[r.IntN(len(ids))]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChanges reads the change log in pages of 1024 records, as the
// search indexer does.
func BenchmarkChanges(b *testing.B) {
	s := openAt(b, vfs.Default, b.TempDir())
	fill(b, s, 10_000) // 100 records per seq
	const page = 1024
	r := rand.New(rand.NewPCG(1, 2))
	records := 0
	b.ReportAllocs()
	for b.Loop() {
		after := uint64(r.IntN(int(s.DurableSeq()) - page/100))
		if _, err := s.Changes(after, page, func(Record) error {
			records++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
}
