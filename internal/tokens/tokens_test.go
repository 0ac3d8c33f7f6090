package tokens

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		// Counts of o200k_base as OpenAI publishes them: "tiktoken is
		// great!" is [83 8251 2488 382 2212 0] in its cookbook.
		{"", 0},
		{"hello world", 2},
		{"tiktoken is great!", 6},
	} {
		if got := Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
	long := strings.Repeat("memmesh keeps what agents learn. ", 1000)
	if n := Count(long); n < 5000 || n > 8000 {
		t.Errorf("Count of 33,000 bytes of English = %d, want about 7,000", n)
	}
}

func BenchmarkCount(b *testing.B) {
	text := strings.Repeat("Use pgx, not lib/pq: lib/pq is in maintenance mode. ", 160) // about 8 KiB, a 2,000-token brief
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Count(text)
	}
}
