package extract

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// truncate returns s cut to at most n bytes, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clip returns s cut to at most n runes, at a word boundary when one is
// near, with an ellipsis when it was cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// oneLine replaces control characters and runs of white space with one
// space.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
}

// codeFence matches a fenced block of code, which is never speech.
var codeFence = regexp.MustCompile("(?s)```.*?(```|$)")

// logLine matches a line of pasted output rather than prose: indented,
// a log record, a table, a prompt or a stack frame.
var logLine = regexp.MustCompile(`^(\s|>|\||\$ |at |[A-Z]+:\s|\d{2,}[-:/]|[-=_*#~!]{3,})`)

// sentences returns the sentences of prose in text: code blocks and pasted
// output are left out, and sentences longer than max bytes too.
func sentences(text string, max int) []string {
	text = codeFence.ReplaceAllString(text, "\n")
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if logLine.MatchString(line) {
			continue
		}
		for _, s := range splitSentences(line) {
			s = oneLine(s)
			if s != "" && len(s) <= max {
				out = append(out, s)
			}
		}
	}
	return out
}

// splitSentences splits a line after ".", "!" and "?" followed by a space
// (file names and versions keep their dots).
func splitSentences(line string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(line); i++ {
		switch line[i] {
		case '.', '!', '?':
			if line[i+1] == ' ' && !abbreviation(line[start:i+1]) {
				out = append(out, line[start:i+1])
				start = i + 2
			}
		}
	}
	return append(out, line[start:])
}

// abbreviation reports whether s ends with an abbreviation whose dot does
// not end a sentence.
func abbreviation(s string) bool {
	s = strings.ToLower(s)
	for _, a := range []string{"e.g.", "i.e.", "etc.", "vs.", "approx."} {
		if strings.HasSuffix(s, a) {
			return true
		}
	}
	return false
}

// fillers are the words people start a sentence with that carry no
// instruction of their own.
var fillers = regexp.MustCompile(`^(?i)(no|nope|actually|also|and|but|so|ok|okay|please|one thing|one more thing|note that|note|remember|fyi|btw|great|thanks|thank you|good|nice|cool|hello|hi|hey|yes|right)\b[\s,:;!.\-—]*`)

// corrections are the words that start a correction.
var corrections = regexp.MustCompile(`^(?i)(no|nope|actually|wrong|not that)\b`)

// stripFillers removes the leading fillers of s.
func stripFillers(s string) string {
	for {
		t := fillers.ReplaceAllString(s, "")
		if t == s || t == "" {
			return s
		}
		s = t
	}
}

// plan matches the agent narrating what it is about to do.
var plan = regexp.MustCompile(`^(?i)(let me|let's (check|look|see|try|start|run|read|first)|i'll|i will|i'm going to|i am going to|now i|now,? let|next,? i|first,? i|ok,? |okay,? |great|perfect|done|here is|here's|sure)\b`)

// capitalise upper-cases the first letter of s.
func capitalise(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || unicode.IsUpper(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// fileRef matches a file or directory path named in prose.
var fileRef = regexp.MustCompile(`\b[\w.@-]+(/[\w.@-]+)+/?|\b[\w-]+\.(go|py|ts|tsx|js|jsx|rs|rb|java|kt|kts|php|ex|exs|c|cc|cpp|h|hpp|cs|swift|yml|yaml|toml|json|md|tf|gradle|sql|sh)\b`)

// fileRefs returns the paths named in s, in order, without repeats.
func fileRefs(s string) []string {
	var out []string
	for _, f := range fileRef.FindAllString(s, 8) {
		f = strings.TrimRight(f, ".")
		if strings.Contains(f, "://") || strings.HasPrefix(f, "//") {
			continue
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
