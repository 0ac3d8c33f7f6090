package node

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
)

// TestSearchQueryBounded: a query past the bounds is refused with a
// message that says which bound, before the index does any work.
func TestSearchQueryBounded(t *testing.T) {
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
