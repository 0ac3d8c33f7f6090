package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEcho(t *testing.T) {
	const secret = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"
	long := strings.Repeat("é", 100) // 200 bytes: the cut falls inside a rune
	tests := []struct {
		format string
		in     string
		want   string
	}{
		{"%s", "short", "short"},
		{"%q", "short", `"short"`},
		{"%q", "bad \xff byte", `"bad \xff byte"`},
		{"%s", "token " + secret, "token [REDACTED:github-token]"},
		{"%s", long, strings.Repeat("é", 80) + "… (200 bytes)"},
		{"%q", long, `"` + strings.Repeat("é", 80) + `…" (200 bytes)`},
	}
	for _, tt := range tests {
		if got := fmt.Sprintf(tt.format, Echo(tt.in)); got != tt.want {
			t.Errorf("Sprintf(%s, Echo(%.20q)) = %q, want %q", tt.format, tt.in, got, tt.want)
		}
	}
	// A secret cut short by the bound is still found: scrubbing comes first.
	in := strings.Repeat("x ", 70) + secret + strings.Repeat(" y", 1000)
	if got := fmt.Sprint(Echo(in)); strings.Contains(got, "ghp_") || !utf8.ValidString(got) || len(got) > maxEcho+32 {
		t.Errorf("Echo of a secret across the bound: %q", got)
	}
	err := Invalidf("tag %q: bad", strings.Repeat("t", 60<<10))
	if !errors.Is(err, ErrInvalid) || len(err.Error()) > 256 || !strings.Contains(err.Error(), `…" (61440 bytes): bad`) {
		t.Errorf("Invalidf of a 60 KB tag: %.300q", err)
	}
}
