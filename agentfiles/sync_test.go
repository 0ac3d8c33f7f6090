package agentfiles

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/node"
)

// testNode starts a real node on a temporary home.
func testNode(t testing.TB) *node.Node {
	t.Helper()
	n, err := node.New(node.Config{Home: t.TempDir(), IndexFlushDelay: -1, Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

var claudeSource = Source{Key: "CLAUDE.md", Real: "/repo/CLAUDE.md", Path: "/repo/CLAUDE.md", Root: "/repo"}

// importText parses data and imports it as CLAUDE.md into namespace acme.
func importText(t *testing.T, n *node.Node, data string, opt ImportOptions) ImportResult {
	t.Helper()
	items, err := Parse([]byte(data), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	opt.Namespace, opt.Format = "acme", ClaudeMD
	res, err := Import(context.Background(), n, claudeSource, items, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// fileMemories lists the live and archived memories imported from CLAUDE.md.
func fileMemories(t *testing.T, n *node.Node) []api.Memory {
	t.Helper()
	ms, err := n.List(context.Background(), api.ListRequest{Namespace: "acme", Session: claudeSource.Session(), Limit: 1000,
		Statuses: []model.Status{model.StatusActive, model.StatusArchived}})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func counts(r ImportResult) [6]int {
	return [6]int{r.Created, r.Updated, r.Unchanged, r.Removed, r.Archived, r.Duplicates}
}

// TestImportFixture: every item of a CLAUDE.md becomes a memory of tier
// human, with its section as title, its headings and format as tags, the
// file as provenance and an edge to its lines.
func TestImportFixture(t *testing.T) {
	ctx := context.Background()
	n := testNode(t)
	res := importText(t, n, string(readFixture(t, "CLAUDE.md")), ImportOptions{})
	if counts(res) != [6]int{16, 0, 0, 0, 0, 0} || res.Items != 16 {
		t.Fatalf("result %+v: want 16 created", res)
	}
	ms := fileMemories(t, n)
	if len(ms) != 16 {
		t.Fatalf("%d memories, want 16", len(ms))
	}
	i := slices.IndexFunc(ms, func(m api.Memory) bool { return strings.HasPrefix(m.Content, "Run the integration tests") })
	if i < 0 {
		t.Fatal("the integration tests' item is missing")
	}
	m := ms[i]
	if m.Tier != model.TierHuman || m.Kind != "convention" || m.Title != "Commands" || !slices.Equal(m.Tags, []string{"claude-md", "commands"}) ||
		m.Provenance.Agent != "claude-md" || m.Provenance.Session != "file:CLAUDE.md" || !strings.Contains(m.Content, "docker compose up -d postgres") {
		t.Fatalf("memory %+v", m.Memory)
	}
	edges, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{m.ID}, Direction: api.Out})
	if err != nil || len(edges) != 1 || edges[0].Rel != "defined_in" || edges[0].To != "file:CLAUDE.md:12-17" || edges[0].Origin != "import" {
		t.Fatalf("edges %+v, %v: want defined_in file:CLAUDE.md:12-17", edges, err)
	}
	// memmesh impact CLAUDE.md finds what came from it.
	impacted, err := n.Impact(ctx, api.ImpactRequest{Path: "CLAUDE.md"})
	if err != nil || len(impacted) < 16 {
		t.Fatalf("impact of CLAUDE.md: %d memories, %v", len(impacted), err)
	}
	if got := slices.IndexFunc(ms, func(m api.Memory) bool { return m.Kind == "decision" }); got < 0 {
		t.Fatal("no decision among the memories")
	}
}

// TestReimport: importing the same file again changes nothing; editing
// one line updates exactly one memory (same id, a new revision), and
// lines moving by an insertion move their edges without an update.
func TestReimport(t *testing.T) {
	ctx := context.Background()
	n := testNode(t)
	orig := string(readFixture(t, "CLAUDE.md"))
	importText(t, n, orig, ImportOptions{})
	before := fileMemories(t, n)

	if res := importText(t, n, orig, ImportOptions{}); counts(res) != [6]int{0, 0, 16, 0, 0, 0} || res.Moved != 0 {
		t.Fatalf("second import %+v: want 16 unchanged", res)
	}

	edited := strings.Replace(orig, "- Lint with `golangci-lint run` before pushing.", "- Lint with `golangci-lint run --fix` before pushing.", 1)
	edited = strings.Replace(edited, "## Commands\n", "## Commands\n\n- Generate mocks with `go generate ./...` first.\n", 1)
	res := importText(t, n, edited, ImportOptions{})
	if counts(res) != [6]int{1, 1, 15, 0, 0, 0} {
		t.Fatalf("after one edit and one insertion: %+v", res)
	}
	if res.Moved == 0 {
		t.Fatalf("the lines below the insertion moved, and no edge followed: %+v", res)
	}
	after := fileMemories(t, n)
	if len(after) != 17 {
		t.Fatalf("%d memories, want 17", len(after))
	}
	lint := slices.IndexFunc(before, func(m api.Memory) bool { return strings.HasPrefix(m.Content, "Lint with") })
	got, err := n.Get(ctx, before[lint].ID)
	if err != nil || got.Content != "Lint with `golangci-lint run --fix` before pushing." || len(got.Revisions) != 2 {
		t.Fatalf("the edited memory: %q with %d revisions, %v", got.Content, len(got.Revisions), err)
	}
	// Every other memory is as it was.
	for _, m := range before {
		if m.ID == before[lint].ID {
			continue
		}
		now, err := n.Get(ctx, m.ID)
		if err != nil || len(now.Revisions) != 1 || now.Content != m.Content {
			t.Fatalf("memory %s changed: %q, %v", m.ShortID, now.Content, err)
		}
	}
	// The edge of a moved item names its new line.
	style := slices.IndexFunc(before, func(m api.Memory) bool { return strings.HasPrefix(m.Content, "Wrap errors") })
	edges, _ := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{before[style].ID}, Direction: api.Out})
	if len(edges) != 1 || edges[0].To != "file:CLAUDE.md:23" {
		t.Fatalf("edges of the moved item: %+v, want one to file:CLAUDE.md:23", edges)
	}
	// And again: nothing left to do.
	if res := importText(t, n, edited, ImportOptions{}); counts(res) != [6]int{0, 0, 17, 0, 0, 0} || res.Moved != 0 {
		t.Fatalf("import of the edited file again: %+v", res)
	}
}

// TestReimportMatches: a bullet rewritten in other words is the one
// changed item of its section; one moved to another section and edited is
// found by its words; one removed is reported, and archived when asked.
func TestReimportMatches(t *testing.T) {
	n := testNode(t)
	orig := "## Style\n\n- Use tabs for indentation\n\n## Testing\n\n- Run the whole suite with make test before pushing to main\n- Keep fixtures small\n- Snapshot files live under testdata\n"
	importText(t, n, orig, ImportOptions{})
	ids := map[string]string{}
	for _, m := range fileMemories(t, n) {
		ids[m.Content] = m.ID
	}

	rewritten := strings.Replace(orig, "Use tabs for indentation", "Indent with four spaces", 1)
	res := importText(t, n, rewritten, ImportOptions{})
	if counts(res) != [6]int{0, 1, 3, 0, 0, 0} || res.Changes[0].ID == "" {
		t.Fatalf("a sole bullet rewritten: %+v", res)
	}

	moved := "## Style\n\n- Indent with four spaces\n- Run the whole suite with make test -race before pushing to main\n\n## Testing\n\n- Keep fixtures small\n"
	res = importText(t, n, moved, ImportOptions{DryRun: true})
	if counts(res) != [6]int{0, 1, 2, 1, 0, 0} {
		t.Fatalf("dry run of a moved, edited bullet and a removed one: %+v", res)
	}
	if got := fileMemories(t, n); len(got) != 4 || slices.IndexFunc(got, func(m api.Memory) bool { return strings.Contains(m.Content, "-race") }) >= 0 {
		t.Fatal("a dry run changed memories")
	}
	res = importText(t, n, moved, ImportOptions{})
	if counts(res) != [6]int{0, 1, 2, 1, 0, 0} {
		t.Fatalf("a moved, edited bullet and a removed one: %+v", res)
	}
	suite, err := n.Get(context.Background(), ids["Run the whole suite with make test before pushing to main"])
	if err != nil || suite.Title != "Style" || !slices.Contains(suite.Tags, "style") || slices.Contains(suite.Tags, "testing") || !strings.Contains(suite.Content, "-race") {
		t.Fatalf("the moved memory: %+v, %v", suite.Memory, err)
	}
	res = importText(t, n, moved, ImportOptions{ArchiveRemoved: true})
	if counts(res) != [6]int{0, 0, 3, 1, 1, 0} {
		t.Fatalf("archiving the removed one: %+v", res)
	}
	gone, _ := n.Get(context.Background(), ids["Snapshot files live under testdata"])
	if gone.Status != model.StatusArchived {
		t.Fatalf("the removed memory is %s", gone.Status)
	}
	// Archived, it is reported no more; back in the file, it is restored.
	if res := importText(t, n, moved, ImportOptions{}); counts(res) != [6]int{0, 0, 3, 0, 0, 0} {
		t.Fatalf("after archiving: %+v", res)
	}
	back := moved + "- Snapshot files live under testdata\n"
	if res := importText(t, n, back, ImportOptions{}); counts(res) != [6]int{0, 1, 3, 0, 0, 0} {
		t.Fatalf("back in the file: %+v", res)
	}
	if m, _ := n.Get(context.Background(), ids["Snapshot files live under testdata"]); m.Status != model.StatusActive {
		t.Fatalf("the memory back in the file is %s", m.Status)
	}
}

// TestImportScrubsAndDefers: a secret in the file is stored redacted, and
// the file imported again finds its item unchanged; an item a memory of
// the namespace already says (from AGENTS.md) is left to it.
func TestImportScrubsAndDefers(t *testing.T) {
	ctx := context.Background()
	n := testNode(t)
	if _, err := n.Remember(ctx, api.RememberRequest{Namespace: "acme", Content: "Use pnpm, never npm", Session: "file:AGENTS.md"}); err != nil {
		t.Fatal(err)
	}
	data := "- Deploy with DEPLOY_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB in the environment\n- Use pnpm, never npm\n"
	res := importText(t, n, data, ImportOptions{})
	if counts(res) != [6]int{1, 0, 0, 0, 0, 1} || len(res.Redacted) == 0 {
		t.Fatalf("result %+v: want one created, one duplicate, a secret redacted", res)
	}
	ms := fileMemories(t, n)
	if len(ms) != 1 || strings.Contains(ms[0].Content, "ghp_") || !strings.Contains(ms[0].Content, "[REDACTED") {
		t.Fatalf("memories %+v", ms)
	}
	if res := importText(t, n, data, ImportOptions{}); counts(res) != [6]int{0, 0, 1, 0, 0, 1} {
		t.Fatalf("again: %+v", res)
	}
}
