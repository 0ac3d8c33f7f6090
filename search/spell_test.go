package search

import (
	"slices"
	"testing"
)

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		bound int
		want  int
	}{
		{"postgres", "postgres", 2, 0},
		{"postgres", "postgress", 2, 1},
		{"postgres", "postgrse", 2, 1}, // a transposition is one edit
		{"autovacuum", "atovakuum", 2, 2},
		{"offsets", "ofsetz", 2, 2},
		{"offsets", "ofsetz", 1, 2}, // bound+1 past the bound
		{"kafka", "zzzzzzzzzz", 2, 3},
		{"café", "cafe", 2, 1}, // characters, not bytes
		{"", "abc", 3, 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, tt.bound); got != tt.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.bound, got, tt.want)
		}
	}
}

// TestFuzzyFindsWordsByTheirStems: the index holds stems; a misspelt
// word finds the memories of a word within its edits whatever the stem
// dropped or changed, and nothing when only the stem is that close.
func TestFuzzyFindsWordsByTheirStems(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("happy", "Mood", "The team was happy with the release."),
		mem("running", "Jobs", "The nightly jobs keep running late."),
		mem("deploy", "Rollout", "Deployments wait for the canary."),
		mem("retries", "Client", "Retries use exponential backoff."),
	)
	tests := []struct {
		text string
		want []string
	}{
		{"hapy", []string{"happy"}},          // happy is stemmed happi
		{"runing", []string{"running"}},      // running is stemmed run
		{"deploymetns", []string{"deploy"}},  // deployments is stemmed deploy
		{"exponentail", []string{"retries"}}, // exponential is stemmed exponenti
		{"retires", []string{"retries"}},     // retries is stemmed retri
		{"canaryy", []string{"deploy"}},
		{"rnu", nil},       // under 4 characters: exact
		{"deploi", nil},    // the stem itself, but two edits from any of its words
		{"backofxyz", nil}, // three edits from any word of backoff
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			res := search(t, ix, Query{Text: tt.text})
			if got := ids(res); !slices.Equal(got, tt.want) {
				t.Errorf("hits = %v, want %v", got, tt.want)
			}
			if res.Fuzzy != (len(tt.want) > 0) {
				t.Errorf("Fuzzy = %v", res.Fuzzy)
			}
		})
	}
}
