package search

import (
	"cmp"
	"context"
	"slices"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Search by meaning. The caller's vector index (package vector) gives the
// memories whose vectors are nearest the query's (Query.Near); they pass
// the same filters as the matches of the words, take the same multipliers
// (their cosine standing for BM25), and the two ranked lists are fused by
// reciprocal rank fusion:
//
//	fused(d) = wWords/(rrfK + rank in words) + wMeaning/(rrfK + rank by meaning)
//
// RRF uses ranks, not scores, so it needs no calibration between BM25 and
// the cosines of a given model, which differ from model to model. When
// the words matched every term of the query (or every phrase), they say
// what is wanted: the list by meaning then weighs half, so that it
// reorders weak matches and adds what the words missed without putting a
// memory found by meaning alone above a strong match of the words.
const (
	rrfK = 60 // the constant of Cormack et al. (2009), used by most hybrid engines
	// wMeaningStrong weighs the list by meaning when the words matched
	// every term of the query.
	wMeaningStrong = 0.5
	// MaxNear bounds the memories by meaning a query takes.
	MaxNear = 1000
)

// MatchMeaning is the match kind of a memory found by meaning alone.
const MatchMeaning = "meaning"

// Near is a memory whose vector is near the query's.
type Near struct {
	ID     string
	Cosine float64
}

// withMeaning fuses the matches of the words (res; strong when they held
// every term) with the memories near the query (near, best first).
func (ix *Index) withMeaning(ctx context.Context, p *plan, res Result, near []Near, strong bool) (Result, error) {
	near = near[:min(len(near), MaxNear, max(minCandidates, candidateFactor*p.limit))]
	if len(near) == 0 {
		return res, nil
	}
	byMeaning, err := ix.rankNear(ctx, p, near)
	if err != nil || len(byMeaning) == 0 {
		return res, err
	}
	wMeaning := 1.0
	if strong {
		wMeaning = wMeaningStrong
	}
	fused := map[string]float64{}
	hit := map[string]Hit{}
	for i, h := range res.Hits {
		fused[h.ID] += 1 / float64(rrfK+i+1)
		hit[h.ID] = h
	}
	added := uint64(0)
	for i, h := range byMeaning {
		fused[h.ID] += wMeaning / float64(rrfK+i+1)
		if words, ok := hit[h.ID]; ok {
			words.Semantic = h.Semantic
			hit[h.ID] = words
			continue
		}
		hit[h.ID] = h
		added++
	}
	// Scores keep the scale of the words' (the graph expansion lends a
	// share of a match's score to its links): a memory first among the
	// words alone keeps the best words' score. With no match of the
	// words, the scale is that of the best by meaning.
	top := byMeaning[0].Score / wMeaning
	if len(res.Hits) > 0 {
		top = res.Hits[0].Score
	}
	scale := top * (rrfK + 1)
	hits := make([]Hit, 0, len(hit))
	for id, h := range hit {
		h.Score = fused[id] * scale
		if h.Explain != nil {
			h.Explain.Final = h.Score
		}
		hits = append(hits, h)
	}
	slices.SortFunc(hits, func(a, b Hit) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID)) })
	return Result{Hits: hits[:min(len(hits), p.limit)], Total: res.Total + added, Fuzzy: res.Fuzzy, Loose: res.Loose}, nil
}

// rankNear returns the memories of near that pass p's filters, scored by
// their cosine times the multipliers of the matches of words, best first,
// each with its cosine as Semantic.
func (ix *Index) rankNear(ctx context.Context, p *plan, near []Near) ([]Hit, error) {
	cosine := make(map[string]float64, len(near))
	ids := make([]string, 0, len(near))
	for _, n := range near {
		if _, dup := cosine[n.ID]; dup || n.Cosine <= 0 {
			continue
		}
		cosine[n.ID] = n.Cosine
		ids = append(ids, n.ID)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	b := query.NewBooleanQuery([]query.Query{query.NewDocIDQuery(ids)}, nil, nil)
	req := bleve.NewSearchRequestOptions(p.constrained(b), len(ids), 0, false)
	req.Fields = rankFields
	req.Score = "none"
	sr, err := ix.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, bleveError("meaning", err)
	}
	hits := make([]Hit, 0, len(sr.Hits))
	for _, h := range sr.Hits {
		st := storedFrom(h.Fields)
		e := explain(cosine[h.ID], p.rankInputs(h.ID, st), p.now, ix.halfLife, MatchMeaning)
		hit := Hit{ID: h.ID, Score: e.Final, Semantic: cosine[h.ID], Session: st.session, Asks: st.asks}
		if p.explain {
			e.BM25, e.Semantic = 0, cosine[h.ID]
			hit.Explain = &e
		}
		hits = append(hits, hit)
	}
	slices.SortFunc(hits, func(a, b Hit) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID)) })
	return hits, nil
}
