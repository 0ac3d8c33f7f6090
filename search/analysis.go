package search

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	unicodetok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
)

// Analyzers.
const (
	// analyzerText is bleve's English analyzer ("en": Unicode word
	// segmentation, possessives, lower case, English stop words, Porter
	// stemmer) with identPartsFilter after segmentation and
	// irregularFilter before the stop words.
	analyzerText = "memmesh_text"

	// analyzerWords keeps the words of query text unstemmed, for the
	// typo-tolerant pass and excerpts (no field is indexed with it):
	// Unicode word segmentation, identPartsFilter, lower case, English stop
	// words.
	analyzerWords = "memmesh_words"

	filterIdentParts = "memmesh_ident_parts"
	filterIrregular  = "memmesh_irregular"
)

func init() {
	err := registry.RegisterTokenFilter(filterIdentParts,
		func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
			return identPartsFilter{}, nil
		})
	if err != nil {
		panic(err)
	}
	err = registry.RegisterTokenFilter(filterIrregular,
		func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
			return irregularFilter{}, nil
		})
	if err != nil {
		panic(err)
	}
}

// addAnalyzers defines analyzerText and analyzerWords in im.
func addAnalyzers(im *mapping.IndexMappingImpl) error {
	analyzers := map[string][]string{
		analyzerText:  {filterIdentParts, en.PossessiveName, lowercase.Name, filterIrregular, en.StopName, porter.Name},
		analyzerWords: {filterIdentParts, lowercase.Name, en.StopName},
	}
	for name, filters := range analyzers {
		err := im.AddCustomAnalyzer(name, map[string]any{
			"type":          custom.Name,
			"tokenizer":     unicodetok.Name,
			"token_filters": filters,
		})
		if err != nil {
			return fmt.Errorf("define analyzer %s: %w", name, err)
		}
	}
	return nil
}

// identPartsFilter keeps every token and follows a token made of several
// identifier parts (parseConfig, HTTPServer, snake_case_name, bar.go) with
// one token per part at the same position. Unicode word segmentation keeps
// such identifiers whole, so without the parts "config" would not find
// "parseConfig".
type identPartsFilter struct{}

func (identPartsFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	var out analysis.TokenStream // allocated at the first identifier
	for i, tok := range input {
		parts := identParts(tok.Term)
		if len(parts) < 2 {
			if out != nil {
				out = append(out, tok)
			}
			continue
		}
		if out == nil {
			out = make(analysis.TokenStream, i, len(input)+2*len(parts))
			copy(out, input[:i])
		}
		out = append(out, tok)
		for _, p := range parts {
			out = append(out, &analysis.Token{
				Term:     append([]byte(nil), tok.Term[p[0]:p[1]]...),
				Start:    tok.Start + p[0],
				End:      tok.Start + p[1],
				Position: tok.Position,
				Type:     tok.Type,
			})
		}
	}
	if out == nil {
		return input
	}
	return out
}

// identParts splits term into the byte ranges of its identifier parts.
// Parts are separated by any rune that is neither a letter, a digit nor an
// apostrophe (so "don't" and "user's" stay whole), and
// by case changes: before an upper-case letter that follows a lower-case
// letter or a digit (parse|Config), and before the last upper-case letter
// of a run that is followed by a lower-case one (HTTP|Server).
func identParts(term []byte) [][2]int {
	var parts [][2]int
	start := -1
	var prev rune
	for i := 0; i < len(term); {
		r, size := utf8.DecodeRune(term[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !isApostrophe(r) {
			if start >= 0 {
				parts = append(parts, [2]int{start, i})
				start = -1
			}
			i += size
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			next, _ := utf8.DecodeRune(term[i+size:])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) ||
				(unicode.IsUpper(prev) && unicode.IsLower(next)) {
				parts = append(parts, [2]int{start, i})
				start = i
			}
		}
		if start < 0 {
			start = i
		}
		prev = r
		i += size
	}
	if start >= 0 {
		parts = append(parts, [2]int{start, len(term)})
	}
	return parts
}

func isApostrophe(r rune) bool { return r == '\'' || r == '’' }
