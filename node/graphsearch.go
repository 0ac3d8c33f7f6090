package node

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/search"
)

// Graph-aware search: text matches lend part of their score to the
// memories linked to them and to their neighbours in their session's
// thread, and the memories of a session that matches well gain a little
// together. A memory linked to a strong match can thus be found even when
// it shares no word with the query, and a memory both matched and linked
// rises.
const (
	candidates    = 50  // text matches considered (at least the limit)
	expandHits    = 5   // strong matches whose edges are followed
	expandRatio   = 0.5 // a strong match scores at least this share of the best
	maxNeighbours = 50  // memories pulled in through edges
	linkShare     = 0.4 // of a match's score, given to each memory linked to it
	threadReach   = 2   // thread neighbours on either side of a match
	threadDecay   = 0.7 // the share shrinks by this much per further step
	answerWeight  = 1.5 // a match that asks lends this much more to the memory after it
	sessionShare  = 0.2 // of the mean of a session's best sessionBest matches
	sessionBest   = 3
)

// RelThread names the link between neighbours of a session's thread in
// search explanations; it is derived, never stored.
const RelThread = "thread"

// graphSearch runs q for more candidates than it returns, spreads their
// scores over their links and threads, and ranks the lot. The best limit
// are returned, the matches first: a memory pulled in that does not match
// the query is marked related, with the link that brought it.
func (n *Node) graphSearch(ctx context.Context, q search.Query) (api.SearchResult, error) {
	limit := cmp.Or(q.Limit, search.DefaultLimit)
	tq := q
	tq.Limit = max(limit, candidates)
	res, err := n.indexSearch(ctx, tq)
	if err != nil {
		return api.SearchResult{}, err
	}
	s := spread{fusion: map[string]*api.Fusion{}, session: map[string]string{}, best: map[string]float64{}, explain: map[string]*api.Explanation{}, semantic: map[string]float64{}}
	for _, h := range res.Hits {
		s.fusion[h.ID] = &api.Fusion{Text: h.Score}
		s.session[h.ID] = h.Session
		s.explain[h.ID] = h.Explain
		s.semantic[h.ID] = h.Semantic
	}
	if err := n.spreadLinks(&s, res.Hits); err != nil {
		return api.SearchResult{}, err
	}
	if err := n.spreadThreads(&s, res.Hits); err != nil {
		return api.SearchResult{}, err
	}
	if err := n.scorePulled(ctx, q, &s, res); err != nil {
		return api.SearchResult{}, err
	}
	s.addSessions()

	hits := make([]search.Hit, 0, len(s.fusion))
	for id, f := range s.fusion {
		f.Score = f.Text + f.Linked + f.Session
		hits = append(hits, search.Hit{ID: id, Score: f.Score, Explain: s.explain[id], Semantic: s.semantic[id]})
	}
	err = n.demoteSuperseded(ctx, hits, limit, func(a, b search.Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(s.fusion[b.ID].Text, s.fusion[a.ID].Text), strings.Compare(a.ID, b.ID))
	}, func(h *search.Hit) {
		f := s.fusion[h.ID]
		f.Score -= f.Text * (1 - supersededWeight)
		f.Text *= supersededWeight
		h.Score = f.Score
		demoteExplained(h.Explain)
	})
	if err != nil {
		return api.SearchResult{}, err
	}
	hits = hits[:min(len(hits), limit)]
	// Matches first, each part in rank order.
	related := func(h search.Hit) bool { return s.fusion[h.ID].Text == 0 }
	matches := slices.DeleteFunc(slices.Clone(hits), related)
	res.Hits = append(matches, slices.DeleteFunc(hits, func(h search.Hit) bool { return !related(h) })...)
	// The total counts the memories that match; pulled-in matches past
	// the text candidates are among them.
	res.Total = max(res.Total, uint64(len(matches)))
	fusion := s.fusion
	if !q.Explain {
		fusion = nil
	}
	out, err := n.hydrate(res, fusion)
	if err != nil {
		return api.SearchResult{}, err
	}
	for i := range out.Results {
		if f := s.fusion[strings.TrimPrefix(out.Results[i].ID, IDPrefix)]; f.Text == 0 {
			out.Results[i].Related = fmt.Sprintf("%s %s by %s", relatedHow(f.Rel), n.shortID(strings.TrimPrefix(f.Via, IDPrefix)), f.Rel)
		}
	}
	return out, nil
}

// relatedHow words how a related memory is reached from the match that
// lent it the most.
func relatedHow(rel string) string {
	if rel == RelThread {
		return "near"
	}
	return "linked from"
}

// spread accumulates what matches lend to each other and to the memories
// they pull in.
type spread struct {
	fusion  map[string]*api.Fusion
	session map[string]string  // of matches and thread neighbours
	best    map[string]float64 // the largest share each memory got
	pulled  []string           // ids that are not text matches, in the order reached
	explain map[string]*api.Explanation
	// semantic holds the cosine of the matches found by meaning alone.
	semantic map[string]float64
}

// lend gives share of match's text score to id, reached by rel.
func (s *spread) lend(match search.Hit, id, rel string, share float64) {
	if id == match.ID {
		return
	}
	f := s.fusion[id]
	if f == nil {
		f = &api.Fusion{}
		s.fusion[id] = f
		s.pulled = append(s.pulled, id)
	}
	give := share * match.Score
	f.Linked += give
	if give > s.best[id] {
		s.best[id] = give
		f.Via, f.Rel = DisplayID(match.ID), rel
	}
}

// spreadLinks lends the strong matches' scores over their valid edges to
// memories, but not to the memories they supersede.
func (n *Node) spreadLinks(s *spread, hits []search.Hit) error {
	now := n.now()
	pulled := 0
	for i, h := range hits {
		if i == expandHits || h.Score < expandRatio*hits[0].Score {
			break
		}
		edges, err := n.edgesOf(DisplayID(h.ID), api.Both)
		if err != nil {
			return err
		}
		slices.SortStableFunc(edges, func(a, b model.Edge) int { return cmp.Compare(b.Strength, a.Strength) })
		for _, e := range edges {
			other := e.To
			if other == DisplayID(h.ID) {
				other = e.From
			}
			id, isMemory := strings.CutPrefix(other, IDPrefix)
			if !isMemory || !validAt(&e, now) || e.Rel == "supersedes" && e.From == DisplayID(h.ID) {
				continue // a match lends nothing to what it superseded
			}
			if s.fusion[id] == nil {
				if pulled == maxNeighbours {
					continue
				}
				pulled++
			}
			s.lend(h, id, e.Rel, linkShare)
		}
	}
	return nil
}

// spreadThreads lends every match's score to its neighbours in its
// session's thread, less with each step. A match that asks a question
// lends more to the memory that follows it: in a session, what follows a
// question is most often its answer, in other words than the question's.
func (n *Node) spreadThreads(s *spread, hits []search.Hit) error {
	threads := map[string][]string{}
	for _, h := range hits {
		if h.Session == "" {
			continue
		}
		ids, ok := threads[h.Session]
		if !ok {
			var err error
			if ids, err = n.thread(h.Session); err != nil {
				return err
			}
			threads[h.Session] = ids
		}
		at := slices.Index(ids, h.ID)
		if at < 0 {
			continue
		}
		share := linkShare
		for step := 1; step <= threadReach; step++ {
			for _, j := range []int{at - step, at + step} {
				if j >= 0 && j < len(ids) {
					give := share
					if h.Asks && j == at+1 {
						give *= answerWeight
					}
					s.lend(h, ids[j], RelThread, give)
					s.session[ids[j]] = h.Session
				}
			}
			share *= threadDecay
		}
	}
	return nil
}

// scorePulled gives the pulled-in memories that match q their text
// scores (they ranked past the text candidates) and drops those that q's
// filters exclude. A pulled-in memory matches as res's matches do: after
// a typo-tolerant search, none counts as a match, and after a search
// whose quoted phrases matched, only those that hold them.
func (n *Node) scorePulled(ctx context.Context, q search.Query, s *spread, res search.Result) error {
	if len(s.pulled) == 0 {
		return nil
	}
	nq := q
	nq.IDs, nq.Limit, nq.Feedback = s.pulled, len(s.pulled), nil
	if !res.Fuzzy {
		matched, err := n.indexSearch(ctx, nq)
		if err != nil {
			return err
		}
		if !matched.Fuzzy && matched.Loose == res.Loose {
			for _, h := range matched.Hits {
				s.fusion[h.ID].Text = h.Score
				s.explain[h.ID] = h.Explain
			}
		}
	}
	nq.Text, nq.Explain = "", false
	passed, err := n.indexSearch(ctx, nq)
	if err != nil {
		return err
	}
	ok := map[string]bool{}
	for _, h := range passed.Hits {
		ok[h.ID] = true
	}
	for _, id := range s.pulled {
		if !ok[id] {
			delete(s.fusion, id)
		}
	}
	return nil
}

// addSessions lends each session's mean best match scores to all its
// memories in the results.
func (s *spread) addSessions() {
	scores := map[string][]float64{}
	for id, f := range s.fusion {
		if sess := s.session[id]; sess != "" && f.Text > 0 {
			scores[sess] = append(scores[sess], f.Text)
		}
	}
	mean := map[string]float64{}
	for sess, sc := range scores {
		slices.SortFunc(sc, func(a, b float64) int { return cmp.Compare(b, a) })
		var sum float64
		for _, v := range sc[:min(len(sc), sessionBest)] {
			sum += v
		}
		mean[sess] = sum / sessionBest
	}
	for id, f := range s.fusion {
		f.Session = sessionShare * mean[s.session[id]]
	}
}
