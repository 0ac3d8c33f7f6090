package crdt

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const testDevice = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRST"

func TestTombstoneRoundTrip(t *testing.T) {
	ts := Tombstone{ID: NewID(), At: time.Date(2026, 11, 24, 15, 4, 5, 678_900_000, time.UTC), By: testDevice}
	b, err := ts.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTombstone(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != ts.ID || got.By != ts.By || !got.At.Equal(ts.At.Truncate(time.Millisecond)) {
		t.Fatalf("decoded %+v, want %+v to the millisecond", got, ts)
	}
	b2, _ := got.Encode()
	if string(b2) != string(b) {
		t.Fatalf("re-encoding changed the bytes: %s vs %s", b2, b)
	}
	h1, _ := ts.Heads()
	h2, _ := got.Heads()
	if len(h1) != 1 || h1[0] != h2[0] {
		t.Fatalf("heads %v and %v, want one equal head", h1, h2)
	}
}

func TestDecodeTombstoneRefusesBadInput(t *testing.T) {
	id := NewID()
	for _, tc := range []struct{ name, in string }{
		{"empty", ``},
		{"not json", `hello`},
		{"array", `[1]`},
		{"unknown field", `{"v":1,"id":"` + id + `","at":1700000000000,"by":"` + testDevice + `","x":1}`},
		{"version", `{"v":2,"id":"` + id + `","at":1700000000000,"by":"` + testDevice + `"}`},
		{"bad id", `{"v":1,"id":"M-123","at":1700000000000,"by":"` + testDevice + `"}`},
		{"no time", `{"v":1,"id":"` + id + `","at":0,"by":"` + testDevice + `"}`},
		{"negative time", `{"v":1,"id":"` + id + `","at":-5,"by":"` + testDevice + `"}`},
		{"no device", `{"v":1,"id":"` + id + `","at":1700000000000,"by":""}`},
		{"bad device", `{"v":1,"id":"` + id + `","at":1700000000000,"by":"dev\u001b[2J"}`},
		{"trailing", `{"v":1,"id":"` + id + `","at":1700000000000,"by":"` + testDevice + `"}{}`},
		{"huge", `{"v":1,"id":"` + id + `","at":1700000000000,"by":"` + strings.Repeat("A", 1000) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeTombstone([]byte(tc.in)); !errors.Is(err, ErrInvalidTombstone) {
				t.Fatalf("DecodeTombstone(%q) = %v, want ErrInvalidTombstone", tc.in, err)
			}
		})
	}
}

func TestMergeTombstonesConverges(t *testing.T) {
	id := NewID()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := Tombstone{ID: id, At: at, By: testDevice}
	b := Tombstone{ID: id, At: at.Add(time.Second), By: "ZZZZ"}
	c := Tombstone{ID: id, At: at, By: "AAAA"}
	for _, tc := range []struct {
		x, y, want Tombstone
	}{{a, b, a}, {b, a, a}, {a, c, c}, {c, a, c}, {b, c, c}} {
		got, err := MergeTombstones(tc.x, tc.y)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("MergeTombstones(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
	if _, err := MergeTombstones(a, Tombstone{ID: NewID(), At: at, By: "AAAA"}); !errors.Is(err, ErrIDMismatch) {
		t.Fatalf("merging tombstones of two memories: %v, want ErrIDMismatch", err)
	}
}

// FuzzMergeTombstones decodes two tombstones a peer could send and merges
// them in both orders: the same tombstone, one of the two, with the same
// heads, whose encoding decodes to itself.
func FuzzMergeTombstones(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, pair := range [][2]Tombstone{
		{{ID: fuzzIDs[0], At: at, By: testDevice}, {ID: fuzzIDs[0], At: at.Add(time.Millisecond), By: "AAAA"}},
		{{ID: fuzzIDs[0], At: at, By: "BBBB"}, {ID: fuzzIDs[0], At: at, By: "AAAA"}},
		{{ID: fuzzIDs[0], At: at, By: "BBBB"}, {ID: fuzzIDs[1], At: at, By: "BBBB"}},
	} {
		a, err := pair[0].Encode()
		must(f, err)
		b, err := pair[1].Encode()
		must(f, err)
		f.Add(a, b)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ta, errA := DecodeTombstone(a)
		tb, errB := DecodeTombstone(b)
		for _, err := range []error{errA, errB} {
			if err != nil && !errors.Is(err, ErrInvalidTombstone) {
				t.Fatalf("DecodeTombstone: unexpected error %v", err)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		ab, errAB := MergeTombstones(ta, tb)
		ba, errBA := MergeTombstones(tb, ta)
		if (errAB == nil) != (errBA == nil) || ab != ba {
			t.Fatalf("merge does not commute: %v (%v) and %v (%v)", ab, errAB, ba, errBA)
		}
		if errAB != nil {
			if !errors.Is(errAB, ErrIDMismatch) || ta.ID == tb.ID {
				t.Fatalf("MergeTombstones: %v", errAB)
			}
			return
		}
		if ab != ta && ab != tb {
			t.Fatalf("merged %v is neither %v nor %v", ab, ta, tb)
		}
		enc, err := ab.Encode()
		must(t, err)
		again, err := DecodeTombstone(enc)
		if err != nil || again != ab {
			t.Fatalf("a merged tombstone does not decode to itself: %v, %v", again, err)
		}
	})
}
