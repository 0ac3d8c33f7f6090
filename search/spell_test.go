package search

import "testing"

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
