package extract

import (
	"strings"
	"testing"

	"github.com/memmesh/memmesh/transcript"
)

// TestThroughTheClaudeCodeAdapter reads a Claude Code transcript with the
// real adapter and extracts from it: the user's standing instruction, the
// bug fix with its error, cause and file (relative to the project), the
// test command; the Stripe key of the prompt and the webhook secret of the
// tool's output redacted.
func TestThroughTheClaudeCodeAdapter(t *testing.T) {
	b, err := transcript.ClaudeCode{}.Read("testdata/claude-code/3b1f6c2a-8d4e-4f7a-9b0c-1d2e3f4a5b6c.jsonl", transcript.Cursor{}, transcript.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Warnings) > 0 {
		t.Fatalf("warnings: %+v", b.Warnings)
	}
	got := Candidates(b.Session)
	want := []struct {
		kind     string
		contains []string
	}{
		{KindConvention, []string{"Always run the whole suite with STRIPE_KEY=[REDACTED:", "make test"}},
		{KindBug, []string{"`make test` failed: webhook_test.go:31: error: signature mismatch for secret [REDACTED:", "SDK v76 signs the raw body", "Fixed by changing webhook/handler.go"}},
		{KindFact, []string{"`make test`"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %d candidates", kinds(got), len(want))
	}
	for i, w := range want {
		c := got[i]
		if c.Kind != w.kind || c.Evidence.Session != "3b1f6c2a-8d4e-4f7a-9b0c-1d2e3f4a5b6c" {
			t.Errorf("candidate %d: %s of %s, want %s", i, c.Kind, c.Evidence.Session, w.kind)
		}
		for _, s := range w.contains {
			if !strings.Contains(c.Content, s) {
				t.Errorf("candidate %d %q lacks %q", i, c.Content, s)
			}
		}
		for _, secret := range []string{"sk_test_4eC39HqLyjWDarjtT1zdp7dc", "whsec_9f8e7d6c5b4a39281706f5e4d3c2b1a0"} {
			if strings.Contains(c.Title+c.Content, secret) {
				t.Errorf("candidate %d holds a secret: %q", i, c.Content)
			}
		}
	}
	if bug := got[1]; len(bug.Touches) != 1 || bug.Touches[0] != "webhook/handler.go" {
		t.Errorf("bug touches %v, want webhook/handler.go", bug.Touches)
	}
}
