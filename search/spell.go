package search

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	index "github.com/blevesearch/bleve_index_api"
)

// Typo tolerance from the stems the index already holds. The fallback
// pass looks for the words within a few edits of a query word, and the
// index keeps stems, not words: "postgres" is indexed as "postgr", nine
// characters of "postgress" are three edits from it, and "configuration"
// is "configur". So a query word is corrected in two steps:
//
//  1. Probes. The stem of the word, the word and its prefixes down to
//     spellTail characters shorter (a stem is the start of its words,
//     give or take a final e or y) are matched, longest first, against
//     the content field's terms within the word's edits, until one finds
//     a stem that step 2 proves: "postgr" is within one edit of a prefix
//     of "postgress", "configur" of one of "configuraton".
//  2. Proof. A stem found is kept only when one of its words, the stem
//     with a common English ending (spellEndings) that the analysis stems
//     back to it, is itself within the edits of the query word:
//     "postgres" is one edit from "postgress"; "offset" and "offsets" are
//     both two from "ofsetz", so "ofsetz" finds nothing at one edit.
//
// A word is thus matched against whole words, as when a field of
// unstemmed words was indexed for it, except that the words are those a
// stem of the index can come from, not only those a memory holds, and
// that the longest probe that proves a stem ends the search. That field
// cost a fifth of indexing, for a pass that runs only when nothing else
// matched.
const (
	// spellTail is how many characters of a query word a probe may drop:
	// the longest common ending that a stem loses ("ation", "ings").
	spellTail = 5
	// spellMinProbe is the shortest probe; shorter prefixes are within
	// an edit or two of too many stems.
	spellMinProbe = 3
	// spellMaxStems bounds the stems a word's probes may find, so that
	// proving them stays cheap whatever the dictionary holds.
	spellMaxStems = 256
)

// spellEndings are what a word may add to its stem. Porter's stemmer
// removes them (in combinations: "configurations" is "configur");
// a candidate word is proved only when the analysis stems it back.
var spellEndings = []string{
	"", "s", "e", "es", "ed", "d", "ing", "ings", "er", "ers", "est", "en",
	"y", "ly", "ies", "ied", "ion", "ions", "ation", "ations", "ate", "ates", "ated",
	"al", "ally", "ment", "ments", "ness", "ful", "ive", "ity", "ism", "ist", "ists",
	"ize", "ized", "izes", "ization", "able", "ible", "ance", "ence", "ant", "ent", "ous", "ic", "ical",
}

// spellDoubled are the endings after which a final consonant doubles
// ("running" is "run").
var spellDoubled = []string{"ing", "ed", "er", "ers", "est"}

// corrections returns the stems of the content field that words within
// edits of the word w have, through r, sorted. The probes run longest
// first and stop at the first whose stems hold a proved one: a typo
// inside a word is found by the word's own probe, and only one at its
// end needs the shorter ones.
func (ix *Index) corrections(ctx context.Context, r index.IndexReaderFuzzy, w string, edits int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, probe := range ix.probes(w) {
		if len(out) > 0 || len(seen) >= spellMaxStems {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, err := r.FieldDictFuzzy(fieldContent, probe, edits, "")
		if err != nil {
			return nil, bleveError("fuzzy", err)
		}
		for len(seen) < spellMaxStems {
			e, err := d.Next()
			if err != nil {
				_ = d.Close()
				return nil, bleveError("fuzzy", err)
			}
			if e == nil {
				break
			}
			if !seen[e.Term] {
				seen[e.Term] = true
				if ix.proved(e.Term, w, edits) {
					out = append(out, e.Term)
				}
			}
		}
		if err := d.Close(); err != nil {
			return nil, bleveError("fuzzy", err)
		}
	}
	slices.Sort(out)
	return out, nil
}

// probes returns the stems of w and its prefixes of at least
// spellMinProbe characters that drop at most spellTail of them.
func (ix *Index) probes(w string) []string {
	probes := terms(ix.text, w)
	runes := []rune(w)
	for n := len(runes); n >= max(spellMinProbe, len(runes)-spellTail); n-- {
		if p := string(runes[:n]); !slices.Contains(probes, p) {
			probes = append(probes, p)
		}
	}
	return probes
}

// proved reports whether a word of the stem t lies within edits of w:
// t with one of spellEndings (after a doubled final consonant, or with
// a final i back to y), whose analysis yields t. Candidates of a length
// out of reach are not built.
func (ix *Index) proved(t, w string, edits int) bool {
	n := utf8.RuneCountInString(w)
	near := func(word string) bool {
		if d := utf8.RuneCountInString(word) - n; d > edits || -d > edits {
			return false
		}
		return editDistance(word, w, edits) <= edits && slices.Contains(terms(ix.text, word), t)
	}
	for _, bases := range spellBases(t) {
		for _, e := range bases.endings {
			if d := utf8.RuneCountInString(bases.stem) + len(e) - n; d > edits || -d > edits {
				continue
			}
			if near(bases.stem + e) {
				return true
			}
		}
	}
	return false
}

// spellBase is what a stem's words may be made of: a base and the
// endings it may take.
type spellBase struct {
	stem    string
	endings []string
}

// spellBases returns how the words of the stem t are made: t with any of
// spellEndings, t with its final consonant doubled and one of
// spellDoubled, and a final i back to y.
func spellBases(t string) []spellBase {
	bases := []spellBase{{t, spellEndings}}
	if last, _ := utf8.DecodeLastRuneInString(t); last != utf8.RuneError && !strings.ContainsRune("aeiouwxy", last) {
		bases = append(bases, spellBase{t + string(last), spellDoubled})
	}
	if base, ok := strings.CutSuffix(t, "i"); ok {
		bases = append(bases, spellBase{base + "y", []string{"", "s"}})
	}
	return bases
}

// editDistance returns the optimal string alignment distance between a
// and b (insertions, deletions, substitutions and transpositions of
// adjacent characters, each one edit), or bound+1 once it exceeds bound.
func editDistance(a, b string, bound int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > bound || -d > bound {
		return bound + 1
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		lowest := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			lowest = min(lowest, cur[j])
		}
		if lowest > bound {
			return bound + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(rb)], bound+1)
}
