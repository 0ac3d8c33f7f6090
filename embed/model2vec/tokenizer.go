package model2vec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Bounds of a tokenizer.json.
const (
	maxVocab      = 1 << 22 // tokens
	maxTokenBytes = 1 << 10 // bytes of one token's text
)

var errTokenizer = errors.New("bad tokenizer")

// tokenizerJSON is the part of a Hugging Face tokenizer.json that a
// WordPiece model with the BERT normalizer and pre-tokenizer uses.
type tokenizerJSON struct {
	AddedTokens  []addedJSON       `json:"added_tokens"`
	Normalizer   *normalizerConfig `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string          `json:"type"`
		UnkToken                string          `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int             `json:"max_input_chars_per_word"`
		Vocab                   json.RawMessage `json:"vocab"` // its shape depends on Type
	} `json:"model"`
}

type normalizerConfig struct {
	Type               string `json:"type"`
	CleanText          bool   `json:"clean_text"`
	HandleChineseChars bool   `json:"handle_chinese_chars"`
	StripAccents       *bool  `json:"strip_accents"` // null: as lowercase
	Lowercase          bool   `json:"lowercase"`
}

// wordPiece is a BERT tokenizer: the BertNormalizer's steps, the
// BertPreTokenizer's split on whitespace and punctuation, and WordPiece's
// greedy longest match with continuation pieces.
type wordPiece struct {
	norm     normalizerConfig
	stripAcc bool
	maxChars int              // a longer word is unknown
	words    map[string]int32 // pieces that start a word
	cont     map[string]int32 // continuation pieces, without their prefix
	unk      int32            // -1 when the vocabulary has no unknown token
	maxID    int32
	longest  int      // bytes of the longest piece: no longer match is tried
	median   int      // the median token's length in characters
	raw      addedSet // added tokens matched in the text as written
	normed   addedSet // added tokens matched in the normalized text
}

// parseTokenizer builds the tokenizer that tokenizer.json describes, or
// says which part of it is not supported.
func parseTokenizer(data []byte) (*wordPiece, error) {
	var f tokenizerJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", errTokenizer, err)
	}
	if f.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("%w: tokenizer model %s not supported (WordPiece only)", errTokenizer, f.Model.Type)
	}
	if f.Normalizer != nil && f.Normalizer.Type != "BertNormalizer" {
		return nil, fmt.Errorf("%w: normalizer %s not supported (BertNormalizer only)", errTokenizer, f.Normalizer.Type)
	}
	if f.PreTokenizer == nil || f.PreTokenizer.Type != "BertPreTokenizer" {
		return nil, fmt.Errorf("%w: pre-tokenizer not supported (BertPreTokenizer only)", errTokenizer)
	}
	var vocab map[string]int64
	if err := json.Unmarshal(f.Model.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("%w: vocab: %w", errTokenizer, err)
	}
	if len(vocab) == 0 || len(vocab) > maxVocab {
		return nil, fmt.Errorf("%w: %d tokens in the vocabulary, from 1 to %d", errTokenizer, len(vocab), maxVocab)
	}
	t := &wordPiece{maxChars: f.Model.MaxInputCharsPerWord, unk: -1}
	if f.Normalizer != nil {
		t.norm = *f.Normalizer
		t.stripAcc = t.norm.Lowercase
		if t.norm.StripAccents != nil {
			t.stripAcc = *t.norm.StripAccents
		}
	}
	if t.maxChars <= 0 {
		t.maxChars = 100 // the tokenizers library's default
	}
	prefix := "##"
	if f.Model.ContinuingSubwordPrefix != nil {
		prefix = *f.Model.ContinuingSubwordPrefix
	}
	if err := t.setVocab(vocab, prefix); err != nil {
		return nil, err
	}
	if err := t.setAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	t.setMedian(vocab, f.AddedTokens)
	if id, ok := vocab[f.Model.UnkToken]; ok {
		t.unk = int32(id)
	}
	return t, nil
}

// setVocab splits the vocabulary into pieces that start a word and
// continuation pieces, so that a lookup needs no concatenation.
func (t *wordPiece) setVocab(vocab map[string]int64, prefix string) error {
	t.words = make(map[string]int32, len(vocab))
	t.cont = make(map[string]int32)
	for tok, id := range vocab {
		if id < 0 || id >= maxVocab {
			return fmt.Errorf("%w: token %q has id %d, from 0 to %d", errTokenizer, tok, id, maxVocab-1)
		}
		if len(tok) > maxTokenBytes {
			return fmt.Errorf("%w: a token of %d bytes, at most %d", errTokenizer, len(tok), maxTokenBytes)
		}
		t.maxID = max(t.maxID, int32(id))
		if rest, ok := strings.CutPrefix(tok, prefix); ok && prefix != "" {
			t.cont[rest] = int32(id)
			t.longest = max(t.longest, len(rest))
		} else {
			t.words[tok] = int32(id)
			t.longest = max(t.longest, len(tok))
		}
	}
	return nil
}

// setMedian finds the median length in characters of the vocabulary's
// tokens (with their ## and the added tokens), rounded down, as Model2Vec
// does to cut texts before tokenizing them. Lengths are at most
// maxTokenBytes, so they are counted, not sorted.
func (t *wordPiece) setMedian(vocab map[string]int64, added []addedJSON) {
	var count [maxTokenBytes + 1]int
	n := 0
	for tok := range vocab {
		count[utf8.RuneCountInString(tok)]++
		n++
	}
	for _, a := range added {
		if _, ok := vocab[a.Content]; !ok {
			count[utf8.RuneCountInString(a.Content)]++
			n++
		}
	}
	t.median = (nth(count[:], (n-1)/2) + nth(count[:], n/2)) / 2
}

// nth is the length of rank k (from 0) in a count of lengths.
func nth(count []int, k int) int {
	for length, c := range count {
		if k < c {
			return length
		}
		k -= c
	}
	return 0
}

// cut is the beginning of text that Model2Vec tokenizes for at most limit
// tokens: limit × the median token length, in characters.
func (t *wordPiece) cut(text string, limit int) string {
	chars := 0
	for i := range text {
		if chars == limit*t.median {
			return text[:i]
		}
		chars++
	}
	return text
}

// appendIDs appends the ids of text's tokens to ids, leaving out the
// unknown token as Model2Vec does, up to limit ids in all. Added tokens
// are found first, in the raw text, then in the normalized text; what is
// between them is split into words and those into pieces.
func (t *wordPiece) appendIDs(ids []int32, text string, limit int, scratch []byte) ([]int32, []byte) {
	norm := scratch[:0]
	for rest := text; rest != "" && len(ids) < limit; {
		before, id, ok, after := t.raw.cut(rest)
		norm = t.normalize(norm[:0], before)
		ids = t.appendNormalized(ids, string(norm), limit) // one copy, so that map lookups take substrings
		if ok {
			ids = t.appendID(ids, id)
		}
		rest = after
	}
	return ids[:min(len(ids), limit)], norm
}

// appendNormalized appends the ids of a normalized text.
func (t *wordPiece) appendNormalized(ids []int32, s string, limit int) []int32 {
	for rest := s; rest != "" && len(ids) < limit; {
		before, id, ok, after := t.normed.cut(rest)
		ids = t.appendWords(ids, before, limit)
		if ok {
			ids = t.appendID(ids, id)
		}
		rest = after
	}
	return ids
}

// appendWords splits a normalized text as the BERT pre-tokenizer does, on
// spaces and around each punctuation character, and appends its words'
// ids.
func (t *wordPiece) appendWords(ids []int32, s string, limit int) []int32 {
	for start := 0; start < len(s) && len(ids) < limit; {
		r, size := utf8.DecodeRuneInString(s[start:])
		if r == ' ' {
			start += size
			continue
		}
		end := start + size
		if !isPunct(r) {
			for end < len(s) {
				r, size := utf8.DecodeRuneInString(s[end:])
				if r == ' ' || isPunct(r) {
					break
				}
				end += size
			}
		}
		ids = t.word(ids, s[start:end])
		start = end
	}
	return ids
}

// appendID appends id unless it is the unknown token's.
func (t *wordPiece) appendID(ids []int32, id int32) []int32 {
	if id == t.unk {
		return ids
	}
	return append(ids, id)
}

// word appends the WordPiece ids of one word: the longest piece in the
// vocabulary at each position, or nothing (the unknown token) when some
// position has none.
func (t *wordPiece) word(ids []int32, w string) []int32 {
	if utf8.RuneCountInString(w) > t.maxChars {
		return ids
	}
	n := len(ids)
	for start := 0; start < len(w); {
		vocab := t.words
		if start > 0 {
			vocab = t.cont
		}
		end := min(len(w), start+t.longest) // may cut a rune: no piece matches that
		id, ok := int32(0), false
		for end > start {
			if id, ok = vocab[w[start:end]]; ok {
				break
			}
			_, size := utf8.DecodeLastRuneInString(w[start:end])
			end -= size
		}
		if !ok {
			return ids[:n]
		}
		ids = t.appendID(ids, id)
		start = end
	}
	return ids
}

// normalize applies the BertNormalizer's steps in its order: clean the
// text (drop controls, whitespace to spaces), space out CJK ideographs,
// strip accents (NFD, drop nonspacing marks), lowercase. After it, words
// are separated by single-byte spaces.
func (t *wordPiece) normalize(dst []byte, text string) []byte {
	if isASCII(text) {
		return t.normalizeASCII(dst, text)
	}
	for _, r := range text {
		if t.norm.CleanText {
			if r == 0 || r == utf8.RuneError || isControl(r) {
				continue
			}
			if isSpace(r) {
				r = ' '
			}
		} else if isSpace(r) {
			r = ' ' // the pre-tokenizer splits on every whitespace
		}
		if t.norm.HandleChineseChars && isCJK(r) {
			dst = append(dst, ' ')
			dst = t.appendFolded(dst, r) // compatibility ideographs decompose
			dst = append(dst, ' ')
			continue
		}
		dst = t.appendFolded(dst, r)
	}
	return dst
}

// normalizeASCII is normalize for ASCII text: no accents, no CJK.
func (t *wordPiece) normalizeASCII(dst []byte, text string) []byte {
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\t' || c == '\n' || c == '\r' || c == ' ':
			c = ' '
		case c < 0x20 || c == 0x7f:
			if t.norm.CleanText {
				continue // controls, vertical tab and form feed among them
			}
			if c == '\v' || c == '\f' {
				c = ' ' // whitespace all the same, to the pre-tokenizer
			}
		case t.norm.Lowercase && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// appendFolded appends r with its accents stripped and lowercased, as the
// normalizer says.
func (t *wordPiece) appendFolded(dst []byte, r rune) []byte {
	if !t.stripAcc {
		return utf8.AppendRune(dst, t.fold(r))
	}
	var buf [utf8.UTFMax]byte
	var dec [4 * utf8.UTFMax]byte
	d := norm.NFD.Append(dec[:0], utf8.AppendRune(buf[:0], r)...)
	for len(d) > 0 {
		c, size := utf8.DecodeRune(d)
		d = d[size:]
		if !unicode.Is(unicode.Mn, c) {
			dst = utf8.AppendRune(dst, t.fold(c))
		}
	}
	return dst
}

func (t *wordPiece) fold(r rune) rune {
	if t.norm.Lowercase {
		return unicode.ToLower(r)
	}
	return r
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isSpace is the tokenizers library's whitespace: tab, newline, carriage
// return and Unicode's White_Space.
func isSpace(r rune) bool { return unicode.Is(unicode.White_Space, r) }

// isControl is a character of category C (controls, formats, private
// use, surrogates, unassigned) other than tab, newline and carriage return.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.Is(unicode.C, r) || !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isPunct is the BERT pre-tokenizer's punctuation: ASCII punctuation and
// Unicode's category P.
func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return r > ' ' && r < 0x7f && !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}
	return unicode.IsPunct(r)
}

// isCJK is a CJK Unified Ideograph (and its extensions and compatibility
// blocks), the ranges BERT spaces out.
func isCJK(r rune) bool {
	return 0x4E00 <= r && r <= 0x9FFF || 0x3400 <= r && r <= 0x4DBF ||
		0x20000 <= r && r <= 0x2A6DF || 0x2A700 <= r && r <= 0x2B73F ||
		0x2B740 <= r && r <= 0x2B81F || 0x2B920 <= r && r <= 0x2CEAF ||
		0xF900 <= r && r <= 0xFAFF || 0x2F800 <= r && r <= 0x2FA1F
}
