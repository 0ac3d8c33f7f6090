// Package rules holds the rules of a memory's fields that need nothing
// but the field: the syntax and bounds of names (namespaces, tags, kinds;
// relations and origins through CheckName) and the refusal of a name that
// holds a secret, the defaults of each trust tier, and the checks of
// content, titles and the labels (agent, session) a write records. The
// node applies them before it changes anything; a front end may check a
// name as the node will.
package rules

import (
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/model"
)

// Limits on the names a memory holds.
const (
	maxNameLen       = 64  // bytes of a tag
	maxNamespaceLen  = 128 // bytes of a namespace
	maxKindLen       = 32  // bytes of a kind
	MaxLabelLen      = 256 // bytes of the agent or session of a write
	titleFromContent = 80  // runes of the first line used when no title is given
)

// DefaultKind is the kind of a memory captured without one.
const DefaultKind = "note"

var (
	namespaceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*$`)
	tagRE       = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]*$`)
	kindRE      = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// Defaults are the confidence and time to live (0: none) of a memory
// that does not set them.
type Defaults struct {
	Confidence float64
	TTL        time.Duration
}

// tierDefaults holds the defaults of each trust tier. Human knowledge
// does not expire.
var tierDefaults = map[model.Tier]Defaults{
	model.TierHuman: {Confidence: 0.9, TTL: 0},
	model.TierAgent: {Confidence: 0.7, TTL: 90 * 24 * time.Hour},
	model.TierAuto:  {Confidence: 0.5, TTL: 30 * 24 * time.Hour},
}

// TierDefaults returns the defaults of tier t.
func TierDefaults(t model.Tier) Defaults { return tierDefaults[t] }

// refuseSecret fails when a name with a strict syntax (a namespace, tag,
// kind, relation, origin or device name) holds a secret. Such names are
// refused rather than redacted: a marker does not fit their syntax, they
// are keys that filters, links and settings must match exactly, and
// different secrets would all become the same name. The error names the
// kind of secret, never the name.
func refuseSecret(what, name string) error {
	if _, kinds := secrets.Scrub(name); kinds != nil {
		return api.Invalidf("the %s holds a secret (%s): choose one without it", what, strings.Join(kinds, ", "))
	}
	return nil
}

// CheckName bounds a name of a strict syntax and refuses one that holds a
// secret, before the syntax is checked on its lower-case form: a secret
// is found in the name as given.
func CheckName(what, name string, maxLen int) error {
	if len(name) > maxLen {
		return api.Invalidf("the %s is %d bytes long: at most %d are allowed", what, len(name), maxLen)
	}
	return refuseSecret(what, name)
}

// NormalizeNamespace lower-cases ns and checks it; "" becomes
// api.DefaultNamespace.
func NormalizeNamespace(ns string) (string, error) {
	ns = strings.TrimSpace(ns)
	if ns == "" {
		return api.DefaultNamespace, nil
	}
	if err := CheckName("namespace", ns, maxNamespaceLen); err != nil {
		return "", err
	}
	ns = strings.ToLower(ns)
	if !namespaceRE.MatchString(ns) || strings.Contains(ns, "//") {
		return "", api.Invalidf("namespace %q: use up to %d lower-case letters, digits and . _ - /, starting with a letter or digit", ns, maxNamespaceLen)
	}
	return ns, nil
}

// NormalizeTags lower-cases, checks, sorts and deduplicates tags.
func NormalizeTags(tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if err := CheckName("tag", t, maxNameLen); err != nil {
			return nil, err
		}
		t = strings.ToLower(t)
		if !tagRE.MatchString(t) {
			return nil, api.Invalidf("tag %q: use up to %d lower-case letters, digits and . _ : -, starting with a letter or digit", t, maxNameLen)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > api.MaxTags {
		return nil, api.Invalidf("%d tags: at most %d are allowed", len(out), api.MaxTags)
	}
	return out, nil
}

// NormalizeKind lower-cases and checks a kind; "" becomes DefaultKind.
func NormalizeKind(kind string) (string, error) {
	kind = strings.TrimSpace(kind)
	if kind == "" {
		return DefaultKind, nil
	}
	if err := CheckName("kind", kind, maxKindLen); err != nil {
		return "", err
	}
	kind = strings.ToLower(kind)
	if !kindRE.MatchString(kind) {
		return "", api.Invalidf("kind %q: use up to %d lower-case letters, digits, _ and -, starting with a letter (e.g. note, decision, convention, bug, fact, task, preference)", kind, maxKindLen)
	}
	return kind, nil
}

// NormalizeTier lower-cases and checks a trust tier; "" becomes fallback.
func NormalizeTier(t model.Tier, fallback model.Tier) (model.Tier, error) {
	t = model.Tier(strings.ToLower(strings.TrimSpace(string(t))))
	if t == "" {
		return fallback, nil
	}
	if !t.Valid() {
		return "", api.Invalidf("tier %q: use human, agent or auto", t)
	}
	return t, nil
}

// CheckConfidence refuses a confidence outside 0 to 1 (and NaN).
func CheckConfidence(c float64) error {
	if !(c >= 0 && c <= 1) {
		return api.Invalidf("confidence %v: use a number from 0 to 1", c)
	}
	return nil
}

// CheckContent validates content as given, before secrets are scrubbed.
func CheckContent(content string) (string, error) {
	if len(content) > api.MaxContentBytes {
		return "", api.Invalidf("content is %d bytes: at most %d (1 MiB) are allowed; split it into several memories", len(content), api.MaxContentBytes)
	}
	if err := api.CheckText(content); err != nil {
		return "", api.Invalidf("content is %v: memmesh stores text only", err)
	}
	content = strings.TrimSpace(content)
	if content == "" {
		return "", api.Invalidf("content is empty: a memory needs some text")
	}
	return content, nil
}

// CheckLabel checks the agent or session a write records (one line of at
// most MaxLabelLen bytes) and redacts its secrets, returning their kinds.
// Unlike a name, a label is only shown, never matched: a marker in it
// harms nothing.
func CheckLabel(what, label string) (string, []string, error) {
	label = strings.TrimSpace(label)
	if len(label) > MaxLabelLen || !utf8.ValidString(label) || strings.ContainsAny(label, "\n\r") {
		return "", nil, api.Invalidf("the %s must be one line of at most %d bytes of UTF-8 text", what, MaxLabelLen)
	}
	label, kinds := secrets.Scrub(label)
	return label, kinds, nil
}

// CheckTitle trims a title and checks that it is one line of UTF-8 text
// within api.MaxTitleRunes.
func CheckTitle(title string) (string, error) {
	title = strings.TrimSpace(title)
	if !utf8.ValidString(title) || strings.ContainsAny(title, "\n\r\x00") {
		return "", api.Invalidf("title must be one line of UTF-8 text")
	}
	if utf8.RuneCountInString(title) > api.MaxTitleRunes {
		return "", api.Invalidf("title is longer than %d characters", api.MaxTitleRunes)
	}
	return title, nil
}

// TitleFrom makes a title from the first non-empty line of content.
func TitleFrom(content string) string {
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
