// Package wordsim measures how alike two texts are by their words: the
// set of a text's words, the Jaccard similarity of two sets, and the
// band keys of a set's MinHash signature (locality-sensitive hashing), so
// that the sets like a given one are found by a few key lookups rather
// than a comparison with every other.
//
// With Bands bands of Rows rows, a pair at similarity 0.6 shares a band
// key with probability 0.95, one at 0.3 with 0.28.
package wordsim

import (
	"encoding/hex"
	"hash/fnv"
	"strings"
	"unicode"
)

// The MinHash signature's shape.
const (
	Bands = 12
	Rows  = 3
)

// Words returns the set of text's words: lower-case runs of letters and
// digits of two characters or more.
func Words(text string) map[string]struct{} {
	set := make(map[string]struct{})
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) > 1 {
			set[w] = struct{}{}
		}
	}
	return set
}

// Jaccard is |a ∩ b| / |a ∪ b|; two empty sets are alike.
func Jaccard(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for w := range a {
		if _, ok := b[w]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// BandKeys returns the band keys of words' MinHash signature, Bands of
// them; none for an empty set.
func BandKeys(words map[string]struct{}) []string {
	if len(words) == 0 {
		return nil
	}
	var sig [Bands * Rows]uint64
	for i := range sig {
		sig[i] = ^uint64(0)
	}
	for w := range words {
		h := fnv.New64a()
		h.Write([]byte(w))
		base := h.Sum64()
		for i := range sig {
			// Independent hash functions from one: multiply-xorshift mixing
			// of the word hash with a per-function seed.
			x := base ^ (uint64(i+1) * 0x9e3779b97f4a7c15)
			x ^= x >> 33
			x *= 0xff51afd7ed558ccd
			x ^= x >> 33
			if x < sig[i] {
				sig[i] = x
			}
		}
	}
	keys := make([]string, Bands)
	for b := range keys {
		h := fnv.New64a()
		var buf [8]byte
		for r := range Rows {
			v := sig[b*Rows+r]
			for j := range buf {
				buf[j] = byte(v >> (8 * j))
			}
			h.Write(buf[:])
		}
		keys[b] = string(rune('a'+b)) + hex.EncodeToString(h.Sum(nil))
	}
	return keys
}
