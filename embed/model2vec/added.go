package model2vec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedJSON is an entry of tokenizer.json's added_tokens: a token (such
// as [CLS]) found in a text before the model's own splitting. Its lstrip
// and rstrip options only absorb whitespace, which separates tokens here
// anyway, so they are not read.
type addedJSON struct {
	ID         int64  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Normalized bool   `json:"normalized"` // matched in the normalized text
}

type addedToken struct {
	content    string
	id         int32
	singleWord bool
}

// addedSet finds added tokens in a text, leftmost first and, of those
// starting at the same place, longest first, as the tokenizers library
// does.
type addedSet struct {
	first   [256]bool             // a token starts with this byte
	byFirst map[byte][]addedToken // longest first
}

// setAdded splits the added tokens into those matched in the raw text and
// those matched in the normalized text (whose content is normalized too).
func (t *wordPiece) setAdded(tokens []addedJSON) error {
	if len(tokens) > maxVocab {
		return fmt.Errorf("%w: %d added tokens, at most %d", errTokenizer, len(tokens), maxVocab)
	}
	for _, a := range tokens {
		if a.ID < 0 || a.ID >= maxVocab || a.Content == "" || len(a.Content) > maxTokenBytes {
			return fmt.Errorf("%w: added token %.40q of id %d: empty, too long or id out of range", errTokenizer, a.Content, a.ID)
		}
		t.maxID = max(t.maxID, int32(a.ID))
		set, content := &t.raw, a.Content
		if a.Normalized {
			set, content = &t.normed, string(t.normalize(nil, a.Content))
		}
		set.add(addedToken{content: content, id: int32(a.ID), singleWord: a.SingleWord})
	}
	t.raw.sort()
	t.normed.sort()
	return nil
}

func (s *addedSet) add(a addedToken) {
	if a.content == "" {
		return // normalized away: it can match nothing
	}
	if s.byFirst == nil {
		s.byFirst = map[byte][]addedToken{}
	}
	c := a.content[0]
	s.first[c] = true
	s.byFirst[c] = append(s.byFirst[c], a)
}

// sort puts the longest tokens first, once all are added.
func (s *addedSet) sort() {
	for _, list := range s.byFirst {
		slices.SortStableFunc(list, func(x, y addedToken) int { return cmp.Compare(len(y.content), len(x.content)) })
	}
}

// cut finds the first added token in text: it returns the text before it,
// its id and the text after it, or the whole text and ok false.
func (s *addedSet) cut(text string) (before string, id int32, ok bool, after string) {
	if s.byFirst == nil {
		return text, 0, false, ""
	}
	for i := 0; i < len(text); i++ {
		if !s.first[text[i]] {
			continue
		}
		for _, a := range s.byFirst[text[i]] {
			end := i + len(a.content)
			if strings.HasPrefix(text[i:], a.content) && (!a.singleWord || alone(text, i, end)) {
				return text[:i], a.id, true, text[end:]
			}
		}
	}
	return text, 0, false, ""
}

// alone says whether text[start:end] is no part of a longer word.
func alone(text string, start, end int) bool {
	before, _ := utf8.DecodeLastRuneInString(text[:start])
	after, _ := utf8.DecodeRuneInString(text[end:])
	return !isWordRune(before) && !isWordRune(after)
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}
