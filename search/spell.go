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
//  1. Probes. The stem of the word and its prefixes down to spellTail
//     characters shorter (a stem is the start of its words, give or take
//     a final e or y) are matched against the content field's terms
//     within the word's edits: "postgr" is within one edit of a prefix of
//     "postgress", "configur" of one of "configuraton".
//  2. Proof. A stem found is kept only when one of its words, the stem
//     with a common English ending (spellEndings) that the analysis stems
//     back to it, is itself within the edits of the query word:
//     "postgres" is one edit from "postgress"; "offset" and "offsets" are
//     both two from "ofsetz", so "ofsetz" finds nothing at one edit.
//
// A word is thus matched against whole words, as when a field of
// unstemmed words was indexed for it, except that the words are those a
// stem of the index can come from, not only those a memory holds. That
// field cost a fifth of indexing, for a pass that runs only when nothing
// else matched.
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
// edits of the word w have, through r, sorted.
func (ix *Index) corrections(ctx context.Context, r index.IndexReaderFuzzy, w string, edits int) ([]string, error) {
	stems := map[string]bool{}
	for _, probe := range ix.probes(w) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(stems) >= spellMaxStems {
			break
		}
		d, err := r.FieldDictFuzzy(fieldContent, probe, edits, "")
		if err != nil {
			return nil, bleveError("fuzzy", err)
		}
		for len(stems) < spellMaxStems {
			e, err := d.Next()
			if err != nil {
				_ = d.Close()
				return nil, bleveError("fuzzy", err)
			}
			if e == nil {
				break
			}
			stems[e.Term] = true
		}
		if err := d.Close(); err != nil {
			return nil, bleveError("fuzzy", err)
		}
	}
	var out []string
	for t := range stems {
		if ix.proved(t, w, edits) {
			out = append(out, t)
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
// a final i back to y), whose analysis yields t.
func (ix *Index) proved(t, w string, edits int) bool {
	for _, word := range spellWords(t) {
		if editDistance(word, w, edits) <= edits && slices.Contains(terms(ix.text, word), t) {
			return true
		}
	}
	return false
}

// spellWords returns the candidate words of the stem t.
func spellWords(t string) []string {
	words := make([]string, 0, len(spellEndings)+len(spellDoubled)+2)
	for _, e := range spellEndings {
		words = append(words, t+e)
	}
	if last, _ := utf8.DecodeLastRuneInString(t); last != utf8.RuneError && !strings.ContainsRune("aeiouwxy", last) {
		for _, e := range spellDoubled {
			words = append(words, t+string(last)+e)
		}
	}
	if base, ok := strings.CutSuffix(t, "i"); ok {
		words = append(words, base+"y", base+"ys")
	}
	return words
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
