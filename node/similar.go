package node

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// Near duplicates by words (internal/wordsim): a memory is reported as
// similar at a Jaccard similarity of similarThreshold, and linked to at
// autoLinkThreshold.
const (
	similarThreshold  = 0.6 // Jaccard similarity at which a memory is reported as similar
	autoLinkThreshold = 0.8 // at which a new memory is linked to it (related_to, origin auto-link)
	bandScanLimit     = 16  // ids read per band key
	maxVerified       = 3   // candidates whose records are read, those sharing most bands
)

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
