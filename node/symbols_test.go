package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/gittest"
	"github.com/memmesh/memmesh/internal/projmap"
)

// symbolTree writes a small tree (no git: walked) and indexes it.
func symbolTree(t *testing.T, n *Node, ns string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"src/auth.ts":  "export function validateToken(t: string) {\n  return t !== \"\";\n}\n",
		"src/token.py": "class Token:\n    def refresh(self):\n        pass\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var seen []api.SymbolsProgress
	rep, err := n.IndexSymbols(context.Background(), api.SymbolsIndexRequest{Dir: dir, Namespace: ns}, func(p api.SymbolsProgress) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 2 || rep.Symbols != 3 || len(seen) == 0 || seen[len(seen)-1].Done != 2 {
		t.Fatalf("index: %+v, progress %v", rep, seen)
	}
	return dir
}

func TestSymbols(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	dir := symbolTree(t, n, "App")
	got, err := n.Symbols(ctx, api.SymbolsRequest{Query: "token.r"})
	if err != nil {
		t.Fatal(err)
	}
	want := api.SymbolLocation{Symbol: api.Symbol{Name: "refresh", Qual: "Token.refresh", Kind: "method", Line: 2}, File: "src/token.py", Root: dir, Namespace: "app"}
	if len(got) != 1 || got[0] != want {
		t.Errorf("Symbols(token.r) = %+v, want %+v", got, want)
	}
	if got, err := n.Symbols(ctx, api.SymbolsRequest{Query: "valid", Namespace: "other"}); err != nil || len(got) != 0 {
		t.Errorf("Symbols in another namespace = %v, %v", got, err)
	}
	for _, bad := range []api.SymbolsRequest{{Query: ""}, {Query: "a\nb"}, {Query: "a", Limit: 5000}} {
		if _, err := n.Symbols(ctx, bad); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("Symbols(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	for _, bad := range []api.SymbolsIndexRequest{{Dir: "relative"}, {Dir: filepath.Join(dir, "missing")}, {Dir: filepath.Join(dir, "src/auth.ts")}} {
		if _, err := n.IndexSymbols(ctx, bad, nil); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("IndexSymbols(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	trees, err := n.SymbolTrees(ctx)
	if err != nil || len(trees) != 1 || trees[0].Root != dir {
		t.Errorf("SymbolTrees = %+v, %v", trees, err)
	}
}

// TestImpactOfSymbol: a symbol's memories are those that mention it,
// those linked to it, and those of the file that defines it.
func TestImpactOfSymbol(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	symbolTree(t, n, "app")
	mentions := remember(t, n, api.RememberRequest{Content: "Call `validateToken()` before every write"})
	ofFile := remember(t, n, api.RememberRequest{Content: "src/auth.ts is owned by the platform team"})
	linked := remember(t, n, api.RememberRequest{Content: "Tokens expire after an hour"})
	linkedByPath := remember(t, n, api.RememberRequest{Content: "Empty tokens are refused"})
	builds := remember(t, n, api.RememberRequest{Content: "The API gateway relies on the token rules"})
	other := remember(t, n, api.RememberRequest{Content: "Call `refresh()` on a timer; see src/token.py"})
	for _, l := range []api.LinkRequest{
		{From: linked.ID, Rel: "touches", To: "code:validateToken"},
		{From: linkedByPath.ID, Rel: "touches", To: "code:src/auth.ts::validateToken"},
		{From: builds.ID, Rel: "depends_on", To: mentions.ID},
	} {
		if _, err := n.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{
		mentions.ID:     "mentions code:validateToken",
		linked.ID:       "edge touches code:validateToken",
		linkedByPath.ID: "edge touches code:src/auth.ts::validateToken",
		ofFile.ID:       "mentions file:src/auth.ts, which defines validateToken",
		builds.ID:       "depends_on " + n.shortID(strings.TrimPrefix(mentions.ID, IDPrefix)),
	}
	for _, start := range []string{"validateToken", "code:validateToken"} {
		res, err := n.Impact(ctx, api.ImpactRequest{Path: start})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, im := range res {
			got[im.Memory.ID] = im.Via
		}
		if len(got) != len(want) {
			t.Errorf("impact of %s: %v, want %v (and not %s)", start, got, want, other.ID)
		}
		for id, via := range want {
			if got[id] != via {
				t.Errorf("impact of %s: %s via %q, want %q", start, id, got[id], via)
			}
		}
	}
	// A method by its qualified name.
	res, err := n.Impact(ctx, api.ImpactRequest{Path: "Token.refresh", Depth: 1})
	if err != nil || len(res) != 1 || res[0].Memory.ID != other.ID {
		t.Errorf("impact of Token.refresh = %+v, %v; want %s", res, err, other.ID)
	}
	// A name the index does not know is a file path, as before.
	if res, err := n.Impact(ctx, api.ImpactRequest{Path: "nothing"}); err != nil || len(res) != 0 {
		t.Errorf("impact of an unknown name = %v, %v", res, err)
	}
}

// TestGraphOfSymbol: code:NAME is a node linked to the file that defines
// it and to the memories that mention it.
func TestGraphOfSymbol(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	symbolTree(t, n, "app")
	mentions := remember(t, n, api.RememberRequest{Content: "Call `validateToken()` before every write"})
	ofFile := remember(t, n, api.RememberRequest{Content: "src/auth.ts is owned by the platform team"})
	res, err := n.Traverse(ctx, api.TraverseRequest{Start: "code:validateToken", Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, gn := range res.Nodes {
		nodes = append(nodes, gn.ID)
	}
	slices.Sort(nodes)
	wantNodes := []string{"code:validateToken", "file:src/auth.ts", mentions.ID, ofFile.ID}
	slices.Sort(wantNodes)
	if !slices.Equal(nodes, wantNodes) {
		t.Errorf("nodes %v, want %v", nodes, wantNodes)
	}
	var defined []string
	for _, e := range res.Edges {
		if e.Rel == "defined_in" {
			defined = append(defined, e.From+" -> "+e.To+" ("+e.Origin+")")
		}
	}
	if want := []string{"code:validateToken -> file:src/auth.ts (symbol-index)"}; !slices.Equal(defined, want) {
		t.Errorf("defined_in edges %v, want %v", defined, want)
	}
	// code:PATH::NAME leads to PATH when the index has NAME there.
	for start, want := range map[string]int{"code:src/auth.ts::validateToken": 1, "code:src/other.ts::validateToken": 0} {
		res, err := n.Traverse(ctx, api.TraverseRequest{Start: start})
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, e := range res.Edges {
			if e.Rel == "defined_in" && e.To == "file:src/auth.ts" {
				got++
			}
		}
		if got != want {
			t.Errorf("%s: %d defined_in edges to src/auth.ts, want %d", start, got, want)
		}
	}
}

// TestSymbolsSchedule: the node indexes its trees again on its schedule
// (hourly, on a fake clock), and drops a tree whose directory is gone.
func TestSymbolsSchedule(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	n, err := New(Config{Home: t.TempDir(), Logger: testLogger(t), Clock: clk, Symbols: &SymbolsConfig{Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	dir := symbolTree(t, n, "app")
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src/late.py"), []byte("def late():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitSymbols(t, n, clk, "late", 1)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	waitSymbols(t, n, clk, "late", 0)
	if trees, err := n.SymbolTrees(context.Background()); err != nil || len(trees) != 0 {
		t.Errorf("trees after the tree went: %+v, %v", trees, err)
	}
}

// waitSymbols waits until a name has want definitions, advancing clk a
// tenth of an hour at each look: the time for the schedule to come.
func waitSymbols(t *testing.T, n *Node, clk *clock.Fake, name string, want int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d definitions of %s", want, name), func() bool {
		if got, err := n.Where(name, ""); err == nil && len(got) == want {
			return true
		}
		clk.Advance(6 * time.Minute)
		return false
	})
}

// TestSymbolsOfMappedTrees: the schedule indexes the git working trees a
// project mapping names, in the mapping's namespace, never indexed by hand.
func TestSymbolsOfMappedTrees(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, time.Now())
	repo.Write("root.go", "package r\n\nfunc FromRoot() {}\n")
	repo.Commit("first")
	home := t.TempDir()
	if err := projmap.Save(home, []projmap.Mapping{{Glob: repo.Dir, Namespace: "mapped"}}); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now())
	n, err := New(Config{Home: home, Logger: testLogger(t), Clock: clk, Symbols: &SymbolsConfig{Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitSymbols(t, n, clk, "FromRoot", 1)
	got, err := n.Where("FromRoot", "mapped")
	if err != nil || len(got) != 1 || got[0].Root != repo.Dir {
		t.Errorf("Where(FromRoot) in mapped = %+v, %v", got, err)
	}
}

// TestGitStalenessSaysWhereASymbolWent: a symbol gone from the file a
// memory names is looked up in the symbol index; the reason says where it
// is now, once the file there names it at the checked commit.
func TestGitStalenessSaysWhereASymbolWent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, repo, t0, _ := gitFixture(t)
	repo.Write("src/auth.ts", "export function validateToken(t: string) {}\n", "src/token.ts", "export const ttl = 60;\n")
	repo.Commit("first")
	id := remember(t, n, api.RememberRequest{Namespace: "shop", Content: "`src/auth.ts` exports `validateToken()`."}).ID
	checkGit(t, n, "shop", repo.Dir)

	repo.At = t0.Add(time.Minute)
	repo.Write("src/auth.ts", "export const unused = 1;\n",
		"src/token.ts", "export const ttl = 60;\n\nexport function validateToken(t: string) {}\n")
	repo.Commit("move validateToken")
	checkGit(t, n, "shop", repo.Dir)
	// Without an index the reason says only that it left.
	if got := gitReasons(t, n, "shop")[id]; !slices.Contains(got, "validateToken no longer in src/auth.ts") {
		t.Fatalf("reasons without the index: %q", got)
	}
	if _, err := n.IndexSymbols(ctx, api.SymbolsIndexRequest{Dir: repo.Dir, Namespace: "shop"}, nil); err != nil {
		t.Fatal(err)
	}
	got := gitReasons(t, n, "shop")[id]
	if !slices.Contains(got, "validateToken no longer in src/auth.ts; now in src/token.ts") {
		t.Errorf("reasons with the index: %q", got)
	}
}
