package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// openMem opens a store on a fresh in-memory filesystem and closes it at
// the end of the test.
func openMem(tb testing.TB) *Store {
	tb.Helper()
	return openAt(tb, vfs.NewMem(), "db")
}

func openAt(tb testing.TB, fs vfs.FS, dir string) *Store {
	tb.Helper()
	s, err := Open(dir, Options{FS: fs})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func commit(tb testing.TB, s *Store, recs ...Record) uint64 {
	tb.Helper()
	seq, err := s.Commit(recs...)
	if err != nil {
		tb.Fatalf("Commit: %v", err)
	}
	return seq
}

func memory(id, value string, terms ...Term) Record {
	return Record{
		Kind:  KindMemory,
		ID:    id,
		Doc:   []byte("doc:" + id + ":" + value),
		Heads: []string{fmt.Sprintf("%x", sha256.Sum256([]byte(id+value)))},
		Value: []byte(value),
		Terms: terms,
	}
}

func scanIDs(tb testing.TB, s *Store, kind Kind, t Term) []string {
	tb.Helper()
	var ids []string
	if err := s.Scan(kind, t, func(id string) error {
		ids = append(ids, id)
		return nil
	}); err != nil {
		tb.Fatalf("Scan %v: %v", t, err)
	}
	return ids
}

func changes(tb testing.TB, s *Store, after uint64, limit int) ([]Record, uint64) {
	tb.Helper()
	var recs []Record
	last, err := s.Changes(after, limit, func(r Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		tb.Fatalf("Changes: %v", err)
	}
	return recs, last
}

func ids(recs []Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Kind)+"/"+r.ID)
	}
	return out
}

func TestCommitGetRoundTrip(t *testing.T) {
	s := openMem(t)
	rec := memory("k3j5", `{"title":"x"}`, Term{"ns", "proj"}, Term{"tag", "go"})
	rec.Heads = []string{"bb", "aa"}
	seq := commit(t, s, rec)
	if seq != 1 || s.DurableSeq() != 1 {
		t.Fatalf("seq %d, DurableSeq %d; want 1, 1", seq, s.DurableSeq())
	}

	got, err := s.Get(KindMemory, "k3j5")
	if err != nil {
		t.Fatal(err)
	}
	want := rec
	want.Doc, want.Seq = nil, seq
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Get = %+v\nwant  %+v", got, want)
	}
	doc, err := s.GetDoc(KindMemory, "k3j5")
	if err != nil || !bytes.Equal(doc, rec.Doc) {
		t.Errorf("GetDoc = %q, %v; want %q", doc, err, rec.Doc)
	}

	if _, err := s.Get(KindEdge, "k3j5"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of another kind: %v, want ErrNotFound", err)
	}
	if _, err := s.GetDoc(KindMemory, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetDoc of a missing id: %v, want ErrNotFound", err)
	}
	if got := scanIDs(t, s, KindMemory, Term{"tag", "go"}); !slices.Equal(got, []string{"k3j5"}) {
		t.Errorf("Scan tag=go = %v", got)
	}
}

func TestNilDocKeepsDocument(t *testing.T) {
	s := openMem(t)
	first := memory("a", "v1")
	commit(t, s, first)
	second := memory("a", "v2")
	second.Doc = nil
	commit(t, s, second)

	doc, err := s.GetDoc(KindMemory, "a")
	if err != nil || !bytes.Equal(doc, first.Doc) {
		t.Errorf("GetDoc = %q, %v; want the first document %q", doc, err, first.Doc)
	}
	if got, _ := s.Get(KindMemory, "a"); string(got.Value) != "v2" {
		t.Errorf("Value = %q, want v2", got.Value)
	}
}

func TestUpdateReplacesTermsAndChange(t *testing.T) {
	s := openMem(t)
	commit(t, s, memory("a", "v1", Term{"tag", "old"}, Term{"tag", "kept"}, Term{"status", "active"}))
	commit(t, s, memory("b", "v1", Term{"tag", "old"}))
	seq := commit(t, s, memory("a", "v2", Term{"tag", "kept"}, Term{"tag", "new"}, Term{"status", "stale"}))

	for _, tc := range []struct {
		term Term
		want []string
	}{
		{Term{"tag", "old"}, []string{"b"}},
		{Term{"tag", "kept"}, []string{"a"}},
		{Term{"tag", "new"}, []string{"a"}},
		{Term{"status", "active"}, nil},
		{Term{"status", "stale"}, []string{"a"}},
	} {
		if got := scanIDs(t, s, KindMemory, tc.term); !slices.Equal(got, tc.want) {
			t.Errorf("Scan %v = %v, want %v", tc.term, got, tc.want)
		}
	}

	recs, _ := changes(t, s, 0, 0)
	if got := ids(recs); !slices.Equal(got, []string{"m/b", "m/a"}) {
		t.Fatalf("Changes = %v, want [m/b m/a]", got)
	}
	if recs[1].Seq != seq || string(recs[1].Value) != "v2" {
		t.Errorf("change of a = seq %d %q, want seq %d v2", recs[1].Seq, recs[1].Value, seq)
	}
}

func TestScanPrefix(t *testing.T) {
	s := openMem(t)
	commit(t, s,
		memory("a", "", Term{"created", "2024-01-05"}),
		memory("b", "", Term{"created", "2024-02-01"}),
		memory("c", "", Term{"created", "2024-01-20"}, Term{"creator", "x"}),
		memory("d", "", Term{"created", "2023-12-31"}),
	)
	var got []string
	err := s.ScanPrefix(KindMemory, "created", "2024-01", func(term Term, id string) error {
		got = append(got, term.Field+"="+term.Value+":"+id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"created=2024-01-05:a", "created=2024-01-20:c"}
	if !slices.Equal(got, want) {
		t.Errorf("ScanPrefix = %v, want %v", got, want)
	}

	stop := errors.New("stop")
	n := 0
	err = s.ScanPrefix(KindMemory, "created", "", func(Term, string) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("ScanPrefix with a failing callback: %v after %d calls, want stop after 1", err, n)
	}
}

func TestScanTerms(t *testing.T) {
	s := openMem(t)
	commit(t, s,
		memory("a", "", Term{"hash", "x"}),
		memory("b", "", Term{"hash", "xy"}),
		memory("c", "", Term{"hash", "x"}, Term{"hasher", "x"}),
		memory("d", "", Term{"hash", "z"}),
		memory("e", "", Term{"hash", "w"}),
	)
	var got []string
	err := s.ScanTerms(KindMemory, "hash", []string{"z", "x", "q", "x", "xy"}, func(value, id string) error {
		got = append(got, value+":"+id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each value once, in value order; "x" is not a prefix match of "xy"
	// and the field "hasher" is not "hash".
	want := []string{"x:a", "x:c", "xy:b", "z:d"}
	if !slices.Equal(got, want) {
		t.Errorf("ScanTerms = %v, want %v", got, want)
	}

	stop := errors.New("stop")
	n := 0
	err = s.ScanTerms(KindMemory, "hash", []string{"x", "z"}, func(string, string) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("ScanTerms with a failing callback: %v after %d calls, want stop after 1", err, n)
	}
	if err := s.ScanTerms(KindMemory, "hash", []string{"a\x00b"}, func(string, string) error { return nil }); !errors.Is(err, ErrInvalid) {
		t.Errorf("ScanTerms with a NUL in a value: %v, want ErrInvalid", err)
	}
}

func TestChanges(t *testing.T) {
	s := openMem(t)
	commit(t, s, memory("a", "1"))                   // 1, superseded by 4
	commit(t, s, memory("b", "1"))                   // 2
	commit(t, s, memory("c", "1"), memory("d", "1")) // 3, two records
	commit(t, s, memory("a", "2"))                   // 4
	edge := Record{Kind: KindEdge, ID: "e1", Heads: []string{"01"}, Value: []byte("{}")}
	commit(t, s, edge) // 5

	all, last := changes(t, s, 0, 0)
	if got, want := ids(all), []string{"m/b", "m/c", "m/d", "m/a", "e/e1"}; !slices.Equal(got, want) {
		t.Fatalf("Changes(0) = %v, want %v", got, want)
	}
	if last != 5 {
		t.Errorf("last = %d, want 5", last)
	}
	if string(all[3].Value) != "2" || all[3].Seq != 4 {
		t.Errorf("a = %q seq %d, want the latest version 2 at seq 4", all[3].Value, all[3].Seq)
	}
	for _, r := range all {
		if r.Doc != nil {
			t.Errorf("Changes returned document bytes for %s", r.ID)
		}
	}

	// Resuming page by page visits every change once; a Commit of two
	// records is never split.
	for _, tc := range []struct {
		after uint64
		limit int
		want  []string
		last  uint64
	}{
		{0, 1, []string{"m/b"}, 2},
		{2, 1, []string{"m/c", "m/d"}, 3},
		{3, 2, []string{"m/a", "e/e1"}, 5},
		{5, 10, nil, 5},
		{1, 0, []string{"m/b", "m/c", "m/d", "m/a", "e/e1"}, 5},
		{4, -1, []string{"e/e1"}, 5},
	} {
		recs, last := changes(t, s, tc.after, tc.limit)
		if got := ids(recs); !slices.Equal(got, tc.want) || last != tc.last {
			t.Errorf("Changes(%d, %d) = %v, %d; want %v, %d", tc.after, tc.limit, got, last, tc.want, tc.last)
		}
	}

	stop := errors.New("stop")
	last, err := s.Changes(0, 0, func(r Record) error {
		if r.ID == "d" {
			return stop
		}
		return nil
	})
	if err != stop || last != 2 {
		t.Errorf("Changes stopped inside seq 3 = %d, %v; want 2, stop", last, err)
	}
}

// digestFromScratch recomputes the digest from every record, following
// the definition in the package comment.
func digestFromScratch(tb testing.TB, s *Store) [256][32]byte {
	tb.Helper()
	var out [256][32]byte
	for _, kind := range []Kind{KindMemory, KindEdge, KindMesh, KindPurge} {
		err := s.All(kind, func(r Record) error {
			bucket := sha256.Sum256(append([]byte{byte(kind)}, r.ID...))[0]
			b := append([]byte{byte(kind)}, r.ID...)
			for _, h := range slices.Sorted(slices.Values(r.Heads)) {
				b = append(append(b, 0), h...)
			}
			sum := sha256.Sum256(b)
			for i := range sum {
				out[bucket][i] ^= sum[i]
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

func digest(tb testing.TB, s *Store) [256][32]byte {
	tb.Helper()
	d, err := s.Digest()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func randomHeads(r *rand.Rand) []string {
	heads := make([]string, 1+r.IntN(3))
	for i := range heads {
		heads[i] = fmt.Sprintf("%016x", r.Uint64())
	}
	return heads
}

func TestConcurrentCommits(t *testing.T) {
	s := openMem(t)
	const workers, docsEach, rounds = 16, 8, 40
	kinds := []Kind{KindMemory, KindEdge, KindMesh}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				// Each worker owns its documents, so no document is
				// committed by two goroutines at once.
				recs := make([]Record, 1+r.IntN(3))
				picked := r.Perm(docsEach)
				for i := range recs {
					recs[i] = Record{
						Kind:  kinds[picked[i]%len(kinds)],
						ID:    fmt.Sprintf("w%02d-d%d", w, picked[i]),
						Heads: randomHeads(r),
						Value: fmt.Appendf(nil, "%d", r.IntN(100)),
						Terms: []Term{{"tag", fmt.Sprint(r.IntN(4))}, {"worker", fmt.Sprint(w)}},
					}
				}
				seq, err := s.Commit(recs...)
				if err != nil {
					t.Error(err)
					return
				}
				if d := s.DurableSeq(); d < seq {
					t.Errorf("DurableSeq %d < returned seq %d", d, seq)
				}
			}
		})
	}
	wg.Wait()

	want := digestFromScratch(t, s)
	if digest(t, s) != want {
		t.Error("digest differs from the digest recomputed from scratch")
	}
	// Merge operands combined by flushes and compactions give the same.
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	if digest(t, s) != want {
		t.Error("digest changed by compaction")
	}

	// Every document appears once in the change log, under its seq, and
	// each of its terms finds it.
	recs, last := changes(t, s, 0, 0)
	if last != s.DurableSeq() {
		t.Errorf("Changes ended at %d, DurableSeq is %d", last, s.DurableSeq())
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.ID] {
			t.Errorf("%s appears twice in the change log", r.ID)
		}
		seen[r.ID] = true
		for _, term := range r.Terms {
			if !slices.Contains(scanIDs(t, s, r.Kind, term), r.ID) {
				t.Errorf("Scan %v misses %s", term, r.ID)
			}
		}
	}
	total := 0
	for _, kind := range kinds {
		n, err := s.Count(kind)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		terms := 0
		if err := s.ScanPrefix(kind, "tag", "", func(Term, string) error { terms++; return nil }); err != nil {
			t.Fatal(err)
		}
		if terms != n {
			t.Errorf("%v: %d tag terms for %d documents (stale terms left behind?)", kind, terms, n)
		}
	}
	if total != len(recs) {
		t.Errorf("%d documents, %d in the change log", total, len(recs))
	}
}

func TestDigestIndependentOfOrder(t *testing.T) {
	final := make([]Record, 50)
	for i := range final {
		final[i] = memory(fmt.Sprintf("doc%02d", i), "final")
		final[i].Heads = []string{fmt.Sprintf("h%d", i), fmt.Sprintf("g%d", i)}
	}
	a, b := openMem(t), openMem(t)
	if digest(t, a) != ([256][32]byte{}) {
		t.Error("empty store has a non-zero digest")
	}
	for _, r := range final {
		commit(t, a, r)
	}
	// b sees other versions first, in another order, with heads in another
	// order, and some documents committed together.
	for i := len(final) - 1; i >= 0; i-- {
		commit(t, b, memory(final[i].ID, "draft"))
	}
	for i := 0; i < len(final); i += 2 {
		x, y := final[i], final[i+1]
		x.Heads = []string{x.Heads[1], x.Heads[0]}
		commit(t, b, y, x)
	}
	if digest(t, a) != digest(t, b) {
		t.Error("same documents, different digests")
	}
	commit(t, b, memory("doc00", "diverged"))
	da, db := digest(t, a), digest(t, b)
	differ := 0
	for i := range da {
		if da[i] != db[i] {
			differ++
		}
	}
	if differ != 1 {
		t.Errorf("one changed document changed %d buckets, want 1", differ)
	}
}

func TestIDsWithPrefix(t *testing.T) {
	s := openMem(t)
	for _, id := range []string{"k3j5aa", "k3j5ab", "k3j6zz", "k4", "zz"} {
		commit(t, s, memory(id, ""))
	}
	commit(t, s, Record{Kind: KindEdge, ID: "k3j5ee"})
	for _, tc := range []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"k3j5", 0, []string{"k3j5aa", "k3j5ab"}},
		{"k3j5", 1, []string{"k3j5aa"}},
		{"k3", 2, []string{"k3j5aa", "k3j5ab"}},
		{"k3j5ab", 0, []string{"k3j5ab"}},
		{"k3j5abc", 0, nil},
		{"", -1, []string{"k3j5aa", "k3j5ab", "k3j6zz", "k4", "zz"}},
		{"q", 0, nil},
	} {
		got, err := s.IDsWithPrefix(KindMemory, tc.prefix, tc.limit)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("IDsWithPrefix(%q, %d) = %v, %v; want %v", tc.prefix, tc.limit, got, err, tc.want)
		}
	}
}

func TestAllAndCount(t *testing.T) {
	s := openMem(t)
	commit(t, s, memory("b", "2"), memory("a", "1"), Record{Kind: KindMesh, ID: "devices", Value: []byte("r")})
	commit(t, s, memory("a", "1b"))
	var got []string
	if err := s.All(KindMemory, func(r Record) error {
		got = append(got, r.ID+"="+string(r.Value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a=1b", "b=2"}; !slices.Equal(got, want) {
		t.Errorf("All = %v, want %v", got, want)
	}
	for kind, want := range map[Kind]int{KindMemory: 2, KindEdge: 0, KindMesh: 1} {
		if n, err := s.Count(kind); err != nil || n != want {
			t.Errorf("Count(%v) = %d, %v; want %d", kind, n, err, want)
		}
	}
}

func TestLocal(t *testing.T) {
	s := openMem(t)
	if _, err := s.GetLocal("access/a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetLocal of a missing key: %v, want ErrNotFound", err)
	}
	if err := s.PutLocal("access/a", []byte("3")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetLocal("access/a"); err != nil || string(v) != "3" {
		t.Errorf("GetLocal = %q, %v; want 3", v, err)
	}
	if err := s.PutLocal("access/b", []byte("5")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutLocal("brief/x", []byte("t")); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := s.ScanLocal("access/", func(k string, v []byte) error {
		got = append(got, k+"="+string(v))
		return nil
	})
	if want := []string{"access/a=3", "access/b=5"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ScanLocal = %v, %v; want %v", got, err, want)
	}
	got = nil
	err = s.ScanLocalFrom("access/", "b", func(k string, v []byte) error {
		got = append(got, k)
		return nil
	})
	if want := []string{"access/b"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ScanLocalFrom = %v, %v; want %v", got, err, want)
	}
	if err := s.DeleteLocalPrefix("access/"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLocal("access/a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetLocal after DeleteLocalPrefix: %v, want ErrNotFound", err)
	}
	if v, err := s.GetLocal("brief/x"); err != nil || string(v) != "t" {
		t.Errorf("a key outside the prefix after DeleteLocalPrefix: %q, %v", v, err)
	}
	if err := s.DeleteLocalPrefix(""); !errors.Is(err, ErrInvalid) {
		t.Errorf("DeleteLocalPrefix of everything: %v, want ErrInvalid", err)
	}
	if s.DurableSeq() != 0 || digest(t, s) != ([256][32]byte{}) {
		t.Error("local data reached the change log or the digest")
	}
}

func TestWriteLocal(t *testing.T) {
	s := openMem(t)
	if err := s.WriteLocal(map[string][]byte{"sym/a": []byte("1"), "sym/b": []byte("2")}, nil); err != nil {
		t.Fatal(err)
	}
	// A key both deleted and set ends set; a deleted key is gone.
	if err := s.WriteLocal(map[string][]byte{"sym/b": []byte("3"), "sym/c": []byte("4")}, []string{"sym/a", "sym/b"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := s.ScanLocal("sym/", func(k string, v []byte) error {
		got = append(got, k+"="+string(v))
		return nil
	})
	if want := []string{"sym/b=3", "sym/c=4"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ScanLocal = %v, %v; want %v", got, err, want)
	}
	if err := s.WriteLocal(map[string][]byte{"sym/d": nil, "": []byte("x")}, []string{"sym/b"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("WriteLocal of an empty key: %v, want ErrInvalid", err)
	}
	if v, err := s.GetLocal("sym/b"); err != nil || string(v) != "3" {
		t.Errorf("a refused WriteLocal changed sym/b: %q, %v", v, err)
	}
	if s.DurableSeq() != 0 {
		t.Error("local data reached the change log")
	}
}

func TestInvalidInputChangesNothing(t *testing.T) {
	s := openMem(t)
	commit(t, s, memory("a", "v1", Term{"tag", "x"}))
	before := digest(t, s)

	valid := memory("b", "v1", Term{"tag", "y"})
	bad := func(edit func(r *Record)) Record {
		r := memory("a", "v2", Term{"tag", "z"})
		edit(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		recs []Record
	}{
		{"no records", nil},
		{"unknown kind", []Record{bad(func(r *Record) { r.Kind = 'q' })}},
		{"empty id", []Record{bad(func(r *Record) { r.ID = "" })}},
		{"NUL in id", []Record{bad(func(r *Record) { r.ID = "a\x00b" })}},
		{"long id", []Record{bad(func(r *Record) { r.ID = strings.Repeat("i", MaxIDLen+1) })}},
		{"NUL in field", []Record{bad(func(r *Record) { r.Terms = []Term{{"t\x00g", "x"}} })}},
		{"NUL in value", []Record{bad(func(r *Record) { r.Terms = []Term{{"tag", "x\x00"}} })}},
		{"empty field", []Record{bad(func(r *Record) { r.Terms = []Term{{"", "x"}} })}},
		{"long term", []Record{bad(func(r *Record) { r.Terms = []Term{{"tag", strings.Repeat("v", MaxTermLen)}} })}},
		{"empty head", []Record{bad(func(r *Record) { r.Heads = []string{""} })}},
		{"NUL in head", []Record{bad(func(r *Record) { r.Heads = []string{"a\x00"} })}},
		{"value too big", []Record{bad(func(r *Record) { r.Value = make([]byte, MaxValueSize+1) })}},
		{"doc too big", []Record{bad(func(r *Record) { r.Doc = make([]byte, MaxDocSize+1) })}},
		{"valid then invalid", []Record{valid, bad(func(r *Record) { r.Kind = 0 })}},
		{"same document twice", []Record{valid, memory("b", "v2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Commit(tc.recs...); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Commit: %v, want ErrInvalid", err)
			}
			if s.DurableSeq() != 1 || digest(t, s) != before {
				t.Error("a rejected Commit changed the store")
			}
			if got, _ := s.Get(KindMemory, "a"); string(got.Value) != "v1" {
				t.Errorf("a = %q, want v1", got.Value)
			}
			if _, err := s.Get(KindMemory, "b"); !errors.Is(err, ErrNotFound) {
				t.Errorf("b: %v, want ErrNotFound", err)
			}
			if got := scanIDs(t, s, KindMemory, Term{"tag", "x"}); !slices.Equal(got, []string{"a"}) {
				t.Errorf("Scan tag=x = %v, want [a]", got)
			}
		})
	}

	for name, err := range map[string]error{
		"Get":           func() error { _, err := s.Get(KindMemory, "a\x00"); return err }(),
		"Get kind":      func() error { _, err := s.Get(0, "a"); return err }(),
		"GetDoc":        func() error { _, err := s.GetDoc(KindEdge, ""); return err }(),
		"Scan":          s.Scan(KindMemory, Term{"tag", "a\x00"}, func(string) error { return nil }),
		"ScanPrefix":    s.ScanPrefix(KindMemory, "", "x", func(Term, string) error { return nil }),
		"IDsWithPrefix": func() error { _, err := s.IDsWithPrefix(KindMemory, "\x00", 0); return err }(),
		"All":           s.All('?', func(Record) error { return nil }),
		"Count":         func() error { _, err := s.Count('?'); return err }(),
		"PutLocal":      s.PutLocal("", nil),
		"GetLocal":      func() error { _, err := s.GetLocal(""); return err }(),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		commit(t, s, memory(fmt.Sprintf("m%02d", i), "v1", Term{"tag", "t"}))
	}
	commit(t, s, memory("m03", "v2", Term{"tag", "u"}))
	if err := s.PutLocal("k", []byte("local")); err != nil {
		t.Fatal(err)
	}
	wantDigest, wantSeq := digest(t, s), s.DurableSeq()
	wantChanges, _ := changes(t, s, 0, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, vfs.Default, dir)
	if s.DurableSeq() != wantSeq || s.SchemaVersion() != schemaVersion {
		t.Errorf("reopened at seq %d schema %d, want %d %d", s.DurableSeq(), s.SchemaVersion(), wantSeq, schemaVersion)
	}
	if digest(t, s) != wantDigest {
		t.Error("digest changed across reopen")
	}
	if got, _ := changes(t, s, 0, 0); fmt.Sprint(got) != fmt.Sprint(wantChanges) {
		t.Errorf("changes after reopen:\n%v\nwant\n%v", got, wantChanges)
	}
	if v, err := s.GetLocal("k"); err != nil || string(v) != "local" {
		t.Errorf("GetLocal = %q, %v", v, err)
	}
	if got := scanIDs(t, s, KindMemory, Term{"tag", "u"}); !slices.Equal(got, []string{"m03"}) {
		t.Errorf("Scan tag=u = %v", got)
	}
	if seq := commit(t, s, memory("new", "v")); seq != wantSeq+1 {
		t.Errorf("first seq after reopen = %d, want %d", seq, wantSeq+1)
	}
}

func TestSchemaTooNew(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	newer := binary.BigEndian.AppendUint32(nil, schemaVersion+1)
	if err := s.db.Set(metaKey(metaSchema), newer, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Twice: a refused Open releases the directory (no ErrLocked).
	for range 2 {
		if _, err := Open("db", Options{FS: fs}); !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("Open of a newer store: %v, want ErrSchemaTooNew", err)
		} else {
			t.Log(err)
		}
	}
}

func TestLockedInProcess(t *testing.T) {
	for name, fs := range map[string]vfs.FS{"mem": vfs.NewMem(), "disk": vfs.Default} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			openAt(t, fs, dir)
			if _, err := Open(dir, Options{FS: fs}); !errors.Is(err, ErrLocked) {
				t.Fatalf("second Open: %v, want ErrLocked", err)
			} else {
				t.Log(err)
			}
		})
	}
}

func TestClosed(t *testing.T) {
	s, err := Open("db", Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, memory("a", "v"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Close":         s.Close(),
		"Commit":        func() error { _, err := s.Commit(memory("b", "v")); return err }(),
		"Get":           func() error { _, err := s.Get(KindMemory, "a"); return err }(),
		"GetDoc":        func() error { _, err := s.GetDoc(KindMemory, "a"); return err }(),
		"Changes":       func() error { _, err := s.Changes(0, 0, func(Record) error { return nil }); return err }(),
		"Scan":          s.Scan(KindMemory, Term{"tag", "x"}, func(string) error { return nil }),
		"ScanPrefix":    s.ScanPrefix(KindMemory, "tag", "", func(Term, string) error { return nil }),
		"IDsWithPrefix": func() error { _, err := s.IDsWithPrefix(KindMemory, "a", 0); return err }(),
		"All":           s.All(KindMemory, func(Record) error { return nil }),
		"Count":         func() error { _, err := s.Count(KindMemory); return err }(),
		"Digest":        func() error { _, err := s.Digest(); return err }(),
		"PutLocal":      s.PutLocal("k", nil),
		"GetLocal":      func() error { _, err := s.GetLocal("k"); return err }(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestCloseWaitsForCalls closes the store while readers and writers are
// busy: every call either completes or fails with ErrClosed.
func TestCloseWaitsForCalls(t *testing.T) {
	s, err := Open("db", Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, err := s.Commit(memory(fmt.Sprintf("w%d", w), fmt.Sprint(i)))
				if err == nil {
					_, err = s.Changes(0, 0, func(Record) error { return nil })
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for s.DurableSeq() < 50 {
		runtime.Gosched()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

func TestEnvelope(t *testing.T) {
	rec := Record{
		Heads: []string{"aa", "bb"},
		Terms: []Term{{"ns", "p"}, {"tag", ""}},
		Value: []byte(`{"x":1}`),
	}
	b := appendEnvelope(nil, 42, &rec)
	e, err := decodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	got := e.toRecord(KindMemory, "id")
	rec.Kind, rec.ID, rec.Seq = KindMemory, "id", 42
	if fmt.Sprint(got) != fmt.Sprint(rec) {
		t.Errorf("round trip = %+v, want %+v", got, rec)
	}
	// Truncated or garbled envelopes fail or decode, never panic.
	for i := range b {
		decodeEnvelope(b[:i])
		garbled := slices.Clone(b)
		garbled[i] = 0xff
		decodeEnvelope(garbled)
	}
	if _, err := decodeEnvelope(b[:envelopeSeqLen+3]); err == nil {
		t.Error("envelope cut inside its heads decoded")
	}
}

// TestGetOfAKindNeverStored: a point read of a kind with no record is
// answered without Pebble; it must still find a record of that kind as
// soon as one is committed, and after the store opens again.
func TestGetOfAKindNeverStored(t *testing.T) {
	fs := vfs.NewMem()
	s := openAt(t, fs, "db")
	commit(t, s, memory("m1", "a memory"))
	if _, err := s.Get(KindPurge, "m1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a tombstone before any: %v, want ErrNotFound", err)
	}
	tomb := Record{Kind: KindPurge, ID: "m2", Heads: []string{"h"}, Value: []byte("tombstone"), Doc: []byte("tombstone")}
	commit(t, s, tomb)
	if got, err := s.Get(KindPurge, "m2"); err != nil || string(got.Value) != "tombstone" {
		t.Fatalf("Get of a tombstone just committed = %+v, %v", got, err)
	}
	if _, err := s.Get(KindPurge, "m1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of another id: %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, fs, "db")
	if got, err := s.Get(KindPurge, "m2"); err != nil || string(got.Value) != "tombstone" {
		t.Fatalf("Get of a tombstone after reopening = %+v, %v", got, err)
	}
	if _, err := s.Get(KindEdge, "e1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of an edge, none stored: %v, want ErrNotFound", err)
	}
}
