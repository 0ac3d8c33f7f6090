package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
)

// TestSearchQueryBounded: a query past the bounds is refused with a
// message that says which bound, before the index does any work.
func TestSearchQueryBounded(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	remember(t, n, api.RememberRequest{Content: "postgres connection pools"})
	const want = "invalid input: query is 61440 bytes: at most 4096 are allowed; search for a few words"
	_, err := n.Search(context.Background(), api.SearchRequest{Query: strings.Repeat("x", 61440)})
	if !errors.Is(err, api.ErrInvalid) || err.Error() != want {
		t.Fatalf("Search: %v, want %q", err, want)
	}
	if err := CheckQuery(strings.Repeat("x", 61440)); !errors.Is(err, api.ErrInvalid) || err.Error() != want {
		t.Fatalf("CheckQuery: %v, want %q", err, want)
	}
	if err := CheckQuery("postgres pools"); err != nil {
		t.Fatalf("CheckQuery: %v", err)
	}
}

// TestReflectSkipsLongWords: reflect searches with a memory's words; a
// word too long to search for is left out instead of failing the pass.
func TestReflectSkipsLongWords(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	remember(t, n, api.RememberRequest{Namespace: "proj", Content: "Deploy notes: checksum " + strings.Repeat("f0e1d2c3", 600) + " of the release artefact"})
	remember(t, n, api.RememberRequest{Namespace: "proj", Content: "The release artefact checksum is published with each deploy"})
	refl, err := n.Reflect(context.Background(), api.ReflectRequest{Namespace: "proj"})
	if err != nil {
		t.Fatalf("Reflect: %v", err)
	}
	if len(refl) != 2 {
		t.Fatalf("reflections: %+v", refl)
	}
	for _, r := range refl {
		if len(r.Candidates) == 0 {
			t.Errorf("%s has no candidates", r.Memory.ID)
		}
	}
}

// TestSearchHitsAreExcerpts: a hit on a large memory carries an excerpt
// around the matched words, flagged, and no revisions; Get and List still
// return the whole memory.
func TestSearchHitsAreExcerpts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	filler := strings.Repeat("the quick brown fox jumps over the lazy dog ", 10000) // 440 KB
	big := remember(t, n, api.RememberRequest{Namespace: "proj", Content: filler + "the zanzibar driver is pgx " + filler})
	if _, err := n.Update(ctx, big.ID, api.UpdateRequest{Content: new(filler + "the zanzibar driver is pgx v5 " + filler)}); err != nil {
		t.Fatal(err)
	}
	small := remember(t, n, api.RememberRequest{Namespace: "proj", Content: "zanzibar is also a small note"})
	res, err := n.Search(ctx, api.SearchRequest{Query: "zanzibar", Namespace: "proj"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 {
		t.Fatalf("hits: %d", len(res.Results))
	}
	for _, h := range res.Results {
		m, err := n.Get(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if h.ContentBytes != len(m.Content) || h.Revisions != nil {
			t.Errorf("%s: content_bytes %d of %d, %d revisions", h.ShortID, h.ContentBytes, len(m.Content), len(h.Revisions))
		}
		switch h.ID {
		case small.ID:
			if h.Truncated || h.Content != m.Content {
				t.Errorf("small memory cut: %.200q", h.Content)
			}
		case big.ID:
			if !h.Truncated || len(h.Content) > 1600 || !strings.Contains(h.Content, "the zanzibar driver is pgx v5") {
				t.Errorf("large memory: truncated %v, %d bytes: %.200q", h.Truncated, len(h.Content), h.Content)
			}
			if len(m.Content) < 800_000 || len(m.Revisions) != 2 {
				t.Errorf("Get returns %d bytes and %d revisions, want the whole memory", len(m.Content), len(m.Revisions))
			}
		}
	}
	list, err := n.List(ctx, api.ListRequest{Namespace: "proj"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		if m.ID == big.ID && len(m.Content) < 800_000 {
			t.Errorf("List cut the memory to %d bytes", len(m.Content))
		}
	}
}

// TestSearchLooseQuote: a quoted phrase that no memory holds is searched
// as loose words, and the result says so; one that a memory holds is not.
func TestSearchLooseQuote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	book := remember(t, n, api.RememberRequest{Namespace: "proj", Content: "Tim loved reading Harry Potter and the Sorcerer's Stone as a kid"})
	remember(t, n, api.RememberRequest{Namespace: "proj", Content: "The build cache lives in the home directory"})
	for _, tc := range []struct {
		query string
		loose bool
	}{
		{`"Harry Potter and the Philosopher's Stone"`, true},
		{`"Harry Potter"`, false},
	} {
		for _, noGraph := range []bool{false, true} {
			res, err := n.Search(ctx, api.SearchRequest{Query: tc.query, Namespace: "proj", NoGraph: noGraph})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) == 0 || res.Results[0].ID != book.ID || res.Loose != tc.loose {
				t.Errorf("%s (no graph %v): %d results, loose %v; want the book first, loose %v", tc.query, noGraph, len(res.Results), res.Loose, tc.loose)
			}
		}
	}
}

// TestSearchQuotePulledIn: after a search whose quoted phrase matched, a
// memory pulled in by a link that holds the phrase's words but not the
// phrase is related, not a match.
func TestSearchQuotePulledIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	match := remember(t, n, api.RememberRequest{Namespace: "proj", Content: "Retry webhooks with exponential backoff"})
	linked := remember(t, n, api.RememberRequest{Namespace: "proj", Content: "Backoff grows; exponential growth is capped at a minute"})
	if _, err := n.Link(ctx, api.LinkRequest{From: match.ID, Rel: "depends_on", To: linked.ID}); err != nil {
		t.Fatal(err)
	}
	res, err := n.Search(ctx, api.SearchRequest{Query: `"exponential backoff"`, Namespace: "proj"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Total != 1 || res.Loose {
		t.Fatalf("%d results, total %d, loose %v; want the match and the linked memory", len(res.Results), res.Total, res.Loose)
	}
	if r := res.Results[1]; r.ID != linked.ID || r.Related == "" {
		t.Errorf("second result %s, related %q: want the linked memory, related", r.ShortID, r.Related)
	}
}

// TestSearchLooseQuoteWithFeedback: when the loose words of a quote find
// few memories, the feedback pass adds what the store associates with
// them, and the result still says that the quote was loosened.
func TestSearchLooseQuoteWithFeedback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	remember(t, n, api.RememberRequest{Namespace: "db", Content: "Postgres access goes through pgx and its connection pool"})
	remember(t, n, api.RememberRequest{Namespace: "db", Content: "We run the postgres migrations with pgx before the server starts"})
	target := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Use pgx, not lib/pq"})
	res, err := n.Search(ctx, api.SearchRequest{Query: `"postgres driver"`, Namespace: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids(res.Results), target.ID) || !res.Loose {
		t.Errorf("results %v, loose %v: want the associated memory, loose", ids(res.Results), res.Loose)
	}
}
