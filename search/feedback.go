package search

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/blevesearch/bleve/v2/search/query"
)

// Pseudo-relevance feedback. The words that the best matches of a query
// share, and that the query lacks, are what the store associates with the
// query's words: "postgres driver" finds the memories about postgres,
// several of which name pgx, and a second pass for pgx then finds "Use
// pgx, not lib/pq", which names neither postgres nor a driver. The
// associations come from the store itself at query time, so they follow
// every write and need no network and no model.
//
// The pass runs only when the query's words find fewer memories than were
// asked for: when they find enough, the words say what is wanted, and
// terms borrowed from the best matches pull the ranking towards those
// matches' other topics (on the LoCoMo conversations, where every
// question matches dozens of turns, such a pass lowered R@5 from 0.65 to
// 0.52 at this share, and to 0.64 at a tenth of it).
const (
	feedbackDocs  = 5   // best matches read for associations
	feedbackTerms = 8   // associated terms searched for
	feedbackMin   = 2   // an associated term occurs in at least this many of them
	feedbackShare = 0.5 // of the second pass's score, added to the first's
	// feedbackMaxBytes bounds the text of one match read for feedback.
	feedbackMaxBytes = 16 << 10
)

// MatchAssociated is the match kind of a memory found only through the
// terms its query's best matches associate with the query.
const MatchAssociated = "associated"

// feedback adds to res the memories found by a second pass, a search for
// the terms that the best matches share and the query lacks, weighted by
// how much they say about those matches.
func (ix *Index) feedback(ctx context.Context, p *plan, res Result) (Result, error) {
	if p.texts == nil || len(res.Hits) < feedbackMin || len(res.Hits) >= p.limit || len(p.phrases) > 0 {
		return res, nil
	}
	top := res.Hits[:min(len(res.Hits), feedbackDocs)]
	ids := make([]string, len(top))
	for i, h := range top {
		ids[i] = h.ID
	}
	texts := p.texts(ids)
	if len(texts) != len(top) {
		return res, nil
	}
	assoc, err := ix.associated(ctx, p, top, texts)
	if err != nil || len(assoc) == 0 {
		return res, err
	}
	b := query.NewBooleanQuery(nil, nil, nil)
	for _, a := range assoc {
		b.AddShould(boosted(query.NewTermQuery(a.term), fieldContent, a.weight))
	}
	more, _, err := ix.rank(ctx, p, p.constrained(b), MatchAssociated)
	if err != nil {
		return res, err
	}
	return fuse(res, more, p.limit), nil
}

// association is a term the best matches share, with its weight.
type association struct {
	term   string
	weight float64
}

// associated returns the terms of texts (the matches top) that occur in
// at least feedbackMin of them and not in the query, weighted by their
// frequency in each match (weighted by the match's share of the scores)
// times their inverse document frequency in the index, strongest first,
// with the strongest weighing 1.
func (ix *Index) associated(ctx context.Context, p *plan, top []Hit, texts []string) ([]association, error) {
	var total float64
	for _, h := range top {
		total += h.Score
	}
	if total <= 0 {
		return nil, nil
	}
	rel := map[string]float64{}
	docs := map[string]int{}
	for i, text := range texts {
		toks := ix.text.Analyze([]byte(text[:min(len(text), feedbackMaxBytes)]))
		if len(toks) == 0 {
			continue
		}
		tf := map[string]int{}
		for _, t := range toks {
			tf[string(t.Term)]++
		}
		for t, n := range tf {
			if slices.Contains(p.terms, t) || len(t) < 2 {
				continue
			}
			rel[t] += top[i].Score / total * float64(n) / float64(len(toks))
			docs[t]++
		}
	}
	var out []association
	for t, r := range rel {
		if docs[t] >= feedbackMin {
			out = append(out, association{term: t, weight: r})
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	r, err := ix.reader("feedback")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	n, err := r.DocCount()
	if err != nil {
		return nil, bleveError("feedback", err)
	}
	for i := range out {
		tfr, err := r.TermFieldReader(ctx, []byte(out[i].term), fieldContent, false, false, false)
		if err != nil {
			return nil, bleveError("feedback", err)
		}
		df := float64(tfr.Count())
		_ = tfr.Close()
		out[i].weight *= math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
	}
	slices.SortFunc(out, func(a, b association) int {
		return cmp.Or(cmp.Compare(b.weight, a.weight), cmp.Compare(a.term, b.term))
	})
	out = out[:min(len(out), feedbackTerms)]
	for i := range out {
		out[i].weight /= out[0].weight
	}
	return out, nil
}

// fuse adds to res what only more found, each scored feedbackShare of
// the best of res times its share of the best of more, so that a memory
// found through associations alone never outranks the best match of the
// words; the matches of the words keep their scores. It keeps the best
// limit.
func fuse(res, more Result, limit int) Result {
	if len(res.Hits) == 0 || len(more.Hits) == 0 || more.Hits[0].Score <= 0 {
		return res
	}
	scale := feedbackShare * res.Hits[0].Score / more.Hits[0].Score
	found := make(map[string]bool, len(res.Hits))
	for _, h := range res.Hits {
		found[h.ID] = true
	}
	hits := slices.Clone(res.Hits)
	added := uint64(0)
	for _, h := range more.Hits {
		if found[h.ID] {
			continue
		}
		h.Score *= scale
		if h.Explain != nil {
			h.Explain.Associated, h.Explain.Final = h.Score, h.Score
		}
		hits = append(hits, h)
		added++
	}
	slices.SortStableFunc(hits, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
	return Result{Hits: hits[:min(len(hits), limit)], Total: res.Total + added}
}
