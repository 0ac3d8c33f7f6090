package node

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestSearchQueryBounded: a query past the bounds is refused with a
// message that says which bound, before the index does any work.
func TestSearchQueryBounded(t *testing.T) {
	n := testNode(t, "")
	remember(t, n, RememberRequest{Content: "postgres connection pools"})
	const want = "invalid input: query is 61440 bytes: at most 4096 are allowed; search for a few words"
	_, err := n.Search(context.Background(), SearchRequest{Query: strings.Repeat("x", 61440)})
	if !errors.Is(err, ErrInvalid) || err.Error() != want {
		t.Fatalf("Search: %v, want %q", err, want)
	}
	if err := CheckQuery(strings.Repeat("x", 61440)); !errors.Is(err, ErrInvalid) || err.Error() != want {
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
	remember(t, n, RememberRequest{Namespace: "proj", Content: "Deploy notes: checksum " + strings.Repeat("f0e1d2c3", 600) + " of the release artefact"})
	remember(t, n, RememberRequest{Namespace: "proj", Content: "The release artefact checksum is published with each deploy"})
	refl, err := n.Reflect(context.Background(), ReflectRequest{Namespace: "proj"})
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
