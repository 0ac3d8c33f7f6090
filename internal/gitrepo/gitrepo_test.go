package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/gittest"
)

func TestNormalizeRemote(t *testing.T) {
	for raw, want := range map[string]string{
		"https://github.com/Acme/App.git":          "github.com/Acme/App",
		"https://user:secret@GitHub.com/Acme/App/": "github.com/Acme/App",
		"git@github.com:Acme/App.git":              "github.com/Acme/App",
		"github.com:Acme/App":                      "github.com/Acme/App",
		"ssh://git@github.com:22/Acme/App":         "github.com/Acme/App",
		"/srv/git/app.git":                         "srv/git/app",
	} {
		if got := NormalizeRemote(raw); got != want {
			t.Errorf("NormalizeRemote(%q) = %q, want %q", raw, got, want)
		}
	}
}

// git runs git in dir for a test.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	gittest.Run(t, dir, time.Time{}, args...)
}

func TestRepository(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Root(ctx, dir); !errors.Is(err, ErrNotRepo) {
		t.Fatalf("Root outside a tree: %v, want ErrNotRepo", err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	sub := filepath.Join(dir, "src")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := Root(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(dir); root != want {
		t.Fatalf("Root = %q, want %q", root, want)
	}
	if head, err := Head(ctx, root); err != nil || head != "" {
		t.Fatalf("Head without commits = %q, %v; want empty", head, err)
	}
	if remote, err := Remote(ctx, root); err != nil || remote != "" {
		t.Fatalf("Remote without remotes = %q, %v", remote, err)
	}
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "first")
	head, err := Head(ctx, root)
	if err != nil || len(head) != 40 {
		t.Fatalf("Head = %q, %v", head, err)
	}
	git(t, dir, "remote", "add", "upstream", "https://example.com/other/app.git")
	git(t, dir, "remote", "add", "origin", "git@GitHub.com:acme/app.git")
	if remote, err := Remote(ctx, root); err != nil || remote != "github.com/acme/app" {
		t.Fatalf("Remote = %q, %v; want origin's", remote, err)
	}
	git(t, dir, "checkout", "-q", "--detach")
	if got, err := Head(ctx, root); err != nil || got != head {
		t.Fatalf("detached Head = %q, %v; want %s", got, err, head)
	}
}

func TestOutputLimit(t *testing.T) {
	b := limitedBuffer{max: 4}
	b.Write([]byte("abc"))
	b.Write([]byte("def"))
	if b.buf.String() != "abcd" || !b.over {
		t.Fatalf("kept %q, over %v", b.buf.String(), b.over)
	}
}
