package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/gittest"
	"github.com/memmesh/memmesh/internal/projmap"
)

// testRepo is a real git repository in a test's temporary directory,
// committed to at times the test chooses.
type testRepo struct {
	t   testing.TB
	dir string
	at  time.Time // the time of the next commit
}

func newTestRepo(t testing.TB, at time.Time) *testRepo {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &testRepo{t: t, dir: dir, at: at}
	r.git("init", "-q", "-b", "main")
	return r
}

// git runs git in the repository, dating commits at r.at.
func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	return gittest.Run(r.t, r.dir, r.at, args...)
}

// write writes files (path, text pairs) into the working tree.
func (r *testRepo) write(pathText ...string) {
	r.t.Helper()
	for i := 0; i+1 < len(pathText); i += 2 {
		p := filepath.Join(r.dir, pathText[i])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(pathText[i+1]), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// commit commits everything at r.at, moves r.at on a minute and returns
// the commit's hash.
func (r *testRepo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	r.at = r.at.Add(time.Minute)
	return r.git("rev-parse", "HEAD")
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
			r := &testRepo{t: t, dir: dir, at: time.Now()}
			r.git("init", "-q")
		}
	}
	if err := projmap.Save(home, []projmap.Mapping{
		{Glob: filepath.Join(parent, "*"), Namespace: "Web"},
		{Glob: filepath.Join(parent, "blog"), Namespace: "other"},
	}); err != nil {
		t.Fatal(err)
	}
	n := testNode(t, home)
	hooked := newTestRepo(t, time.Now())
	if err := os.MkdirAll(filepath.Join(hooked.dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := n.AddTree(ctx, "web", filepath.Join(hooked.dir, "src"), api.TreeFromHook)
	if err != nil || got.Root != hooked.dir {
		t.Fatalf("AddTree from a subdirectory = %+v, %v; want root %s", got, err, hooked.dir)
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
		hooked.dir:                    api.TreeFromHook,
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
	if err := os.RemoveAll(hooked.dir); err != nil {
		t.Fatal(err)
	}
	trees, err = n.Trees("web")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trees {
		if tr.Missing != (tr.Root == hooked.dir) {
			t.Errorf("tree %+v after the hooked tree was deleted", tr)
		}
	}
}
