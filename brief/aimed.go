package brief

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/search"
)

// A memory matches a query well enough for an aimed brief when it holds
// at least minMatchedTerms of the query's terms (all of them for a
// shorter query) and a share minMatchedShare of them, or is near its
// meaning (nearEnough), and scores at least minRelativeScore of the best
// match. Typo-tolerant matches never do.
const (
	minMatchedTerms  = 2
	minMatchedShare  = 0.2
	minRelativeScore = 0.3
	aimedCandidates  = 20 // search results an aimed brief considers
)

// A memory is near enough a query's meaning for an aimed brief when the
// cosine of their vectors is at least minAimedCosine and at least
// minAimedNearShare of the nearest result's: the nearest memories are
// returned whatever their distance, and a brief holds nothing rather than
// the least far.
const (
	minAimedCosine    = 0.5
	minAimedNearShare = 0.8
)

func nearEnough(cosine, best float64) bool {
	return cosine >= minAimedCosine && cosine >= minAimedNearShare*best
}

// aimQuery makes a search of a task's or prompt's text, which may be long
// and hold quotes: its first search.MaxQueryWords words that are not
// overlong, as terms, within search.MaxQueryBytes.
func aimQuery(text string) string {
	var b strings.Builder
	words := 0
	for _, w := range strings.Fields(strings.ReplaceAll(text, `"`, " ")) {
		if len(w) > maxAimedWordBytes {
			continue
		}
		if words == search.MaxQueryWords || b.Len()+len(w)+1 > search.MaxQueryBytes {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		words++
	}
	return b.String()
}

// maxAimedWordBytes drops words of a prompt too long to be words (a
// pasted hash or blob) from its search.
const maxAimedWordBytes = 64

// queryCandidates returns the memories of ns that match query well, best
// first, as candidates of an aimed brief.
func (mk *Maker) queryCandidates(ctx context.Context, ns, query string) ([]candidate, error) {
	res, err := mk.cfg.Host.Search(ctx, api.SearchRequest{Query: query, Namespace: ns, Limit: aimedCandidates, NoGraph: true, Statuses: []model.Status{model.StatusActive}})
	if err != nil || res.Fuzzy || len(res.Results) == 0 {
		return nil, err
	}
	want := mk.cfg.Host.Terms(query)
	need := min(minMatchedTerms, len(want))
	need = max(need, int(math.Ceil(minMatchedShare*float64(len(want)))))
	top := res.Results[0].Score
	bestNear := 0.0
	for _, h := range res.Results {
		bestNear = max(bestNear, h.Semantic)
	}
	var out []candidate
	for i := range res.Results {
		h := &res.Results[i]
		if h.Score < minRelativeScore*top {
			break
		}
		have := mk.cfg.Host.Terms(h.Title + "\n" + h.Content)
		matched := 0
		for _, t := range want {
			if slices.Contains(have, t) {
				matched++
			}
		}
		if matched < need && !nearEnough(h.Semantic, bestNear) {
			continue
		}
		out = append(out, candidate{id: h.Memory.Memory.ID, score: h.Score, key: -h.Score, section: api.SectionMatches})
	}
	return out, nil
}
