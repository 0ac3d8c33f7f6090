package rules

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/secrets/secretstest"
	"github.com/memmesh/memmesh/model"
)

// TestNamesNormalized: namespaces, tags and kinds are trimmed and
// lower-cased, empty ones take their defaults, tags are sorted once each,
// and a name out of its syntax or bounds is an invalid input.
func TestNamesNormalized(t *testing.T) {
	if ns, err := NormalizeNamespace("  Team/Shop.API "); ns != "team/shop.api" || err != nil {
		t.Errorf("namespace: %q, %v", ns, err)
	}
	if ns, err := NormalizeNamespace(""); ns != api.DefaultNamespace || err != nil {
		t.Errorf("empty namespace: %q, %v", ns, err)
	}
	for _, bad := range []string{"a//b", "/shop", "sh op", "shop\x00", strings.Repeat("a", maxNamespaceLen+1)} {
		if _, err := NormalizeNamespace(bad); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("namespace %q: %v, want invalid", bad, err)
		}
	}
	if tags, err := NormalizeTags([]string{"Ops", " ", "db:pg", "ops"}); !slices.Equal(tags, []string{"db:pg", "ops"}) || err != nil {
		t.Errorf("tags: %q, %v", tags, err)
	}
	many := make([]string, api.MaxTags+1)
	for i := range many {
		many[i] = strings.Repeat("t", i+1)
	}
	if _, err := NormalizeTags(many); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("%d tags: %v, want invalid", len(many), err)
	}
	if k, err := NormalizeKind(""); k != DefaultKind || err != nil {
		t.Errorf("empty kind: %q, %v", k, err)
	}
	if _, err := NormalizeKind("9lives"); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("kind 9lives: %v, want invalid", err)
	}
	if tier, err := NormalizeTier(" Human ", model.TierAgent); tier != model.TierHuman || err != nil {
		t.Errorf("tier: %q, %v", tier, err)
	}
	if _, err := NormalizeTier("root", model.TierAgent); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("tier root: %v, want invalid", err)
	}
}

// TestNameWithSecretRefused: a name that holds a secret is refused with
// the kind of secret, never the secret; a label has it redacted instead.
func TestNameWithSecretRefused(t *testing.T) {
	for _, c := range secretstest.Cases(t) {
		if strings.ContainsAny(c.Input, "\n\r") || len(c.Input) > MaxLabelLen {
			continue
		}
		err := CheckName("tag", c.Input, MaxLabelLen)
		if !errors.Is(err, api.ErrInvalid) {
			t.Errorf("%s: a tag holding it: %v, want invalid", c.Name, err)
			continue
		}
		for _, s := range c.Secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error repeats the secret: %v", c.Name, err)
			}
		}
		label, kinds, err := CheckLabel("agent", c.Input)
		if err != nil || len(kinds) == 0 || label != c.Want {
			t.Errorf("%s: label %q, kinds %v, %v; want %q", c.Name, label, kinds, err, c.Want)
		}
	}
}

// TestContentAndTitles: content is text, trimmed and not empty; a title
// is one line; a title made from content is its first line, without
// Markdown marks, cut at a word with "…".
func TestContentAndTitles(t *testing.T) {
	if c, err := CheckContent("  keep this \n"); c != "keep this" || err != nil {
		t.Errorf("content: %q, %v", c, err)
	}
	for _, bad := range []string{" \n ", "a\x00b", "\xff", strings.Repeat("x", api.MaxContentBytes+1)} {
		if _, err := CheckContent(bad); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("content of %d bytes: %v, want invalid", len(bad), err)
		}
	}
	if _, err := CheckTitle("two\nlines"); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("a title of two lines: %v, want invalid", err)
	}
	if got := TitleFrom("## Deploys run from main\nmore"); got != "Deploys run from main" {
		t.Errorf("TitleFrom = %q", got)
	}
	long := TitleFrom(strings.Repeat("word ", 40))
	if !strings.HasSuffix(long, "word…") || len([]rune(long)) > titleFromContent+1 {
		t.Errorf("a long first line gives %q", long)
	}
	if err := CheckConfidence(1.5); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("confidence 1.5: %v, want invalid", err)
	}
	if d := TierDefaults(model.TierHuman); d.TTL != 0 || d.Confidence <= TierDefaults(model.TierAgent).Confidence {
		t.Errorf("human defaults %+v: want no expiry and more confidence than an agent's", d)
	}
}
