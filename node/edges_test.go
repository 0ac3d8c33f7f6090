package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/model"
)

func TestLinkTraverseUnlink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	a := remember(t, n, api.RememberRequest{Content: "Adopt sqlc for queries"})
	b := remember(t, n, api.RememberRequest{Content: "Hand-written SQL helpers"})
	c := remember(t, n, api.RememberRequest{Content: "Query layer lives in internal/db"})

	e, err := n.Link(ctx, api.LinkRequest{From: a.ShortID, Rel: "supersedes", To: b.ID, Notes: "decided in review"})
	if err != nil {
		t.Fatal(err)
	}
	if e.From != a.ID || e.To != b.ID || e.ID != crdt.EdgeID(a.ID, "supersedes", b.ID) || e.Origin != "manual" || e.Strength != 1 {
		t.Fatalf("edge: %+v", e.Edge)
	}
	// Linking again is the same edge, updated.
	again, err := n.Link(ctx, api.LinkRequest{From: a.ID, Rel: "supersedes", To: b.ID, Notes: "confirmed"})
	if err != nil || again.ID != e.ID || again.Notes != "confirmed" {
		t.Fatalf("relink: %+v %v", again.Edge, err)
	}
	if _, err := n.Link(ctx, api.LinkRequest{From: c.ID, Rel: "part_of", To: a.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Link(ctx, api.LinkRequest{From: a.ID, Rel: "touches", To: "file:internal/db/queries.sql"}); err != nil {
		t.Fatal(err)
	}

	res, err := n.Traverse(ctx, api.TraverseRequest{Start: b.ID, Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	depth := map[string]int{}
	for _, gn := range res.Nodes {
		depth[gn.ID] = gn.Depth
		if strings.HasPrefix(gn.ID, IDPrefix) && gn.Memory == nil {
			t.Errorf("memory node %s without its memory", gn.ID)
		}
	}
	want := map[string]int{b.ID: 0, a.ID: 1, c.ID: 2, "file:internal/db/queries.sql": 2}
	if len(depth) != len(want) {
		t.Fatalf("reached %v, want %v", depth, want)
	}
	for id, d := range want {
		if depth[id] != d {
			t.Errorf("depth of %s = %d, want %d", id, depth[id], d)
		}
	}
	out, err := n.Traverse(ctx, api.TraverseRequest{Start: a.ID, Direction: api.Out, Rels: []string{"supersedes"}})
	if err != nil || len(out.Nodes) != 2 || out.Nodes[1].ID != b.ID {
		t.Fatalf("out/supersedes from a: %+v %v", out.Nodes, err)
	}
	// Artefacts are endpoints too: what touches the file?
	in, err := n.Traverse(ctx, api.TraverseRequest{Start: "file:internal/db/queries.sql", Direction: api.In})
	if err != nil || len(in.Nodes) != 2 || in.Nodes[1].ID != a.ID {
		t.Fatalf("in from file: %+v %v", in.Nodes, err)
	}

	if _, err := n.Unlink(ctx, a.ID, "supersedes", b.ID); err != nil {
		t.Fatal(err)
	}
	res, _ = n.Traverse(ctx, api.TraverseRequest{Start: b.ID, Depth: 2})
	if len(res.Nodes) != 1 {
		t.Fatalf("after unlink b still reaches %+v", res.Nodes)
	}
	if _, err := n.Unlink(ctx, a.ID, "depends_on", b.ID); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("unlinking a missing edge: %v", err)
	}
}

func TestInvalidatedEdgesStayAsHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	n, err := New(Config{Home: t.TempDir(), Clock: clock.WithNow(func() time.Time { return now })})
	if err != nil {
		t.Fatal(err)
	}
	n.Start(ctx)
	defer n.Close()
	a, _ := n.Remember(ctx, api.RememberRequest{Content: "Deploy from the release branch"})
	b, _ := n.Remember(ctx, api.RememberRequest{Content: "Release branch is cut on Mondays"})
	if _, err := n.Link(ctx, api.LinkRequest{From: a.ID, Rel: "depends_on", To: b.ID}); err != nil {
		t.Fatal(err)
	}
	before := now
	now = now.Add(24 * time.Hour)
	if _, err := n.Invalidate(ctx, a.ID, "depends_on", b.ID); err != nil {
		t.Fatal(err)
	}
	if res, _ := n.Traverse(ctx, api.TraverseRequest{Start: a.ID}); len(res.Nodes) != 1 {
		t.Fatalf("an invalidated edge is still followed today: %+v", res.Nodes)
	}
	if res, _ := n.Traverse(ctx, api.TraverseRequest{Start: a.ID, AsOf: before}); len(res.Nodes) != 2 {
		t.Fatalf("as of before the invalidation the edge is not followed: %+v", res.Nodes)
	}
}

func TestLinkRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	a := remember(t, n, api.RememberRequest{Content: "one"})
	b := remember(t, n, api.RememberRequest{Content: "two"})
	bad := 2.0
	cases := []struct {
		name string
		req  api.LinkRequest
		want error
	}{
		{"relation with spaces", api.LinkRequest{From: a.ID, Rel: "works at", To: b.ID}, api.ErrInvalid},
		{"relation upper case", api.LinkRequest{From: a.ID, Rel: "DependsOn", To: b.ID}, api.ErrInvalid},
		{"unknown memory", api.LinkRequest{From: a.ID, Rel: "related_to", To: "m-zzzzzzzz"}, api.ErrNotFound},
		{"path without file:", api.LinkRequest{From: a.ID, Rel: "related_to", To: "docs/readme.md"}, api.ErrInvalid},
		{"empty artefact", api.LinkRequest{From: a.ID, Rel: "touches", To: "file:"}, api.ErrInvalid},
		{"self loop", api.LinkRequest{From: a.ID, Rel: "related_to", To: a.ShortID}, api.ErrInvalid},
		{"strength", api.LinkRequest{From: a.ID, Rel: "related_to", To: b.ID, Strength: &bad}, api.ErrInvalid},
		{"validity", api.LinkRequest{From: a.ID, Rel: "related_to", To: b.ID, ValidFrom: time.Now(), ValidTo: time.Now().Add(-time.Hour)}, api.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := n.Link(ctx, tc.req); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	for _, req := range []api.TraverseRequest{{Start: a.ID, Depth: 9}, {Start: a.ID, Direction: "up"}, {Start: a.ID, Rels: []string{"Bad Rel"}}} {
		if _, err := n.Traverse(ctx, req); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("traverse %+v: %v, want ErrInvalid", req, err)
		}
	}
	if res, _ := n.Traverse(ctx, api.TraverseRequest{Start: a.ID}); len(res.Edges) != 0 {
		t.Fatalf("bad links created edges: %+v", res.Edges)
	}
}

func TestContextBrief(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	human := remember(t, n, api.RememberRequest{Namespace: "app", Content: "Never log request bodies: they hold tokens", Tier: model.TierHuman})
	remember(t, n, api.RememberRequest{Namespace: "app", Content: "The cache warms in about a minute", Tier: model.TierAuto})
	stale := remember(t, n, api.RememberRequest{Namespace: "app", Content: "Builds use Go 1.21"})
	status := model.StatusStale
	if _, err := n.Update(ctx, stale.ID, api.UpdateRequest{Status: &status}); err != nil {
		t.Fatal(err)
	}
	remember(t, n, api.RememberRequest{Namespace: "other", Content: "Not part of this brief"})

	b, err := n.Context(ctx, api.ContextRequest{Namespace: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Namespace != "app" || len(b.Active) != 2 || b.Active[0].ID != human.ID || len(b.StaleAlerts) != 1 || b.StaleAlerts[0].ID != stale.ID {
		t.Fatalf("brief: %+v", b)
	}
	if b.Tokens <= 0 || b.Tokens > b.Budget {
		t.Fatalf("tokens %d of budget %d", b.Tokens, b.Budget)
	}
	for range 40 {
		remember(t, n, api.RememberRequest{Namespace: "app", Content: strings.Repeat("A long convention about error handling. ", 20) + crdt.NewID()})
	}
	small, err := n.Context(ctx, api.ContextRequest{Namespace: "app", Budget: 500})
	if err != nil {
		t.Fatal(err)
	}
	if small.Tokens > 500 || len(small.Active) == 0 || len(small.Active) >= 42 {
		t.Fatalf("budget 500: %d tokens, %d items", small.Tokens, len(small.Active))
	}
	if _, err := n.Context(ctx, api.ContextRequest{Budget: 5}); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("tiny budget: %v", err)
	}
}

func TestEdgesAtManyEndpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	a := remember(t, n, api.RememberRequest{Content: "alpha"})
	b := remember(t, n, api.RememberRequest{Content: "beta"})
	c := remember(t, n, api.RememberRequest{Content: "gamma"})
	for _, l := range []api.LinkRequest{{From: a.ID, Rel: "related_to", To: b.ID}, {From: b.ID, Rel: "depends_on", To: c.ID}, {From: c.ID, Rel: "touches", To: "file:go.mod"}} {
		if _, err := n.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Unlink(ctx, c.ID, "touches", "file:go.mod"); err != nil {
		t.Fatal(err)
	}
	all, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{a.ID, b.ID, c.ID}})
	if err != nil || len(all) != 2 {
		t.Fatalf("edges at a, b, c: %d %v (want the two live edges, each once)", len(all), err)
	}
	out, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{b.ID}, Direction: api.Out})
	if err != nil || len(out) != 1 || out[0].To != c.ID {
		t.Fatalf("out of b: %+v %v", out, err)
	}
	if _, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{"m-zzzzzzzz"}}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("unknown endpoint: %v", err)
	}
	if _, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{a.ID}, Direction: "sideways"}); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("bad direction: %v", err)
	}
}

// TestLinkRefusesCycles: an acyclic relation may not close a cycle, and
// the refusal changes nothing; a cycle of other relations is fine, and an
// edge that no longer holds (unlinked or invalidated) does not count.
func TestLinkRefusesCycles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	a := remember(t, n, api.RememberRequest{Content: "Use pgx v5"})
	b := remember(t, n, api.RememberRequest{Content: "Use pgx v4"})
	c := remember(t, n, api.RememberRequest{Content: "Use lib/pq"})
	link := func(from, rel, to string) error {
		_, err := n.Link(ctx, api.LinkRequest{From: from, Rel: rel, To: to})
		return err
	}
	for _, e := range [][3]string{{a.ID, "supersedes", b.ID}, {b.ID, "supersedes", c.ID}} {
		if err := link(e[0], e[1], e[2]); err != nil {
			t.Fatal(err)
		}
	}
	err := link(c.ID, "supersedes", a.ID)
	if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("closing a supersedes cycle: %v, want ErrInvalid naming the cycle", err)
	}
	if edges, _ := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{c.ID}, Direction: api.Out}); len(edges) != 0 {
		t.Fatalf("the refused edge was stored: %+v", edges)
	}
	if err := link(c.ID, "related_to", a.ID); err != nil {
		t.Fatalf("a cycle of related_to: %v", err)
	}
	if err := link(c.ID, "part_of", a.ID); err != nil {
		t.Fatalf("part_of is its own order, independent of supersedes: %v", err)
	}
	// Once b no longer supersedes c, c may supersede a.
	if _, err := n.Invalidate(ctx, b.ID, "supersedes", c.ID); err != nil {
		t.Fatal(err)
	}
	if err := link(c.ID, "supersedes", a.ID); err != nil {
		t.Fatalf("after the chain was invalidated: %v", err)
	}
}

// TestRestore: an archived memory comes back to active and is found
// again; a deleted one stays deleted.
func TestRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	m := remember(t, n, api.RememberRequest{Content: "Pin the Node version in .nvmrc"})
	if _, err := n.Forget(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if res, _ := n.Search(ctx, api.SearchRequest{Query: "nvmrc"}); len(res.Results) != 0 {
		t.Fatal("an archived memory was found")
	}
	got, err := n.Restore(ctx, m.ShortID)
	if err != nil || got.Status != model.StatusActive {
		t.Fatalf("restore: %+v %v", got.Status, err)
	}
	if res, _ := n.Search(ctx, api.SearchRequest{Query: "nvmrc"}); len(res.Results) != 1 {
		t.Fatal("a restored memory is not found")
	}
	if _, err := n.Delete(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := n.Restore(ctx, m.ID); err != nil || got.Status != model.StatusActive {
		t.Fatalf("restoring a deleted memory: %v %v, want it active", got.Status, err)
	}
}

// TestAutoLink: a near duplicate (word similarity at least 0.8) is linked
// to the memory it repeats with a related_to edge of origin auto-link,
// made in the same commit; a looser match is only reported as similar.
func TestAutoLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	first := remember(t, n, api.RememberRequest{Namespace: "api", Content: "Run database migrations with goose before starting the API server in development mode"})
	near := remember(t, n, api.RememberRequest{Namespace: "api", Content: "Run database migrations with goose before starting the API server in development mode always"})
	if len(near.Similar) != 1 || near.Similar[0].Similarity < autoLinkThreshold {
		t.Fatalf("near duplicate: %+v", near.Similar)
	}
	edges, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{near.ID}, Direction: api.Out})
	if err != nil {
		t.Fatal(err)
	}
	if len(edges) != 1 || edges[0].To != first.ID || edges[0].Rel != "related_to" || edges[0].Origin != "auto-link" {
		t.Fatalf("edges of the near duplicate = %+v, want one auto-link related_to %s", edges, first.ID)
	}
	loose := remember(t, n, api.RememberRequest{Namespace: "api", Content: "Run database migrations with goose before starting the worker in staging"})
	edges, _ = n.Edges(ctx, api.EdgesRequest{Endpoints: []string{loose.ID}, Direction: api.Out})
	for _, s := range loose.Similar {
		if s.Similarity >= autoLinkThreshold {
			t.Fatalf("test text too close: %+v", loose.Similar)
		}
	}
	if len(edges) != 0 {
		t.Fatalf("a loose match was linked: %+v", edges)
	}
}

// TestTraverseDerivedTouches: the files a memory's text mentions are
// artefact nodes of the graph, both ways, without any stored edge.
func TestTraverseDerivedTouches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	m := remember(t, n, api.RememberRequest{Content: "The retry budget lives in internal/client/retry.go and is read by `NewClient`"})
	res, err := n.Traverse(ctx, api.TraverseRequest{Start: m.ID, Direction: api.Out})
	if err != nil {
		t.Fatal(err)
	}
	var reached []string
	for _, gn := range res.Nodes[1:] {
		reached = append(reached, gn.ID)
	}
	if !slices.Contains(reached, "file:internal/client/retry.go") || len(res.Edges) != len(reached) || res.Edges[0].Origin != OriginExtracted {
		t.Fatalf("out of the memory: nodes %v, edges %+v", reached, res.Edges)
	}
	back, err := n.Traverse(ctx, api.TraverseRequest{Start: "file:internal/client/retry.go", Direction: api.In})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Nodes) != 2 || back.Nodes[1].ID != m.ID {
		t.Fatalf("into the file: %+v", back.Nodes)
	}
	// Derived edges are not stored: the edge list of the memory is empty.
	if stored, _ := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{m.ID}}); len(stored) != 0 {
		t.Fatalf("stored edges: %+v", stored)
	}
}

// TestSupersededIsStale: a memory that a live memory supersedes is listed
// as stale with the reason, and moves from the brief's active memories to
// its stale alerts; invalidating the edge brings it back. Nothing is
// written into the superseded memory.
func TestSupersededIsStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	old := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Use lib/pq as the Postgres driver"})
	newer := remember(t, n, api.RememberRequest{Namespace: "db", Content: "Use pgx v5 as the Postgres driver"})
	before, _ := n.Get(ctx, old.ID)
	if _, err := n.Link(ctx, api.LinkRequest{From: newer.ID, Rel: "supersedes", To: old.ID}); err != nil {
		t.Fatal(err)
	}
	stale, err := n.Stale(ctx, api.StaleRequest{Namespace: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 1 || stale[0].Memory.ID != old.ID || !strings.Contains(stale[0].Reasons[0], "superseded by "+newer.ShortID) {
		t.Fatalf("stale = %+v", stale)
	}
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Active) != 1 || b.Active[0].ID != newer.ID || len(b.StaleAlerts) != 1 || b.StaleAlerts[0].ID != old.ID || b.StaleAlerts[0].Reason == "" {
		t.Fatalf("brief active %+v, stale alerts %+v", b.Active, b.StaleAlerts)
	}
	if after, _ := n.Get(ctx, old.ID); after.Status != model.StatusActive || !slices.Equal(after.Heads, before.Heads) {
		t.Fatalf("the superseded memory was changed: %s %v", after.Status, after.Heads)
	}
	if _, err := n.Invalidate(ctx, newer.ID, "supersedes", old.ID); err != nil {
		t.Fatal(err)
	}
	if stale, _ := n.Stale(ctx, api.StaleRequest{Namespace: "db"}); len(stale) != 0 {
		t.Fatalf("after invalidating: %+v", stale)
	}
}

// TestContradictsIsConflict: two memories linked by contradicts are listed
// as conflicts in the brief and by Doctor, not as active, until the edge
// is invalidated.
func TestContradictsIsConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	a := remember(t, n, api.RememberRequest{Namespace: "ci", Content: "CI runs on two cores"})
	b := remember(t, n, api.RememberRequest{Namespace: "ci", Content: "CI runs on eight cores"})
	c := remember(t, n, api.RememberRequest{Namespace: "ci", Content: "CI caches the Go build cache"})
	if _, err := n.Link(ctx, api.LinkRequest{From: a.ID, Rel: "contradicts", To: b.ID}); err != nil {
		t.Fatal(err)
	}
	brief, err := n.Context(ctx, api.ContextRequest{Namespace: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	var conflicts, active []string
	for _, it := range brief.Conflicts {
		conflicts = append(conflicts, it.ID)
		if !strings.HasPrefix(it.Reason, "contradicts ") {
			t.Errorf("conflict %s has reason %q", it.ID, it.Reason)
		}
	}
	for _, it := range brief.Active {
		active = append(active, it.ID)
	}
	slices.Sort(conflicts)
	if want := slices.Sorted(slices.Values([]string{a.ID, b.ID})); !slices.Equal(conflicts, want) || !slices.Equal(active, []string{c.ID}) {
		t.Fatalf("conflicts %v, active %v", conflicts, active)
	}
	rep, err := n.Doctor(ctx)
	if err != nil || len(rep.Contradictions) != 1 {
		t.Fatalf("doctor = %+v, %v", rep, err)
	}
	if _, err := n.Invalidate(ctx, a.ID, "contradicts", b.ID); err != nil {
		t.Fatal(err)
	}
	if brief, _ := n.Context(ctx, api.ContextRequest{Namespace: "ci"}); len(brief.Conflicts) != 0 || len(brief.Active) != 3 {
		t.Fatalf("after resolving: conflicts %+v, active %d", brief.Conflicts, len(brief.Active))
	}
}

// TestBriefSections: decisions and tasks have their own sections, and a
// small budget keeps the most urgent: the open task.
func TestBriefSections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	dec := remember(t, n, api.RememberRequest{Namespace: "p", Kind: "decision", Content: "We deploy on Tuesdays"})
	task := remember(t, n, api.RememberRequest{Namespace: "p", Kind: "task", Content: "Migrate the cron jobs to the scheduler"})
	note := remember(t, n, api.RememberRequest{Namespace: "p", Content: "The staging database is reset every Sunday"})
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Decisions) != 1 || b.Decisions[0].ID != dec.ID || len(b.Tasks) != 1 || b.Tasks[0].ID != task.ID ||
		len(b.Active) != 1 || b.Active[0].ID != note.ID {
		t.Fatalf("decisions %+v, tasks %+v, active %+v", b.Decisions, b.Tasks, b.Active)
	}
	small, err := n.Context(ctx, api.ContextRequest{Namespace: "p", Budget: 100})
	if err != nil {
		t.Fatal(err)
	}
	if small.Tokens > 100 || len(small.Tasks) != 1 || len(small.Active) != 0 {
		t.Fatalf("budget 100: %d tokens, tasks %+v, active %+v", small.Tokens, small.Tasks, small.Active)
	}
}

// TestStaleByAge: a memory not updated for longer than its namespace's
// stale-after age (default 60 days) is stale, and so is one linked to
// nothing after 30 days; evergreen ones are not; the namespace setting and
// a link change the verdict; nothing is written into the memories.
func TestStaleByAge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	old := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "The VPN concentrator is in rack 4", Tier: model.TierHuman, At: time.Now().AddDate(0, 0, -90)})
	remember(t, n, api.RememberRequest{Namespace: "ops", Content: "On-call rotates weekly", Tier: model.TierHuman, At: time.Now().AddDate(0, 0, -90), Evergreen: true})
	fresh := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "The new VPN is WireGuard"})
	reasons := func() map[string][]string {
		t.Helper()
		list, err := n.Stale(ctx, api.StaleRequest{Namespace: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, s := range list {
			out[s.Memory.ID] = s.Reasons
		}
		return out
	}
	got := reasons()
	if len(got) != 1 || len(got[old.ID]) != 2 {
		t.Fatalf("stale = %v, want only the 90-day-old memory, by age and as an orphan", got)
	}
	month := "120d"
	if _, err := n.SetNamespace(ctx, "ops", api.NamespaceChange{StaleAfter: &month}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Link(ctx, api.LinkRequest{From: fresh.ID, Rel: "related_to", To: old.ID}); err != nil {
		t.Fatal(err)
	}
	if got := reasons(); len(got) != 0 {
		t.Fatalf("after stale-after 120d and a link: %v", got)
	}
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "ops"})
	if err != nil || len(b.StaleAlerts) != 0 || len(b.Active) != 3 {
		t.Fatalf("brief: stale %+v, %d active, %v", b.StaleAlerts, len(b.Active), err)
	}
	for _, bad := range []string{"36h", "0d", "99999d", "soon"} {
		if _, err := n.SetNamespace(ctx, "ops", api.NamespaceChange{StaleAfter: &bad}); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("stale after %q: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestBriefRanksCentralMemoriesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	at := time.Now().Add(-time.Hour)
	lone := remember(t, n, api.RememberRequest{Namespace: "web", Content: "Templates render on the server", At: at})
	// Older, so that only its links can put it first.
	hub := remember(t, n, api.RememberRequest{Namespace: "web", Content: "Routing lives in one table", At: at.Add(-time.Hour)})
	for _, file := range []string{"file:web/routes.go", "file:web/api.go", "file:web/client.go"} {
		if _, err := n.Link(ctx, api.LinkRequest{From: hub.ID, Rel: "touches", To: file}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Active) != 2 || b.Active[0].ID != hub.ID || b.Active[1].ID != lone.ID {
		t.Fatalf("active = %+v, want the linked memory first", b.Active)
	}
}
