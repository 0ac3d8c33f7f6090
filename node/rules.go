package node

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memmesh/memmesh/crdt"
)

// Limits on what a memory may hold.
const (
	MaxContentBytes  = 1 << 20 // 1 MiB of content
	MaxTitleRunes    = 200
	MaxTags          = 32
	maxNameLen       = 64
	titleFromContent = 80 // runes of the first line used when no title is given
)

// DefaultNamespace holds memories captured without a namespace.
const DefaultNamespace = "default"

// DefaultKind is the kind of a memory captured without one.
const DefaultKind = "note"

var (
	namespaceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*$`)
	tagRE       = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]*$`)
	kindRE      = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// tierDefaults holds, per trust tier, the confidence and time to live of a
// memory that does not set them. Human knowledge does not expire.
var tierDefaults = map[crdt.Tier]struct {
	confidence float64
	ttl        time.Duration
}{
	crdt.TierHuman: {confidence: 0.9, ttl: 0},
	crdt.TierAgent: {confidence: 0.7, ttl: 90 * 24 * time.Hour},
	crdt.TierAuto:  {confidence: 0.5, ttl: 30 * 24 * time.Hour},
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// NormalizeNamespace lower-cases ns and checks it; "" becomes DefaultNamespace.
func NormalizeNamespace(ns string) (string, error) {
	ns = strings.ToLower(strings.TrimSpace(ns))
	if ns == "" {
		return DefaultNamespace, nil
	}
	if len(ns) > 128 || !namespaceRE.MatchString(ns) || strings.Contains(ns, "//") {
		return "", invalidf("namespace %q: use up to 128 lower-case letters, digits and . _ - /, starting with a letter or digit", ns)
	}
	return ns, nil
}

// normalizeTags lower-cases, checks, sorts and deduplicates tags.
func normalizeTags(tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			continue
		}
		if len(t) > maxNameLen || !tagRE.MatchString(t) {
			return nil, invalidf("tag %q: use up to %d lower-case letters, digits and . _ : -, starting with a letter or digit", t, maxNameLen)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxTags {
		return nil, invalidf("%d tags: at most %d are allowed", len(out), MaxTags)
	}
	return out, nil
}

// normalizeKind lower-cases and checks a kind; "" becomes DefaultKind.
func normalizeKind(kind string) (string, error) {
	kind = strings.ToLower(strings.TrimSpace(kind))
	if kind == "" {
		return DefaultKind, nil
	}
	if len(kind) > 32 || !kindRE.MatchString(kind) {
		return "", invalidf("kind %q: use up to 32 lower-case letters, digits, _ and -, starting with a letter (e.g. note, decision, convention, bug, fact, task, preference)", kind)
	}
	return kind, nil
}

func normalizeTier(t crdt.Tier, fallback crdt.Tier) (crdt.Tier, error) {
	t = crdt.Tier(strings.ToLower(strings.TrimSpace(string(t))))
	if t == "" {
		return fallback, nil
	}
	if !t.Valid() {
		return "", invalidf("tier %q: use human, agent or auto", t)
	}
	return t, nil
}

func checkConfidence(c float64) error {
	if !(c >= 0 && c <= 1) {
		return invalidf("confidence %v: use a number from 0 to 1", c)
	}
	return nil
}

// checkContent validates content as given, before secrets are scrubbed.
func checkContent(content string) (string, error) {
	if len(content) > MaxContentBytes {
		return "", invalidf("content is %d bytes: at most %d (1 MiB) are allowed; split it into several memories", len(content), MaxContentBytes)
	}
	if !utf8.ValidString(content) {
		return "", invalidf("content is not valid UTF-8 text")
	}
	content = strings.TrimSpace(content)
	if content == "" {
		return "", invalidf("content is empty: a memory needs some text")
	}
	return content, nil
}

func checkTitle(title string) (string, error) {
	title = strings.TrimSpace(title)
	if !utf8.ValidString(title) || strings.ContainsAny(title, "\n\r") {
		return "", invalidf("title must be one line of UTF-8 text")
	}
	if utf8.RuneCountInString(title) > MaxTitleRunes {
		return "", invalidf("title is longer than %d characters", MaxTitleRunes)
	}
	return title, nil
}

// deriveTitleFrom makes a title from the first non-empty line of content.
func deriveTitleFrom(content string) string {
	line, _, _ := strings.Cut(content, "\n")
	line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#>*- "))
	if utf8.RuneCountInString(line) <= titleFromContent {
		return line
	}
	r := []rune(line)
	cut := strings.LastIndex(string(r[:titleFromContent]), " ")
	if cut < titleFromContent/2 {
		cut = len(string(r[:titleFromContent]))
	}
	return strings.TrimSpace(string(r[:titleFromContent])[:cut]) + "…"
}

// ParseTTL parses a time to live: "none" (never expires), a number of days
// ("90d"), weeks ("2w") or a Go duration ("36h"). A zero duration is
// refused rather than read as "none" or "at once".
func ParseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "none", "never":
		return 0, nil
	case "":
		return 0, invalidf("empty ttl: use e.g. 30d, 2w, 36h or none")
	}
	d, err := parseDuration(s)
	if err == nil && d == 0 {
		return 0, invalidf("ttl %q: a time to live of zero means nothing; use none for no expiry, or e.g. 30d", s)
	}
	return d, err
}

// parseDuration parses days, weeks or a Go duration, not negative.
func parseDuration(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || !(v >= 0 && v <= 100*365) { // NaN too
				return 0, invalidf("ttl %q: use e.g. 30d, 2w, 36h or none", s)
			}
			return time.Duration(v * float64(unit)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, invalidf("ttl %q: use e.g. 30d, 2w, 36h or none", s)
	}
	return d, nil
}
