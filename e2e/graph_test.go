package e2e

import (
	"strings"
	"testing"
)

// TestLinkAndGraph: link memories and an artefact on the CLI, walk the
// graph, refuse a cycle of supersedes (exit 1, nothing changed) and a bad
// date (exit 2), then invalidate an edge so that the walk no longer
// follows it.
func TestLinkAndGraph(t *testing.T) {
	home := newHome(t)
	var a, b captureOut
	okJSON(t, home, &a, "capture", "Use pgx v5 for Postgres access")
	okJSON(t, home, &b, "capture", "Use lib/pq for Postgres access")
	ok(t, home, "link", a.ID, "supersedes", b.ID, "--note", "pgx is maintained")
	ok(t, home, "link", a.ID, "touches", "file:internal/db/pool.go:10-40")

	type graphOut struct {
		Nodes []struct {
			ID    string `json:"id"`
			Depth int    `json:"depth"`
		} `json:"nodes"`
		Edges []struct {
			Rel   string `json:"rel"`
			Notes string `json:"notes"`
		} `json:"edges"`
	}
	var g graphOut
	okJSON(t, home, &g, "graph", a.ID)
	if len(g.Nodes) != 3 || len(g.Edges) != 2 {
		t.Fatalf("graph of a = %+v, want a, b and the file with 2 edges", g)
	}

	r := mm(t, home, "", "link", b.ID, "supersedes", a.ID)
	if r.code != 1 || !strings.Contains(r.stderr, "cycle") {
		t.Fatalf("closing a cycle: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := mm(t, home, "", "link", a.ID, "related_to", b.ID, "--valid-to", "2026-02-30"); r.code != 2 {
		t.Fatalf("an impossible date: exit %d, stderr %q", r.code, r.stderr)
	}
	okJSON(t, home, &g, "graph", b.ID)
	if len(g.Nodes) != 2 {
		t.Fatalf("graph of b = %+v, want b and a (no cycle edge stored)", g)
	}

	var rep struct {
		Cycles    []any `json:"cycles"`
		Conflicts []any `json:"conflicts"`
	}
	okJSON(t, home, &rep, "doctor")
	if len(rep.Cycles) != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("doctor on a consistent home = %+v", rep)
	}

	ok(t, home, "invalidate", a.ID, "supersedes", b.ID)
	okJSON(t, home, &g, "graph", b.ID)
	if len(g.Nodes) != 1 {
		t.Fatalf("graph of b after invalidating = %+v, want b alone", g)
	}
}
