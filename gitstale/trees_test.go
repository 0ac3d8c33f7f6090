package gitstale_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/gitstale"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/gittest"
	"github.com/memmesh/memmesh/internal/nodetest"
	"github.com/memmesh/memmesh/internal/projmap"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/storage"
)

// newChecker returns a checker of the trees of home, over a real store,
// with the node's namespace rule.
func newChecker(t *testing.T, home string) *gitstale.Checker {
	t.Helper()
	store, err := storage.Open(filepath.Join(t.TempDir(), "data"), storage.Options{Logger: nodetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return gitstale.New(gitstale.Config{Home: home, Store: store, Namespace: node.NormalizeNamespace, Clock: clock.System(), Logger: nodetest.Logger(t)})
}

func TestTrees(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"shop", "blog", "notes"} {
		dir := filepath.Join(parent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if name != "notes" { // notes is no working tree
			gittest.Run(t, dir, time.Now(), "init", "-q")
		}
	}
	if err := projmap.Save(home, []projmap.Mapping{
		{Glob: filepath.Join(parent, "*"), Namespace: "Web"},
		{Glob: filepath.Join(parent, "blog"), Namespace: "other"},
	}); err != nil {
		t.Fatal(err)
	}
	n := newChecker(t, home)
	hooked := gittest.NewRepo(t, time.Now())
	if err := os.MkdirAll(filepath.Join(hooked.Dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := n.AddTree(ctx, "web", filepath.Join(hooked.Dir, "src"), api.TreeFromHook)
	if err != nil || got.Root != hooked.Dir {
		t.Fatalf("AddTree from a subdirectory = %+v, %v; want root %s", got, err, hooked.Dir)
	}
	if _, err := n.AddTree(ctx, "web", parent, api.TreeFromStale); err == nil {
		t.Fatal("AddTree outside a working tree succeeded")
	}
	trees, err := n.Trees("web")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		filepath.Join(parent, "blog"): api.TreeFromMap,
		filepath.Join(parent, "shop"): api.TreeFromMap,
		hooked.Dir:                    api.TreeFromHook,
	}
	if len(trees) != len(want) {
		t.Fatalf("Trees(web) = %+v, want %v", trees, want)
	}
	for _, tr := range trees {
		if want[tr.Root] != tr.Source || tr.Missing || tr.Namespace != "web" {
			t.Errorf("tree %+v, want source %q", tr, want[tr.Root])
		}
	}
	if other, err := n.Trees("other"); err != nil || len(other) != 1 || other[0].Root != filepath.Join(parent, "blog") {
		t.Fatalf("Trees(other) = %+v, %v", other, err)
	}
	if err := os.RemoveAll(hooked.Dir); err != nil {
		t.Fatal(err)
	}
	trees, err = n.Trees("web")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trees {
		if tr.Missing != (tr.Root == hooked.Dir) {
			t.Errorf("tree %+v after the hooked tree was deleted", tr)
		}
	}
}
