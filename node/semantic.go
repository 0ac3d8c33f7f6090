package node

import (
	"context"
	"encoding/json"
	"fmt"

	"cmp"
	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/search"
	"github.com/memmesh/memmesh/semantic"
	"github.com/memmesh/memmesh/storage"
)

// semanticSource is the store as the vectors of search by meaning see it:
// every memory not deleted, by the text it is embedded from.
type semanticSource struct{ *Node }

var _ semantic.Source = semanticSource{}

func (s semanticSource) Each(ctx context.Context, fn func(id, text string) error) error {
	return s.store.All(storage.KindMemory, func(rec storage.Record) error {
		var m model.Memory
		if err := json.Unmarshal(rec.Value, &m); err != nil {
			return fmt.Errorf("decode memory %s: %w", rec.ID, err)
		}
		if m.Status == model.StatusDeleted {
			return ctx.Err()
		}
		return fn(m.ID, semantic.TextOf(m.Title, m.Content))
	})
}

func (s semanticSource) Text(id string) (string, bool, error) {
	m, err := s.load(id)
	if storageNotFound(err) {
		return "", false, nil
	}
	if err != nil || m.Status == model.StatusDeleted {
		return "", false, err
	}
	return semantic.TextOf(m.Title, m.Content), true, nil
}

// embedChanged tells the vectors of the memories the indexer indexed
// (put) and erased (del).
func (n *Node) embedChanged(put []model.Memory, del []string) {
	if !n.meaning.Enabled() || len(put)+len(del) == 0 {
		return
	}
	texts := make(map[string]string, len(put))
	var removed []string
	for i := range put {
		m := &put[i]
		if m.Status == model.StatusDeleted {
			removed = append(removed, m.ID)
			continue
		}
		texts[m.ID] = semantic.TextOf(m.Title, m.Content)
	}
	n.meaning.Changed(texts, removed, del)
}

// near returns the memories nearest the meaning of q's text, as the
// search index takes them; none when search by meaning is off or not
// ready.
func (n *Node) near(ctx context.Context, q search.Query) []search.Near {
	if !n.meaning.Enabled() || q.Text == "" {
		return nil
	}
	hits := n.meaning.Near(ctx, q.Text, max(search.DefaultLimit, q.Limit)*nearPerResult)
	near := make([]search.Near, len(hits))
	for i, h := range hits {
		near[i] = search.Near{ID: h.ID, Cosine: h.Cosine}
	}
	return near
}

// nearPerResult is how many memories by meaning a search takes per
// result it returns: enough for those that the filters leave out.
const nearPerResult = 5

// EmbedStatus says how far the vectors of search by meaning are. It
// counts every write acknowledged before it was asked, as a search sees
// them (the indexer hands the memories over).
func (n *Node) EmbedStatus(ctx context.Context) (api.EmbedStatus, error) {
	if n.meaning.Enabled() {
		if err := n.indexer.waitFor(ctx, n.store.DurableSeq()); err != nil {
			return api.EmbedStatus{}, err
		}
	}
	return n.meaning.Status(), nil
}

// EmbedReindex discards the vectors of search by meaning and makes them
// again, in the background.
func (n *Node) EmbedReindex(context.Context) (api.EmbedStatus, error) {
	if err := n.meaning.Reindex(); err != nil {
		return api.EmbedStatus{}, api.Invalidf("%v", err)
	}
	return n.meaning.Status(), nil
}

// similarCosine is the cosine at which a memory just written is linked
// similar_to a live memory of its namespace that says the same in other
// words, from the newer to the older; maxSimilar bounds the links one
// memory gets.
const (
	similarCosine = 0.9
	maxSimilar    = 3
)

// linkSimilar links each memory just embedded (ids, with their vectors)
// to the memories of its namespace nearest its meaning. Errors are
// logged: the links are a help, and the next write tries again.
func (n *Node) linkSimilar(ids []string, vecs [][]float32) {
	for i, id := range ids {
		if err := n.linkSimilarTo(id, vecs[i]); err != nil {
			n.log.Warn("link memories similar by meaning", "memory", DisplayID(id), "err", err)
		}
	}
}

func (n *Node) linkSimilarTo(id string, vec []float32) error {
	m, err := n.load(id)
	if storageNotFound(err) {
		return nil
	}
	if err != nil || !live(&m, n.now()) {
		return err
	}
	linked := 0
	for _, h := range n.meaning.NearVector(vec, maxSimilar+1) {
		if linked == maxSimilar || h.Cosine < similarCosine {
			break
		}
		if h.ID == id {
			continue
		}
		other, err := n.load(h.ID)
		if storageNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if other.Namespace != m.Namespace || !live(&other, n.now()) {
			continue
		}
		newer, older := &m, &other
		if cmp.Or(m.Provenance.CreatedAt.Compare(other.Provenance.CreatedAt), cmp.Compare(m.ID, other.ID)) < 0 {
			newer, older = older, newer
		}
		if err := n.linkOnce(DisplayID(newer.ID), similarTo, DisplayID(older.ID), roundTo(h.Cosine, 2), fmt.Sprintf("the same in other words (cosine %.2f)", h.Cosine)); err != nil {
			return err
		}
		linked++
	}
	return nil
}
