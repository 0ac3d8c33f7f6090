package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("auth.ts", "export function validateToken() {}\n")
	write("b c.go", "package b\n")
	write("caf\xe9.txt", "latin-1 name\n") // a path that is not UTF-8
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "first\n\nbody")
	first := strings.TrimSpace(string(must(Run(ctx, dir, "rev-parse", "HEAD"))))
	git(t, dir, "mv", "auth.ts", "session.ts")
	write("b c.go", "package b\n\nfunc B() {}\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "rename auth")
	git(t, dir, "rm", "-q", "b c.go")
	git(t, dir, "commit", "-q", "-m", strings.Repeat("x", 300))

	var got []Commit
	if err := Log(ctx, dir, "HEAD", 0, func(c Commit) error { got = append(got, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Hash != first || got[0].Subject != "first" || got[0].At.IsZero() {
		t.Fatalf("Log = %+v", got)
	}
	want := [][]Change{
		{{Status: 'A', Path: "auth.ts"}, {Status: 'A', Path: "b c.go"}, {Status: 'A', Path: "caf\xe9.txt"}},
		{{Status: 'M', Path: "b c.go"}, {Status: 'R', Path: "session.ts", From: "auth.ts"}},
		{{Status: 'D', Path: "b c.go"}},
	}
	for i, c := range got {
		if len(c.Changes) != len(want[i]) {
			t.Fatalf("commit %d changes %+v, want %+v", i, c.Changes, want[i])
		}
		for j := range want[i] {
			if c.Changes[j] != want[i][j] {
				t.Errorf("commit %d change %d = %+v, want %+v", i, j, c.Changes[j], want[i][j])
			}
		}
	}
	if len(got[2].Subject) != MaxSubject {
		t.Errorf("a long subject kept %d bytes, want %d", len(got[2].Subject), MaxSubject)
	}

	var since []Commit
	if err := Log(ctx, dir, first+"..HEAD", 0, func(c Commit) error { since = append(since, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(since) != 2 || since[0].Subject != "rename auth" {
		t.Fatalf("Log since the first commit = %+v", since)
	}
	var newest []Commit
	if err := Log(ctx, dir, "HEAD", 1, func(c Commit) error { newest = append(newest, c); return nil }); err != nil || len(newest) != 1 || newest[0].Hash != got[2].Hash {
		t.Fatalf("Log with max 1 = %+v, %v; want the newest commit", newest, err)
	}
	stop := errors.New("stop")
	if err := Log(ctx, dir, "HEAD", 0, func(Commit) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("Log with a failing callback: %v", err)
	}

	if ok, err := IsAncestor(ctx, dir, first, "HEAD"); !ok || err != nil {
		t.Fatalf("IsAncestor(first, HEAD) = %v, %v", ok, err)
	}
	if ok, err := IsAncestor(ctx, dir, "HEAD", first); ok || err != nil {
		t.Fatalf("IsAncestor(HEAD, first) = %v, %v", ok, err)
	}
	if ok, err := IsAncestor(ctx, dir, strings.Repeat("ab", 20), "HEAD"); ok || err != nil {
		t.Fatalf("IsAncestor of an unknown commit = %v, %v", ok, err)
	}
	if shallow, err := IsShallow(ctx, dir); shallow || err != nil {
		t.Fatalf("IsShallow = %v, %v", shallow, err)
	}

	files := NewFiles(ctx, dir, "HEAD")
	defer files.Close()
	for range 2 { // the processes answer one request after another
		text, err := files.Read("session.ts", 1<<20)
		if err != nil || string(text) != "export function validateToken() {}\n" {
			t.Fatalf("Read = %q, %v", text, err)
		}
	}
	if _, err := files.Read("session.ts", 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Read over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := files.Read("b c.go", 1<<20); !errors.Is(err, ErrNoFile) {
		t.Fatalf("Read of a deleted file: %v, want ErrNoFile", err)
	}
	if text, err := files.Read("caf\xe9.txt", 1<<20); err != nil || string(text) != "latin-1 name\n" {
		t.Fatalf("Read of a path that is not UTF-8 = %q, %v", text, err)
	}
	if _, err := files.Read("a\nb", 1<<20); !errors.Is(err, ErrNoFile) {
		t.Fatalf("Read of a path with a newline: %v, want ErrNoFile", err)
	}
	if err := files.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func must(out []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return out
}

func TestLogMergesAndEmptyCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "add", name)
	}
	write("a")
	git(t, dir, "commit", "-q", "-m", "one")
	git(t, dir, "checkout", "-q", "-b", "side")
	write("b")
	git(t, dir, "commit", "-q", "-m", "side")
	git(t, dir, "checkout", "-q", "main")
	write("c")
	git(t, dir, "commit", "-q", "-m", "main")
	git(t, dir, "merge", "-q", "--no-edit", "side")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "empty")
	changed := map[string][]Change{}
	var order []string
	if err := Log(ctx, dir, "HEAD", 0, func(c Commit) error {
		order = append(order, c.Subject)
		changed[c.Subject] = c.Changes
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(order) != 5 || order[4] != "empty" {
		t.Fatalf("commits read: %q", order)
	}
	if len(changed["side"]) != 1 || changed["side"][0].Path != "b" || len(changed["Merge branch 'side'"]) != 0 || len(changed["empty"]) != 0 {
		t.Fatalf("changes: %+v", changed)
	}
}
