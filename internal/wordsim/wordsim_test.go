package wordsim

import (
	"maps"
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	got := slices.Sorted(maps.Keys(Words("Use pgx, not lib/pq: PGX is a driver (v5) a")))
	want := []string{"driver", "is", "lib", "not", "pgx", "pq", "use", "v5"}
	if !slices.Equal(got, want) {
		t.Errorf("Words = %v, want %v", got, want)
	}
}

func TestJaccard(t *testing.T) {
	a, b := Words("one two three four"), Words("three four five six")
	if got := Jaccard(a, b); got != 2.0/6 {
		t.Errorf("Jaccard = %v, want 1/3", got)
	}
	if Jaccard(Words(""), Words("")) != 1 || Jaccard(a, a) != 1 || Jaccard(a, Words("")) != 0 {
		t.Error("empty and equal sets")
	}
}

// TestBandKeys: equal sets share every key, a near copy shares some,
// unrelated texts none, and an empty set has none.
func TestBandKeys(t *testing.T) {
	text := "the deploy script drains the old pool first then shifts traffic in steps of ten percent to the new pool"
	a := BandKeys(Words(text))
	if len(a) != Bands || !slices.Equal(a, BandKeys(Words(text))) {
		t.Fatalf("keys %v: want %d, the same for the same words", a, Bands)
	}
	shared := func(x, y []string) int {
		n := 0
		for i := range x {
			if x[i] == y[i] {
				n++
			}
		}
		return n
	}
	if n := shared(a, BandKeys(Words(text+" slowly"))); n == 0 {
		t.Error("a near copy shares no band key")
	}
	if n := shared(a, BandKeys(Words("kafka topics carry order events between services"))); n != 0 {
		t.Errorf("unrelated texts share %d band keys", n)
	}
	if BandKeys(Words("")) != nil {
		t.Error("keys of an empty set")
	}
}
