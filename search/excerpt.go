package search

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Needles returns what an excerpt of a hit for query text looks for: the
// text's terms as the index analyses them (stemmed) and as written (lower
// case), phrases included, of two bytes or more.
func (ix *Index) Needles(text string) []string {
	text = strings.ReplaceAll(text, `"`, " ")
	var out []string
	for _, t := range append(terms(ix.text, text), terms(ix.words, text)...) {
		if len(t) >= 2 && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Terms returns the distinct terms of text as the index analyses it:
// lower case, stop words out, stemmed, identifiers split into parts.
func (ix *Index) Terms(text string) []string { return terms(ix.text, text) }

// excerptLead is the share of an excerpt that comes before the match.
const excerptLead = 4

// Excerpt returns about size bytes of text around the first place where
// one of needles occurs (in lower case, capitalised or in upper case; a
// needle may start inside a word, as "config" does in parseConfig), or its
// start when none does, and whether text was cut. A cut excerpt starts and ends on a
// space where one is near, and marks each cut end with "…". Text of at
// most size bytes is returned whole.
func Excerpt(text string, needles []string, size int) (string, bool) {
	if len(text) <= size {
		return text, false
	}
	at := firstMatch(text, needles)
	start := max(0, at-size/excerptLead)
	end := min(len(text), start+size)
	start = max(0, end-size) // a match near the end shows more before it
	if start > 0 {
		start = wordStart(text, start, at)
	}
	if end < len(text) {
		end = wordEnd(text, end, max(at, start))
	}
	out := strings.TrimSpace(text[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out, true
}

// maxNeedles bounds the needles an excerpt looks for: each costs a scan
// of the text.
const maxNeedles = 32

// firstMatch returns the byte offset of the first occurrence in text of
// any of the first maxNeedles needles, in lower case, capitalised (as
// "config" is in parseConfig) or in upper case, or 0 when none occurs.
// Each form costs one linear scan.
func firstMatch(text string, needles []string) int {
	first := len(text)
	for _, n := range needles[:min(len(needles), maxNeedles)] {
		for _, form := range caseForms(n) {
			if i := strings.Index(text[:min(len(text), first+len(form))], form); i >= 0 {
				first = i
			}
		}
	}
	if first == len(text) {
		return 0
	}
	return first
}

// caseForms returns s in lower case, capitalised and in upper case,
// without repeats; none for "".
func caseForms(s string) []string {
	if s == "" {
		return nil
	}
	lower := strings.ToLower(s)
	r, size := utf8.DecodeRuneInString(lower)
	forms := []string{lower}
	for _, f := range []string{string(unicode.ToUpper(r)) + lower[size:], strings.ToUpper(lower)} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// wordStart moves start forward to just after a space, when one is within
// 64 bytes and before limit; else to the next rune start (text that is not
// UTF-8 may have none nearby).
func wordStart(text string, start, limit int) int {
	if i := strings.IndexFunc(text[start:min(limit, start+64)], unicode.IsSpace); i >= 0 {
		return start + i + 1
	}
	for i := 0; i < utf8.UTFMax-1 && start < limit && !utf8.RuneStart(text[start]); i++ {
		start++
	}
	return start
}

// wordEnd moves end back to a space, when one is within 64 bytes and
// after limit; else to the previous rune start.
func wordEnd(text string, end, limit int) int {
	if i := strings.LastIndexFunc(text[max(limit, end-64):end], unicode.IsSpace); i >= 0 {
		return max(limit, end-64) + i
	}
	for i := 0; i < utf8.UTFMax-1 && end > limit && !utf8.RuneStart(text[end]); i++ {
		end--
	}
	return end
}
