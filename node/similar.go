package node

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// Near-duplicate detection uses MinHash signatures over the words of a
// memory, banded for locality-sensitive hashing (LSH): each band becomes a
// storage index term, so finding candidates is a handful of key lookups, not
// a search. Candidates are then confirmed by their exact word-set Jaccard
// similarity. With 12 bands of 3 rows a pair at similarity 0.6 is found
// with probability 0.95, one at 0.3 with 0.28 (and then rejected).
const (
	lshBands          = 12
	lshRows           = 3
	similarThreshold  = 0.6 // Jaccard similarity at which a memory is reported as similar
	autoLinkThreshold = 0.8 // at which a new memory is linked to it (related_to, origin auto-link)
	bandScanLimit     = 16  // ids read per band key
	maxVerified       = 3   // candidates whose records are read, those sharing most bands
)

// similarity tokens: lower-case words of letters and digits.
func wordSet(text string) map[string]struct{} {
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

// jaccard is |a ∩ b| / |a ∪ b|.
func jaccard(a, b map[string]struct{}) float64 {
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

// lshKeys returns the band keys of a word set's MinHash signature; empty for
// an empty set.
func lshKeys(words map[string]struct{}) []string {
	if len(words) == 0 {
		return nil
	}
	var sig [lshBands * lshRows]uint64
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
	keys := make([]string, lshBands)
	for b := range keys {
		h := fnv.New64a()
		var buf [8]byte
		for r := range lshRows {
			v := sig[b*lshRows+r]
			for j := range buf {
				buf[j] = byte(v >> (8 * j))
			}
			h.Write(buf[:])
		}
		keys[b] = string(rune('a'+b)) + hex.EncodeToString(h.Sum(nil))
	}
	return keys
}

func sortSimilar(s []api.Similar) {
	slices.SortFunc(s, func(a, b api.Similar) int {
		if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

func roundTo(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// autoLinkTargets returns the memory ids that a new memory with these
// similar memories is auto-linked to.
func autoLinkTargets(similar []api.Similar) []string {
	var ids []string
	for _, s := range similar {
		if s.Similarity >= autoLinkThreshold {
			ids = append(ids, strings.TrimPrefix(s.ID, IDPrefix))
		}
	}
	return ids
}

// stillLive returns the similar memories that are still live: found
// before their locks were taken, one may have been retired, deleted or
// purged since. The caller holds the locks of the auto-link targets.
func (n *Node) stillLive(similar []api.Similar) ([]api.Similar, error) {
	now := n.now()
	out := similar[:0]
	for _, s := range similar {
		m, err := n.load(strings.TrimPrefix(s.ID, IDPrefix))
		if storageNotFound(err) {
			continue // purged
		}
		if err != nil {
			return nil, fmt.Errorf("look for similar memories: %w", err)
		}
		if live(&m, now) {
			out = append(out, s)
		}
	}
	return out, nil
}

// autoLinks makes the related_to edges from a new memory to its near
// duplicates (similarity at least autoLinkThreshold), committed with it.
// They are ordinary edges with origin auto-link: unlink removes one.
func (n *Node) autoLinks(m *model.Memory, similar []api.Similar) ([]storage.Record, error) {
	var recs []storage.Record
	from := DisplayID(m.ID)
	for _, s := range similar {
		if s.Similarity < autoLinkThreshold {
			continue
		}
		rec, err := n.autoLink(from, relatedTo, s.ID, s.Similarity, fmt.Sprintf("near duplicate (word similarity %.2f)", s.Similarity), m.Provenance.CreatedAt)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// The relations of auto-links.
const (
	relatedTo = "related_to" // copies of one text, and near duplicates by their words
	similarTo = "similar_to" // the same said in other words, by meaning
)

// autoLink is the record of a new auto-link by rel from memory from to
// memory to (display ids), made at time at.
func (n *Node) autoLink(from, rel, to string, strength float64, notes string, at time.Time) (storage.Record, error) {
	rec, _, err := newEdgeRecord(n.actor, &model.Edge{
		ID: crdt.EdgeID(from, rel, to), From: from, Rel: rel, To: to,
		Strength: strength, Origin: api.OriginAutoLink, Notes: notes, CreatedAt: at, UpdatedAt: at,
	})
	if err != nil {
		return storage.Record{}, fmt.Errorf("auto-link: %w", err)
	}
	return rec, nil
}
