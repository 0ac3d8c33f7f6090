package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/gitstale"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/gittest"
)

// gitFixture starts a node whose clock stands at t0 (and moves with
// now.Store) and a repository whose commits start an hour before.
func gitFixture(t *testing.T) (n *Node, repo *gittest.Repo, t0 time.Time, now *atomic.Int64) {
	t.Helper()
	t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	now = new(atomic.Int64)
	now.Store(t0.UnixNano())
	n = startNode(t, Config{Home: t.TempDir(), Logger: testLogger(t), Clock: clock.WithNow(func() time.Time { return time.Unix(0, now.Load()) })})
	return n, gittest.NewRepo(t, t0.Add(-time.Hour)), t0, now
}

// checkGit checks the tree at dir for ns and returns the one result.
func checkGit(t *testing.T, n *Node, ns, dir string) api.GitCheck {
	t.Helper()
	res, err := n.CheckGit(context.Background(), api.GitCheckRequest{Namespace: ns, Dir: dir})
	if err != nil {
		t.Fatalf("CheckGit: %v", err)
	}
	if len(res) != 1 {
		t.Fatalf("CheckGit checked %d trees, want 1", len(res))
	}
	t.Logf("check: %+v", res[0])
	return res[0]
}

// gitReasons returns the reasons Stale gives for each memory, by id,
// keeping only the git ones (those naming a file or a symbol).
func gitReasons(t *testing.T, n *Node, ns string) map[string][]string {
	t.Helper()
	list, err := n.Stale(context.Background(), api.StaleRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, s := range list {
		for _, r := range s.Reasons {
			if strings.Contains(r, " changed in ") || strings.Contains(r, " deleted in ") ||
				strings.Contains(r, " renamed to ") || strings.Contains(r, " no longer in ") {
				out[s.Memory.ID] = append(out[s.Memory.ID], r)
			}
		}
	}
	return out
}

func TestGitStaleness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, repo, t0, now := gitFixture(t)
	repo.Write(
		"src/auth.ts", "export function validateToken(t: string) {}\n",
		"src/db.go", "package src\n\nfunc Open() {}\n",
		"docs/old.md", "# Setup\n",
		"lib/keep.py", "def keep(): pass\n",
	)
	c1 := repo.Commit("first")
	mem := func(content string) string {
		return remember(t, n, api.RememberRequest{Namespace: "shop", Content: content}).ID
	}
	auth := mem("`src/auth.ts` exports `validateToken()`, which the API calls on every request.")
	db := mem("Open the database with `Open()` from `src/db.go`.")
	docs := mem("Setup is explained in docs/old.md for new people.")
	keep := mem("The helper `lib/keep.py` is small and stable.")
	linked := mem("How tokens are checked: see the linked file.")
	if _, err := n.Link(ctx, api.LinkRequest{From: linked, Rel: "about", To: "file:src/auth.ts:1-3"}); err != nil {
		t.Fatal(err)
	}

	first := checkGit(t, n, "shop", filepath.Join(repo.Dir, "src"))
	if !first.Full || first.Commits != 1 || first.Head != c1 || first.From != "" {
		t.Fatalf("first check %+v, want a full read of 1 commit up to %s", first, c1)
	}
	if got := gitReasons(t, n, "shop"); len(got) != 0 {
		t.Fatalf("git reasons before any change: %v", got)
	}

	repo.At = t0.Add(time.Minute)
	repo.Write("src/auth.ts", "export function checkToken(t: string) {}\n")
	repo.Commit("rename validateToken")
	repo.Write("src/auth.ts", "export function checkToken(token: string) {}\n")
	c3 := repo.Commit("tidy")
	repo.Git("mv", "src/db.go", "src/store.go")
	c4 := repo.Commit("move db to store")
	repo.Git("rm", "-q", "docs/old.md")
	c5 := repo.Commit("drop old docs")

	second := checkGit(t, n, "shop", repo.Dir)
	if second.Full || second.Commits != 4 || second.From != c1 {
		t.Fatalf("second check %+v, want 4 new commits from %s", second, c1)
	}
	if second.Stale != 4 {
		t.Errorf("second check counts %d stale memories, want 4", second.Stale)
	}
	want := map[string][]string{
		auth: {
			"src/auth.ts changed in 2 commits since, last " + c3[:7] + " 'tidy'",
			"validateToken no longer in src/auth.ts",
		},
		db:     {"src/db.go renamed to src/store.go in " + c4[:7] + " 'move db to store'"},
		docs:   {"docs/old.md deleted in " + c5[:7] + " 'drop old docs'"},
		linked: {"src/auth.ts changed in 2 commits since, last " + c3[:7] + " 'tidy'"},
	}
	got := gitReasons(t, n, "shop")
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("reasons of %s:\n got %q\nwant %q", id, got[id], w)
		}
	}
	if len(got[keep]) > 0 {
		t.Errorf("an unchanged file made a memory stale: %q", got[keep])
	}

	// Nothing new: the check reads no commit.
	if again := checkGit(t, n, "shop", repo.Dir); again.Commits != 0 || again.Head != c5 {
		t.Fatalf("a check without new commits: %+v", again)
	}

	// Confirming clears it until the file changes again.
	now.Store(t0.Add(time.Hour).UnixNano())
	m, err := n.Update(ctx, auth, api.UpdateRequest{Confirm: true, ConfirmedBy: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Provenance.ConfirmedBy != "ana" || !m.Provenance.ConfirmedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("confirmed provenance %+v", m.Provenance)
	}
	if got := gitReasons(t, n, "shop"); len(got[auth]) != 0 {
		t.Fatalf("reasons after confirming: %q", got[auth])
	}
	repo.At = t0.Add(2 * time.Hour)
	repo.Write("src/auth.ts", "export function checkToken(token: string): boolean { return true }\n")
	c6 := repo.Commit("check returns a boolean")
	if res := checkGit(t, n, "shop", repo.Dir); res.Commits != 1 || res.From != c5 {
		t.Fatalf("check after one more commit: %+v", res)
	}
	got = gitReasons(t, n, "shop")
	if w := []string{"src/auth.ts changed in 1 commit since, last " + c6[:7] + " 'check returns a boolean'", "validateToken no longer in src/auth.ts"}; !slices.Equal(got[auth], w) {
		t.Fatalf("reasons after a change past the confirmation:\n got %q\nwant %q", got[auth], w)
	}
	// The lifecycle pass judges by the same rules.
	rep, err := n.RunLifecycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StaleByRule[api.StaleFileChanged] != 2 || rep.StaleByRule[api.StaleFileGone] != 2 || rep.StaleByRule[api.StaleSymbolGone] != 1 {
		t.Fatalf("lifecycle counts %v", rep.StaleByRule)
	}
}

func TestGitStalenessFollowsRenames(t *testing.T) {
	t.Parallel()
	n, repo, t0, _ := gitFixture(t)
	repo.Write("a/old.go", "package a\n\nfunc Serve() {}\n")
	repo.Commit("first")
	id := remember(t, n, api.RememberRequest{Namespace: "x", Content: "`a/old.go` holds `Serve()`."}).ID
	checkGit(t, n, "x", repo.Dir)
	repo.At = t0.Add(time.Minute)
	repo.Git("mv", "a/old.go", "a/mid.go")
	r1 := repo.Commit("to mid")
	repo.Git("mv", "a/mid.go", "a/new.go")
	r2 := repo.Commit("to new")
	repo.Write("a/new.go", "package a\n\nfunc Listen() {}\n")
	r3 := repo.Commit("serve is listen")
	checkGit(t, n, "x", repo.Dir)
	want := []string{
		"a/old.go renamed to a/mid.go in " + r1[:7] + " 'to mid'",
		"a/mid.go renamed to a/new.go in " + r2[:7] + " 'to new'",
		"a/new.go changed in 1 commit since, last " + r3[:7] + " 'serve is listen'",
		"Serve no longer in a/new.go",
	}
	if got := gitReasons(t, n, "x")[id]; !slices.Equal(got, want) {
		t.Fatalf("reasons:\n got %q\nwant %q", got, want)
	}
}

func TestGitCheckBadInput(t *testing.T) {
	ctx := context.Background()
	n, _, t0, _ := gitFixture(t)
	hasNote := func(res api.GitCheck, part string) bool {
		return slices.ContainsFunc(res.Notes, func(s string) bool { return strings.Contains(s, part) })
	}

	t.Run("no commits", func(t *testing.T) {
		repo := gittest.NewRepo(t, t0)
		if res := checkGit(t, n, "empty", repo.Dir); !hasNote(res, "no commits yet") || res.Commits != 0 {
			t.Fatalf("check of a repository without commits: %+v", res)
		}
	})

	t.Run("detached HEAD", func(t *testing.T) {
		repo := gittest.NewRepo(t, t0.Add(-time.Hour))
		repo.Write("main.go", "package main\n")
		repo.Commit("first")
		repo.Git("checkout", "-q", "--detach")
		repo.At = t0.Add(time.Minute)
		repo.Write("main.go", "package main\n\nfunc main() {}\n")
		c := repo.Commit("on a detached head")
		id := remember(t, n, api.RememberRequest{Namespace: "detached", Content: "Start in `main.go`.", At: t0}).ID
		if res := checkGit(t, n, "detached", repo.Dir); res.Head != c || len(res.Notes) != 0 {
			t.Fatalf("check on a detached HEAD: %+v", res)
		}
		if got := gitReasons(t, n, "detached")[id]; len(got) != 1 {
			t.Fatalf("reasons on a detached HEAD: %q", got)
		}
	})

	t.Run("shallow clone", func(t *testing.T) {
		origin := gittest.NewRepo(t, t0.Add(-3*time.Hour))
		for i := range 3 {
			origin.Write("f.go", strings.Repeat("x", i+1))
			origin.Commit("c")
		}
		clone := filepath.Join(t.TempDir(), "clone")
		origin.Git("clone", "-q", "--depth", "1", "file://"+origin.Dir, clone)
		res := checkGit(t, n, "shallow", clone)
		if !hasNote(res, "shallow clone: changes before "+t0.Add(-time.Hour).Format(time.DateOnly)+" unknown") || res.Commits != 1 {
			t.Fatalf("check of a shallow clone: %+v", res)
		}
		gittest.Run(t, clone, time.Time{}, "fetch", "-q", "--unshallow")
		res = checkGit(t, n, "shallow", clone)
		if !res.Full || res.Commits != 3 || !hasNote(res, "no longer shallow") || hasNote(res, "shallow clone:") {
			t.Fatalf("check after the clone was deepened: %+v", res)
		}
	})

	t.Run("history rewritten", func(t *testing.T) {
		repo := gittest.NewRepo(t, t0.Add(-time.Hour))
		repo.Write("a.go", "package a\n")
		base := repo.Commit("base")
		repo.Write("a.go", "package a // 1\n")
		repo.Commit("dropped later")
		checkGit(t, n, "rewrite", repo.Dir)
		repo.Git("reset", "-q", "--hard", base)
		repo.Write("b.go", "package a\n")
		repo.Commit("instead")
		res := checkGit(t, n, "rewrite", repo.Dir)
		if !res.Full || res.Commits != 2 || !hasNote(res, "no longer descends") {
			t.Fatalf("check after a rewrite: %+v", res)
		}
	})

	t.Run("large and binary files", func(t *testing.T) {
		repo := gittest.NewRepo(t, t0.Add(-time.Hour))
		big := strings.Repeat("filler ", gitstale.MaxSymbolFile/7+1) + "needle_fn\n"
		repo.Write("big.txt", big, "blob.png", "\x00\x01needle_fn", "latin.txt", "caf\xe9 needle_fn r\xe9sum\xe9\n")
		repo.Commit("first")
		id := remember(t, n, api.RememberRequest{Namespace: "files", Content: "`needle_fn` is in big.txt, blob.png and latin.txt."}).ID
		checkGit(t, n, "files", repo.Dir)
		repo.At = t0.Add(time.Minute)
		repo.Write("big.txt", big+"more\n", "blob.png", "\x00\x02", "latin.txt", "caf\xe9 r\xe9sum\xe9\n")
		repo.Commit("second")
		checkGit(t, n, "files", repo.Dir)
		got := gitReasons(t, n, "files")[id]
		// The large file is never read and the binary one never searched:
		// the symbol is judged by the Latin-1 file alone.
		if !slices.Contains(got, "needle_fn no longer in big.txt, blob.png, latin.txt") || len(got) != 4 {
			t.Fatalf("reasons: %q", got)
		}
	})

	// checkedTree is a tree of one commit, checked once for ns, then
	// broken; the next check of ns must say why it did not run.
	checkedTree := func(t *testing.T, ns, why string, breakIt func(dir string)) (dir string) {
		t.Helper()
		repo := gittest.NewRepo(t, t0)
		repo.Write("a.go", "package a\n")
		repo.Commit("first")
		checkGit(t, n, ns, repo.Dir)
		breakIt(repo.Dir)
		res, err := n.CheckGit(ctx, api.GitCheckRequest{Namespace: ns})
		if err != nil || len(res) != 1 || !hasNote(res[0], why) {
			t.Fatalf("check after the tree broke: %+v, %v; want a note %q", res, err, why)
		}
		return repo.Dir
	}

	t.Run("tree deleted", func(t *testing.T) {
		checkedTree(t, "gone", "is gone", func(dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := n.Stale(ctx, api.StaleRequest{Namespace: "gone"}); err != nil {
			t.Fatalf("Stale with a deleted tree: %v", err)
		}
	})

	t.Run("git not installed", func(t *testing.T) {
		dir := checkedTree(t, "nogit", "git is not installed", func(string) { t.Setenv("PATH", t.TempDir()) })
		if _, err := n.CheckGit(ctx, api.GitCheckRequest{Namespace: "nogit", Dir: dir}); err == nil || !strings.Contains(err.Error(), "git is not installed") {
			t.Fatalf("registering a tree without git: %v", err)
		}
	})
}

// gitState is what the node keeps of how far the checks of the tree at
// root read its history (gitstate/ROOT in local data; empty before the
// first).
func gitState(t *testing.T, n *Node, root string) map[string]any {
	t.Helper()
	st := map[string]any{}
	data, err := n.store.GetLocal("gitstate/" + root)
	if storageNotFound(err) {
		return st
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// eventuallyChecked waits until the node's git state of root reaches
// head, advancing clk (when not nil) a tenth of an hour at each look: the
// time for scheduled checks to come.
func eventuallyChecked(t *testing.T, n *Node, clk *clock.Fake, root, head string) {
	t.Helper()
	waitUntil(t, "the tree checked up to "+head, func() bool {
		if gitState(t, n, root)["head"] == head {
			return true
		}
		if clk != nil {
			clk.Advance(6 * time.Minute)
		}
		return false
	})
}

func TestGitChecksInTheBackground(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t, time.Now().Add(-time.Hour))
	repo.Write("a.go", "package a\n")
	first := repo.Commit("first")

	// Queued (a post-commit hook): the call returns before the check.
	n := testNode(t, "")
	res, err := n.CheckGit(ctx, api.GitCheckRequest{Namespace: "bg", Dir: repo.Dir, Source: api.TreeFromHook, Background: true})
	if err != nil || len(res) != 1 || !res[0].Pending || res[0].Commits != 0 {
		t.Fatalf("a background check: %+v, %v", res, err)
	}
	eventuallyChecked(t, n, nil, repo.Dir, first)
	if trees, err := n.git.Trees("bg"); err != nil || len(trees) != 1 || trees[0].Source != api.TreeFromHook {
		t.Fatalf("trees after a hook's check: %+v, %v", trees, err)
	}

	// Scheduled: a node checking every hour reads a new commit alone (on
	// a fake clock: the hours pass without waiting).
	clk := clock.NewFake(time.Now())
	sched := startNode(t, Config{Home: t.TempDir(), Logger: testLogger(t), Clock: clk, GitCheckInterval: time.Hour})
	if _, err := sched.git.AddTree(ctx, "bg", repo.Dir, api.TreeFromStale); err != nil {
		t.Fatal(err)
	}
	eventuallyChecked(t, sched, clk, repo.Dir, first)
	repo.Write("a.go", "package a // two\n")
	eventuallyChecked(t, sched, clk, repo.Dir, repo.Commit("second"))
}

func TestGitHistoryAcrossChecks(t *testing.T) {
	t.Parallel()
	n, repo, t0, _ := gitFixture(t)
	repo.Write("x.go", "package x\n")
	repo.Commit("first")
	id := remember(t, n, api.RememberRequest{Namespace: "x", Content: "`x.go` is the entry point."}).ID
	checkGit(t, n, "x", repo.Dir)
	repo.At = t0.Add(time.Minute)
	for i := range gitstale.MaxFileChanges + 2 {
		repo.Write("x.go", fmt.Sprintf("package x // %d\n", i))
		repo.Commit(fmt.Sprintf("edit %d", i))
		if i%5 == 0 { // the history grows over several checks
			checkGit(t, n, "x", repo.Dir)
		}
	}
	if res := checkGit(t, n, "x", repo.Dir); res.Full {
		t.Fatalf("a later check read the history anew: %+v", res)
	}
	// More changes since than are kept: the count says so.
	got := gitReasons(t, n, "x")[id]
	if len(got) != 1 || !strings.HasPrefix(got[0], fmt.Sprintf("x.go changed in %d+ commits since, last ", gitstale.MaxFileChanges)) || !strings.HasSuffix(got[0], fmt.Sprintf("'edit %d'", gitstale.MaxFileChanges+1)) {
		t.Fatalf("reasons: %q", got)
	}
}

func TestGitCheckReadAgainAfterAFailure(t *testing.T) {
	t.Parallel()
	n, repo, t0, _ := gitFixture(t)
	repo.Write("x.go", "package x\n")
	first := repo.Commit("first")
	id := remember(t, n, api.RememberRequest{Namespace: "x", Content: "`x.go` is the entry point."}).ID
	checkGit(t, n, "x", repo.Dir)
	repo.At = t0.Add(time.Minute)
	repo.Write("x.go", "package x // 1\n")
	repo.Commit("one")
	repo.Write("x.go", "package x // 2\n")
	repo.Commit("two")
	checkGit(t, n, "x", repo.Dir)
	// A check that wrote the files' histories but failed before its state:
	// the next one reads the same commits again.
	st := gitState(t, n, repo.Dir)
	st["head"] = first
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.store.PutLocal("gitstate/"+repo.Dir, data); err != nil {
		t.Fatal(err)
	}
	if res := checkGit(t, n, "x", repo.Dir); res.Commits != 2 || res.Full {
		t.Fatalf("the check read again: %+v", res)
	}
	if got := gitReasons(t, n, "x")[id]; len(got) != 1 || !strings.HasPrefix(got[0], "x.go changed in 2 commits since") {
		t.Fatalf("reasons after a history read twice: %q", got)
	}
}

func TestGitChangesCountedByTheirOwnTime(t *testing.T) {
	t.Parallel()
	n, repo, t0, _ := gitFixture(t)
	repo.Write("x.go", "package x\n")
	repo.Commit("first")
	id := remember(t, n, api.RememberRequest{Namespace: "x", Content: "`x.go` is the entry point."}).ID
	checkGit(t, n, "x", repo.Dir)
	repo.At = t0.Add(time.Minute)
	repo.Write("x.go", "package x // after\n")
	after := repo.Commit("after the memory")
	repo.At = t0.Add(-2 * time.Hour) // a committer whose clock is behind
	repo.Write("x.go", "package x // skewed\n")
	repo.Commit("skewed")
	checkGit(t, n, "x", repo.Dir)
	want := "x.go changed in 1 commit since, last " + after[:7] + " 'after the memory'"
	if got := gitReasons(t, n, "x")[id]; !slices.Equal(got, []string{want}) {
		t.Fatalf("reasons: %q, want %q", got, want)
	}
}
