package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/search"
	"github.com/memmesh/memmesh/storage"
)

func TestSearchListsMatchesBeforeRelated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	strong := remember(t, n, api.RememberRequest{Namespace: "pay", Content: "Webhooks are retried with exponential backoff"})
	// The weak match scores less than a link to the strong one lends.
	weak := remember(t, n, api.RememberRequest{Namespace: "pay", Content: "The billing queue holds invoices, refunds, payouts, disputes, ledgers, receipts, statements, " +
		"credit notes, tax forms, exports, reports, audits, chargebacks, subscriptions, coupons and, rarely, webhooks"})
	var linked []api.RememberResult
	for _, text := range []string{"Verify the signature header of every event", "Events carry an idempotency key"} {
		m := remember(t, n, api.RememberRequest{Namespace: "pay", Content: text})
		if _, err := n.Link(ctx, api.LinkRequest{From: strong.ID, Rel: "depends_on", To: m.ID}); err != nil {
			t.Fatal(err)
		}
		linked = append(linked, m)
	}

	res, err := n.Search(ctx, api.SearchRequest{Query: "webhooks retried backoff", Namespace: "pay", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	var weakScore, linkedScore float64
	for _, h := range res.Results {
		switch h.ID {
		case weak.ID:
			weakScore = h.Score
		case linked[0].ID:
			linkedScore = h.Score
		}
	}
	if linkedScore <= weakScore {
		t.Fatalf("the test needs a linked memory (%v) that outscores the weak match (%v)", linkedScore, weakScore)
	}
	got := ids(res.Results)
	if len(got) != 4 || got[0] != strong.ID || got[1] != weak.ID {
		t.Fatalf("results = %v, want the two matches (%s, %s) first, then the two linked memories", got, strong.ID, weak.ID)
	}
	if res.Total != 2 {
		t.Errorf("total = %d, want 2: only matches count", res.Total)
	}
	for _, h := range res.Results[:2] {
		if h.Related != "" {
			t.Errorf("match %s marked related: %q", h.ID, h.Related)
		}
	}
	for _, h := range res.Results[2:] {
		if want := "linked from " + strong.ShortID + " by depends_on"; h.Related != want {
			t.Errorf("linked memory %s: related = %q, want %q", h.ID, h.Related, want)
		}
	}
}

func TestSearchThreadNeighbourThatMatchesIsAMatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	// Many strong matches of another session fill the text candidates;
	// the thread neighbour matches the query too, weakly, and ranks past
	// them by text alone.
	for i := range candidates + 5 {
		remember(t, n, api.RememberRequest{Namespace: "ops", Content: strings.Repeat("deploy ", 3) + "rollout note " + string(rune('a'+i%26)) + string(rune('a'+i/26)), Session: "other"})
	}
	first := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Canary deploy on the blue pool", Session: "s-1"})
	next := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Rolled back: the blue pool ran out of memory during the long nightly batch, see the runbook about deploy", Session: "s-1"})

	res, err := n.Search(ctx, api.SearchRequest{Query: "canary deploy", Namespace: "ops", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, h := range res.Results {
		if h.ID != next.ID && h.ID != first.ID {
			continue
		}
		found++
		if h.Related != "" || h.Explain == nil {
			t.Errorf("%s matches the query but is marked related (%q) or has no text score (%v)", h.ID, h.Related, h.Explain)
		}
	}
	if found != 2 {
		t.Errorf("found %d of the session's two memories, want both", found)
	}
}

func TestSearchFindsWhatTheStoreAssociatesWithTheQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	remember(t, n, api.RememberRequest{Namespace: "db", Content: "Postgres access goes through pgx and its connection pool"})
	remember(t, n, api.RememberRequest{Namespace: "db", Content: "We run the postgres migrations with pgx before the server starts"})
	remember(t, n, api.RememberRequest{Namespace: "db", Content: "Redis caches sessions for an hour"})
	target := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Use pgx, not lib/pq"})

	res, err := n.Search(ctx, api.SearchRequest{Query: "postgres driver", Namespace: "db", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	var found *api.SearchHit
	for i, h := range res.Results {
		if h.ID == target.ID {
			found = &res.Results[i]
		}
	}
	if found == nil {
		t.Fatalf("results = %v: %q not found", ids(res.Results), "Use pgx, not lib/pq")
	}
	if found.Related != "" || found.Explain == nil || found.Explain.Match != search.MatchAssociated {
		t.Errorf("the associated memory: related %q, explain %+v", found.Related, found.Explain)
	}
	if res.Total != 3 {
		t.Errorf("total = %d, want 3: the two memories naming postgres and the one associated with it", res.Total)
	}
	for _, h := range res.Results {
		if strings.Contains(h.Content, "Redis") {
			t.Errorf("an unrelated memory was found: %q", h.Content)
		}
	}
}

func TestSearchLabelsResultsAndRanksSupersededAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	old := remember(t, n, api.RememberRequest{Namespace: "db", Content: "The postgres driver is lib/pq: every postgres driver call goes through it"})
	successor := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Switched the postgres driver to pgx"})
	small := remember(t, n, api.RememberRequest{Namespace: "db", Content: "The postgres driver pool holds 10 connections"})
	large := remember(t, n, api.RememberRequest{Namespace: "db", Content: "The postgres driver pool holds 50 connections"})
	wiki := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Postgres driver notes from the old wiki"})
	for _, l := range []api.LinkRequest{
		{From: successor.ID, Rel: "supersedes", To: old.ID},
		{From: small.ID, Rel: "contradicts", To: large.ID},
	} {
		if _, err := n.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	stale := model.StatusStale
	if _, err := n.Update(ctx, wiki.ID, api.UpdateRequest{Status: &stale}); err != nil {
		t.Fatal(err)
	}

	for _, noGraph := range []bool{false, true} {
		res, err := n.Search(ctx, api.SearchRequest{Query: "postgres driver", Namespace: "db", NoGraph: noGraph})
		if err != nil {
			t.Fatal(err)
		}
		got := ids(res.Results)
		if at := slices.Index(got, old.ID); at < slices.Index(got, successor.ID) {
			t.Errorf("no graph %v: results = %v: the superseded memory %s ranks above its successor %s", noGraph, got, old.ID, successor.ID)
		}
		want := map[string][]string{
			old.ID:       {"superseded by " + successor.ShortID},
			successor.ID: nil,
			small.ID:     {"contradicted by " + large.ShortID},
			large.ID:     {"contradicted by " + small.ShortID},
			wiki.ID:      {"stale: marked stale"},
		}
		for _, h := range res.Results {
			if !slices.Equal(h.Labels, want[h.ID]) {
				t.Errorf("no graph %v: %s %q: labels %q, want %q", noGraph, h.ID, h.Content, h.Labels, want[h.ID])
			}
		}
		if len(res.Results) != len(want) {
			t.Errorf("no graph %v: results = %v, want the %d memories", noGraph, got, len(want))
		}
	}
}

func TestSearchHoldsItsTokenBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	long := strings.Repeat("Each deploy drains the old pool first, then shifts traffic in steps of ten percent. ", 40)
	for i := range 12 { // the matches score apart: their order is not a tie
		remember(t, n, api.RememberRequest{Namespace: "ops", Content: fmt.Sprintf("Rollout %d: %s%s", i, strings.Repeat("Pool deploy. ", i+1), long)})
	}
	whole, err := n.Search(ctx, api.SearchRequest{Query: "deploy pool", Namespace: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{api.MinSearchBudget, 800, 2500} {
		res, err := n.Search(ctx, api.SearchRequest{Query: "deploy pool", Namespace: "ops", Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got := tokens.Count(string(out))
		if got > budget || res.Tokens != got {
			t.Errorf("budget %d: the result is %d tokens, says %d", budget, got, res.Tokens)
		}
		if budget >= 800 && (len(res.Results) < 2 || !res.Results[0].Truncated) {
			t.Errorf("budget %d: %d results, want several excerpts", budget, len(res.Results))
		}
		if res.Total != whole.Total {
			t.Errorf("budget %d: total %d, want %d: the budget cuts results, not matches", budget, res.Total, whole.Total)
		}
		for i, h := range res.Results {
			if h.ID != whole.Results[i].ID {
				t.Errorf("budget %d: result %d is %s, want %s: the budget keeps the order", budget, i, h.ID, whole.Results[i].ID)
			}
		}
	}
	if _, err := n.Search(ctx, api.SearchRequest{Query: "deploy", Budget: -1}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("negative budget: %v, want ErrInvalid", err)
	}
}

func TestSearchDemotesSupersededBeforeTheCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	// The superseded memory matches best by text; once it weighs as a
	// stale memory, its successor and the other match take the two slots.
	old := remember(t, n, api.RememberRequest{Namespace: "db", Content: "The postgres driver: the postgres driver is lib/pq"})
	successor := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Switched the postgres driver to pgx"})
	other := remember(t, n, api.RememberRequest{Namespace: "db", Content: "The postgres driver pool holds 10 connections"})
	if _, err := n.Link(ctx, api.LinkRequest{From: successor.ID, Rel: "supersedes", To: old.ID}); err != nil {
		t.Fatal(err)
	}
	stale := search.StatusWeight(model.StatusStale)
	for _, noGraph := range []bool{false, true} {
		all, err := n.Search(ctx, api.SearchRequest{Query: "postgres driver", Namespace: "db", NoGraph: noGraph, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range all.Results {
			if h.ID != old.ID {
				continue
			}
			if e := h.Explain; e == nil || e.Status != stale || math.Abs(e.Final-e.BM25*e.Confidence*e.Tier*e.Recency*e.Status*e.Maturity) > 1e-9 {
				t.Errorf("no graph %v: the superseded memory's explanation %+v does not weigh it as stale (%v)", noGraph, e, stale)
			}
			if f := h.Fusion; !noGraph && (f == nil || h.Explain == nil || f.Text != h.Explain.Final || f.Score != h.Score) {
				t.Errorf("no graph %v: the superseded memory's fusion %+v does not show its demoted text score", noGraph, f)
			}
		}
		res, err := n.Search(ctx, api.SearchRequest{Query: "postgres driver", Namespace: "db", NoGraph: noGraph, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(res.Results); !slices.Equal(got, []string{successor.ID, other.ID}) && !slices.Equal(got, []string{other.ID, successor.ID}) {
			t.Errorf("no graph %v: limit 2: results = %v, want the successor %s and the other match %s in place of the superseded %s", noGraph, got, successor.ID, other.ID, old.ID)
		}
	}
}

// damage closes n, damages in place the stored record of each memory
// whose content starts with one of texts, as a failing disk would (the
// change log does not see it), and opens the node again.
func damage(t *testing.T, n *Node, home string, texts ...string) *Node {
	t.Helper()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// The store's digest merger is not needed to rewrite records: one of
	// the same name that fails keeps this from merging anything wrongly.
	noMerge := &pebble.Merger{Name: "memmesh.digest.xor256", Merge: func(_, _ []byte) (pebble.ValueMerger, error) {
		return nil, errors.New("no merge while damaging records")
	}}
	db, err := pebble.Open(filepath.Join(home, "data"), &pebble.Options{Merger: noMerge, DisableAutomaticCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	// Records are keyed 'R', kind, id (storage/keys.go).
	prefix := []byte{'R', byte(storage.KindMemory)}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: []byte{'R', byte(storage.KindMemory) + 1}})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	damaged := 0
	for it.First(); it.Valid(); it.Next() {
		v := slices.Clone(it.Value())
		for _, text := range texts {
			at := bytes.Index(v, []byte(`"content":"`+text))
			if at < 0 {
				continue
			}
			v[at+len(`"content":`)] = '-' // no longer JSON, same length
			if err := b.Set(it.Key(), v, nil); err != nil {
				t.Fatal(err)
			}
			damaged++
		}
	}
	if err := errors.Join(it.Close(), b.Commit(pebble.Sync), db.Close()); err != nil {
		t.Fatal(err)
	}
	if damaged != len(texts) {
		t.Fatalf("damaged %d records, want %d", damaged, len(texts))
	}
	return testNode(t, home)
}

func TestReadErrorsAreNotTakenForNoSuccessorOrNoContradiction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	n := testNode(t, home)
	old := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Every call goes through lib/pq"})
	successor := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Switched the postgres driver to pgx"})
	small := remember(t, n, api.RememberRequest{Namespace: "db", Content: "The pool holds 10 connections"})
	large := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Raised the limit to 50"})
	for _, l := range []api.LinkRequest{
		{From: successor.ID, Rel: "supersedes", To: old.ID},
		{From: small.ID, Rel: "contradicts", To: large.ID},
	} {
		if _, err := n.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Search(ctx, api.SearchRequest{Query: "pool", Namespace: "db"}); err != nil {
		t.Fatal(err) // indexed before the damage
	}
	n = damage(t, n, home, "Switched", "Raised")

	// Each query matches one memory whose successor or contradiction
	// cannot be read: the search must fail, not drop the label.
	for _, q := range []string{"lib/pq", "pool connections"} {
		res, err := n.Search(ctx, api.SearchRequest{Query: q, Namespace: "db", NoGraph: true})
		if err == nil {
			t.Errorf("search %q = %v with labels %q, want the read error", q, ids(res.Results), labelsOf(res.Results))
		} else {
			t.Logf("search %q: %v", q, err)
		}
	}
	if got, err := n.Stale(ctx, api.StaleRequest{Namespace: "db"}); err == nil {
		t.Errorf("stale = %v, want the read error", got)
	}
	if rep, err := n.Doctor(ctx); err == nil {
		t.Errorf("doctor contradictions = %v, want the read error", rep.Contradictions)
	}
}

func labelsOf(hits []api.SearchHit) [][]string {
	out := make([][]string, len(hits))
	for i, h := range hits {
		out[i] = h.Labels
	}
	return out
}

// TestFitBudgetKeepsEveryResultThatFits: whatever the budget, the
// results fitBudget keeps are as many as fit in their shortest forms: a
// result is dropped only when the shorter forms of those before it leave
// no room, never for a longer form kept above it.
func TestFitBudgetKeepsEveryResultThatFits(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Each deploy drains the old pool first, then shifts traffic in steps of ten percent. ", 30)
	var hits []api.SearchHit
	for i := range 6 {
		m := api.Memory{Memory: model.Memory{ID: fmt.Sprintf("m%d", i), Namespace: "ops", Kind: "note", Content: fmt.Sprintf("Rollout %d: %s", i, long)}}
		hits = append(hits, api.SearchHit{Memory: m, Score: float64(10 - i)})
	}
	needles := []string{"deploy", "pool"}
	shortest := func(n int) int { // tokens of the first n hits, each in its shortest form
		res := api.SearchResult{Results: []api.SearchHit{}}
		for _, h := range hits[:n] {
			cut := h
			excerpt(&cut, needles, budgetExcerpts[0])
			res.Results = append(res.Results, cut)
		}
		res.Tokens = 99999
		return countJSON(res)
	}
	for budget := api.MinSearchBudget; budget <= 3000; budget += 7 {
		res := api.SearchResult{Results: slices.Clone(hits)}
		fitBudget(&res, budget, needles)
		if res.Tokens > budget {
			t.Fatalf("budget %d: %d tokens", budget, res.Tokens)
		}
		if k := len(res.Results); k < len(hits) && shortest(k+1) <= budget-10 {
			t.Fatalf("budget %d: %d results kept, though %d fit in their shortest forms (%d tokens)", budget, k, k+1, shortest(k+1))
		}
	}
}
