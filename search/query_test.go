package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memmesh/memmesh/internal/mutate"
)

// identWord returns one word of n distinct identifier parts (p0_p1_...),
// each a separate term once analysed.
func identWord(prefix string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return strings.Join(parts, "_")
}

// TestQueryBounds: text past a bound is refused before any work, with a
// message that names the bound.
func TestQueryBounds(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix, mem("a", "Postgres", "postgres connection pools"))
	tests := []struct {
		name string
		text string
		want string // part of the error
	}{
		{"one huge word", strings.Repeat("x", 61440), "query is 61440 bytes: at most 4096"},
		{"long word", "postgres " + strings.Repeat("y", 5000), "query is 5009 bytes"},
		{"a word past the word bound", strings.Repeat("z", maxWordBytes+1), fmt.Sprintf("a word of %d bytes", maxWordBytes+1)},
		{"too many words", strings.Repeat("word ", MaxQueryWords+1), fmt.Sprintf("%d words: at most %d", MaxQueryWords+1, MaxQueryWords)},
		{"too many phrases", strings.Repeat(`"pool" `, maxPhrases+1), fmt.Sprintf("%d phrases: at most %d", maxPhrases+1, maxPhrases)},
		{"too many terms", identWord("a", 60) + " " + identWord("b", 60) + " " + identWord("c", 60), "terms once identifiers are split"},
		{"invalid utf-8", "caf\xe9", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ix.Search(context.Background(), Query{Text: tt.text, Now: now})
			if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalidQuery saying %q", err, tt.want)
			}
			if err := CheckText(tt.text); tt.name != "too many terms" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("CheckText: %v, want %q", err, tt.want)
			}
		})
	}
	// At the bounds, queries run.
	var full []string // 4096 bytes in 16 words
	for i := range 16 {
		full = append(full, strings.Repeat(string(rune('a'+i)), maxWordBytes-1))
	}
	full[0] += "a"
	for _, text := range []string{
		strings.Join(full, " "),
		strings.Repeat("x", maxWordBytes),
		strings.Repeat("postgres ", MaxQueryWords),
		strings.Repeat(`"pool" `, maxPhrases),
	} {
		if _, err := ix.Search(context.Background(), Query{Text: text, Now: now}); err != nil {
			t.Errorf("%d bytes: %v", len(text), err)
		}
	}
}

// fuzzed returns the words that q's fuzzy pass matches with edits.
func fuzzed(t testing.TB, ix *Index, text string) []string {
	t.Helper()
	p, err := ix.plan(Query{Text: text, Now: now})
	if err != nil {
		t.Fatalf("plan(%q): %v", text, err)
	}
	if len(p.phrases) > 0 {
		return nil
	}
	var out []string
	for _, w := range p.fuzzyWords() {
		if w.edits > 0 {
			out = append(out, w.word)
		}
	}
	return out
}

// TestFuzzyBounds: the typo-tolerant pass builds a Levenshtein automaton
// per word whose size grows with the word (vellum reserves 1 KiB per
// possible state: about 34 KiB per character at two edits), so only short
// words, and only the first few, are matched with edits.
func TestFuzzyBounds(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	long := strings.Repeat("k", maxFuzzyRunes+1)
	if got := fuzzed(t, ix, long); len(got) != 0 {
		t.Errorf("a word of %d characters is fuzzed: %v", maxFuzzyRunes+1, got)
	}
	if got := fuzzed(t, ix, strings.Repeat("k", maxFuzzyRunes)); len(got) != 1 {
		t.Errorf("a word of %d characters is not fuzzed: %v", maxFuzzyRunes, got)
	}
	var words []string
	for i := range maxFuzzyWords + 4 {
		words = append(words, fmt.Sprintf("word%c%c", 'a'+i, 'a'+i))
	}
	got := fuzzed(t, ix, strings.Join(words, " "))
	if len(got) != maxFuzzyWords || got[0] != words[0] {
		t.Errorf("fuzzed %v, want the first %d of %v", got, maxFuzzyWords, words)
	}
	// A long word still matches exactly in the fallback pass.
	apply(t, ix, mem("long", "Long", "the token "+long+" appears"))
	if res := search(t, ix, Query{Text: long}); len(res.Hits) != 1 {
		t.Errorf("long word: hits %v", ids(res))
	}
}

// querySeeds are query texts for the fuzz target's corpus.
var querySeeds = []string{
	"postgres connection pool",
	`"connection pool" postgres`,
	`"unterminated phrase`,
	"parseConfig HTTPServer snake_case_name file_source.go",
	"postgress atovakuum configuraton",
	"tenant:user +y -x title:keys (a OR b) \\ ~ ^2 /re/ [a TO b] {}",
	"the of and",
	`""`,
	"café naïve 日本語 emoji 🎉",
	"June 2025",
	strings.Repeat("k", maxFuzzyRunes+3),
}

// FuzzSearchText: any text is either refused with ErrInvalidQuery or
// searched without error; accepted text never fuzzes more or longer words
// than the bounds allow, and the bounds CheckText reports hold in Search.
func FuzzSearchText(f *testing.F) {
	var seeds [][]byte
	for _, s := range querySeeds {
		seeds = append(seeds, []byte(s))
		f.Add([]byte(s))
	}
	mutate.Seeds(f, 200, seeds...)
	ix := openTest(f)
	apply(f, ix,
		mem("pg", "Postgres vacuum", "Autovacuum runs on the postgres primary; connection pool of 20."),
		mem("ids", "Identifiers", "Use parseConfiguration before startup in file_source.go."),
		mem("utf", "Café", "naïve 日本語 emoji 🎉 in June 2025"),
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		text := string(data)
		res, err := ix.Search(context.Background(), Query{Text: text, Now: now})
		if err != nil {
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("Search(%q): %v, want nil or ErrInvalidQuery", text, err)
			}
			return
		}
		if CheckText(text) != nil {
			t.Fatalf("Search(%q) ran, but CheckText refuses it: %v", text, CheckText(text))
		}
		if len(res.Hits) > DefaultLimit {
			t.Fatalf("Search(%q): %d hits, limit %d", text, len(res.Hits), DefaultLimit)
		}
		words := fuzzed(t, ix, text)
		if len(words) > maxFuzzyWords {
			t.Fatalf("Search(%q) fuzzes %d words", text, len(words))
		}
		for _, w := range words {
			if utf8.RuneCountInString(w) > maxFuzzyRunes {
				t.Fatalf("Search(%q) fuzzes %q", text, w)
			}
		}
	})
}
