package crdt

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testDevice = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRST"

func TestTombstoneRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 24, 15, 4, 5, 678_900_000, time.UTC)
	one := NewTombstone(NewID(), at, testDevice)
	two, err := MergeTombstones(one, NewTombstone(one.ID, at.Add(-time.Hour), "AAAA"))
	if err != nil {
		t.Fatal(err)
	}
	for name, ts := range map[string]Tombstone{"one purge": one, "two purges": two} {
		t.Run(name, func(t *testing.T) {
			b, err := ts.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeTombstone(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != ts.ID || len(got.Purges) != len(ts.Purges) {
				t.Fatalf("decoded %+v, want %+v", got, ts)
			}
			for i, p := range got.Purges {
				if p.By != ts.Purges[i].By || !p.At.Equal(ts.Purges[i].At.Truncate(time.Millisecond)) {
					t.Fatalf("decoded %+v, want %+v to the millisecond", got, ts)
				}
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
		})
	}
	// A tombstone of one purge keeps the bytes (and so the heads) that
	// nodes stored before tombstones held several.
	b, _ := one.Encode()
	if want := `{"v":1,"id":"` + one.ID + `","at":` + strconv.FormatInt(at.UnixMilli(), 10) + `,"by":"` + testDevice + `"}`; string(b) != want {
		t.Fatalf("encoded %s, want %s", b, want)
	}
	if first := two.First(); first.By != "AAAA" {
		t.Fatalf("first purge %+v, want the earlier one, by AAAA", first)
	}
}

func TestDecodeTombstoneRefusesBadInput(t *testing.T) {
	id := NewID()
	for _, tc := range []struct{ name, in string }{
		{"empty", ``},
		{"not json", `hello`},
		{"array", `[1]`},
		{"unknown field", `{"v":1,"id":"` + id + `","at":1700000000000,"by":"` + testDevice + `","x":1}`},
		{"version", `{"v":3,"id":"` + id + `","at":1700000000000,"by":"` + testDevice + `"}`},
		{"version 2 of one purge", `{"v":2,"id":"` + id + `","purges":[{"at":1700000000000,"by":"` + testDevice + `"}]}`},
		{"version 2 unsorted", `{"v":2,"id":"` + id + `","purges":[{"at":1700000000000,"by":"BBBB"},{"at":1700000000000,"by":"AAAA"}]}`},
		{"version 2 twice one device", `{"v":2,"id":"` + id + `","purges":[{"at":1700000000000,"by":"AAAA"},{"at":1700000000001,"by":"AAAA"}]}`},
		{"bad id", `{"v":1,"id":"M-123","at":1700000000000,"by":"` + testDevice + `"}`},
		{"no time", `{"v":1,"id":"` + id + `","at":0,"by":"` + testDevice + `"}`},
		{"negative time", `{"v":1,"id":"` + id + `","at":-5,"by":"` + testDevice + `"}`},
		{"no device", `{"v":1,"id":"` + id + `","at":1700000000000,"by":""}`},
		{"bad device", `{"v":1,"id":"` + id + `","at":1700000000000,"by":"dev\u001b[2J"}`},
		{"trailing", `{"v":1,"id":"` + id + `","at":1700000000000,"by":"` + testDevice + `"}{}`},
		{"huge", `{"v":1,"id":"` + id + `","at":1700000000000,"by":"` + strings.Repeat("A", 9000) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeTombstone([]byte(tc.in)); !errors.Is(err, ErrInvalidTombstone) {
				t.Fatalf("DecodeTombstone(%q) = %v, want ErrInvalidTombstone", tc.in, err)
			}
		})
	}
}

func TestMergeTombstonesIsTheUnion(t *testing.T) {
	id := NewID()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := NewTombstone(id, at, testDevice)
	b := NewTombstone(id, at.Add(time.Second), "ZZZZ")
	aLater := NewTombstone(id, at.Add(time.Hour), testDevice)
	ab := Tombstone{ID: id, Purges: []Purge{{at, testDevice}, {at.Add(time.Second), "ZZZZ"}}}
	for _, tc := range []struct {
		x, y, want Tombstone
	}{{a, b, ab}, {b, a, ab}, {a, aLater, a}, {aLater, a, a}, {ab, aLater, ab}, {a, a, a}} {
		got, err := MergeTombstones(tc.x, tc.y)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("MergeTombstones(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
	if _, err := MergeTombstones(a, NewTombstone(NewID(), at, "AAAA")); !errors.Is(err, ErrIDMismatch) {
		t.Fatalf("merging tombstones of two memories: %v, want ErrIDMismatch", err)
	}
	// A purge refused later leaves the other standing, whichever was
	// first by the clocks.
	left, ok := ab.Without(func(p Purge) bool { return p.By == testDevice })
	if !ok || !reflect.DeepEqual(left, b) {
		t.Fatalf("without the first purge: %v (%v), want %v", left, ok, b)
	}
	if _, ok := a.Without(func(Purge) bool { return true }); ok {
		t.Fatal("a tombstone without its only purge is still one")
	}
}

// FuzzMergeTombstones decodes two tombstones a peer could send and merges
// them in both orders: the same tombstone, which merging either input
// into again leaves as it is, whose encoding decodes to itself.
func FuzzMergeTombstones(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	two, err := MergeTombstones(NewTombstone(fuzzIDs[0], at, "BBBB"), NewTombstone(fuzzIDs[0], at, "AAAA"))
	must(f, err)
	for _, pair := range [][2]Tombstone{
		{NewTombstone(fuzzIDs[0], at, testDevice), NewTombstone(fuzzIDs[0], at.Add(time.Millisecond), "AAAA")},
		{NewTombstone(fuzzIDs[0], at, "BBBB"), NewTombstone(fuzzIDs[0], at, "AAAA")},
		{NewTombstone(fuzzIDs[0], at, "BBBB"), NewTombstone(fuzzIDs[1], at, "BBBB")},
		{two, NewTombstone(fuzzIDs[0], at.Add(-time.Millisecond), "BBBB")},
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
		if (errAB == nil) != (errBA == nil) || !reflect.DeepEqual(ab, ba) {
			t.Fatalf("merge does not commute: %v (%v) and %v (%v)", ab, errAB, ba, errBA)
		}
		if errAB != nil {
			if !errors.Is(errAB, ErrIDMismatch) || ta.ID == tb.ID {
				t.Fatalf("MergeTombstones: %v", errAB)
			}
			return
		}
		for _, in := range []Tombstone{ta, tb} {
			if again, _ := MergeTombstones(ab, in); !reflect.DeepEqual(again, ab) {
				t.Fatalf("merging %v again into %v changed it to %v", in, ab, again)
			}
		}
		enc, err := ab.Encode()
		must(t, err)
		again, err := DecodeTombstone(enc)
		if err != nil || !reflect.DeepEqual(again, ab) {
			t.Fatalf("a merged tombstone does not decode to itself: %v, %v", again, err)
		}
	})
}
