package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/gitrepo"
	"github.com/memmesh/memmesh/internal/hookconf"
	"github.com/memmesh/memmesh/web"
)

// checkGit asks the daemon to check the namespace's git trees now: the
// working tree of the current directory (registered for the namespace
// first) when there is one, else every tree the namespace has.
func (a *app) checkGit(ctx context.Context, ns string) ([]api.GitCheck, error) {
	req := api.GitCheckRequest{Namespace: ns, Source: api.TreeFromStale}
	if root, err := workingTree(ctx); err != nil {
		return nil, err
	} else if root != "" {
		req.Dir = root
	}
	return call(ctx, a, func(c *web.Client, ctx context.Context) ([]api.GitCheck, error) { return c.CheckGit(ctx, req) })
}

// queueGitCheck asks a running daemon to check the working tree of the
// current directory in the background, and never fails: a post-commit
// hook runs it, and a daemon that is not running catches up at its next
// check (checks read every commit since the last one).
func (a *app) queueGitCheck(ctx context.Context, ns string) {
	root, err := workingTree(ctx)
	if err != nil || root == "" {
		return
	}
	c, err := newClient(a.home)
	if err != nil {
		return
	}
	if _, err := c.Health(ctx); err != nil {
		return // no daemon: nothing is started for a hook
	}
	_, _ = c.CheckGit(ctx, api.GitCheckRequest{Namespace: ns, Dir: root, Source: api.TreeFromHook, Background: true})
}

// workingTree returns the top of the git working tree that holds the
// current directory, or "" outside one.
func workingTree(ctx context.Context) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := gitrepo.Root(ctx, wd)
	switch {
	case errors.Is(err, gitrepo.ErrNotRepo):
		return "", nil
	case err != nil:
		return "", err
	}
	return root, nil
}

// printGitChecks shows what each check read and found.
func printGitChecks(w io.Writer, checks []api.GitCheck) {
	if len(checks) == 0 {
		fmt.Fprintln(w, "No git working tree to check: run 'memmesh stale --git' inside one, or map one ('memmesh map GLOB NS').")
	}
	for _, c := range checks {
		switch {
		case c.Head == "":
			fmt.Fprintf(w, "%s: not checked\n", c.Root)
		case c.Commits == 0:
			fmt.Fprintf(w, "%s: up to date at %.7s; %d memories stale by it\n", c.Root, c.Head, c.Stale)
		default:
			how := "new"
			if c.Full {
				how = "in the history"
			}
			fmt.Fprintf(w, "%s: read %d commits %s, up to %.7s (%.0f ms); %d memories stale by it\n",
				c.Root, c.Commits, how, c.Head, c.TookMS, c.Stale)
		}
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}

// gitHookTarget checks that a hooks command with --git names no client,
// and returns gitHooksDir's.
func gitHookTarget(ctx context.Context, t *hookTarget) (root, hooks string, err error) {
	if t.client != "" || t.user || t.project {
		return "", "", usagef("--git is the git hook alone: leave out --client, --user and --project")
	}
	return gitHooksDir(ctx)
}

// gitHooksDir returns the working tree of the current directory and the
// directory of its git hooks (core.hooksPath, or .git/hooks; that of the
// main repository for a linked worktree).
func gitHooksDir(ctx context.Context) (root, hooks string, err error) {
	root, err = workingTree(ctx)
	if err != nil {
		return "", "", err
	}
	if root == "" {
		return "", "", usagef("--git: the current directory is not in a git working tree")
	}
	out, err := gitrepo.Run(ctx, root, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", "", err
	}
	hooks = strings.TrimSpace(string(out))
	if !filepath.IsAbs(hooks) {
		hooks = filepath.Join(root, hooks)
	}
	return root, hooks, nil
}

// installGitHook installs the post-commit hook in the current working
// tree and registers the tree for the namespace with the daemon, which
// checks it in the background.
func (a *app) installGitHook(ctx context.Context, t *hookTarget) error {
	root, hooks, err := gitHookTarget(ctx, t)
	if err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	home, err := filepath.Abs(a.home)
	if err != nil {
		return err
	}
	ns := cmp.Or(t.ns, a.cfg.Namespace)
	res, err := hookconf.InstallGitHook(hooks, bin, home, ns, time.Now())
	if err != nil {
		return err
	}
	rep := hooksReport{Client: "git", Scope: root, Files: []hookconf.Result{res}}
	_, err = call(ctx, a, func(c *web.Client, ctx context.Context) ([]api.GitCheck, error) {
		return c.CheckGit(ctx, api.GitCheckRequest{Namespace: ns, Dir: root, Source: api.TreeFromHook, Background: true})
	})
	if err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the daemon did not take the tree (%v): 'memmesh stale --git' in it registers it", err))
	}
	return a.emitHooks(rep, "installed in", "already installed in")
}

// uninstallGitHook takes the post-commit hook out of the current working
// tree, putting back the hook it chained.
func (a *app) uninstallGitHook(ctx context.Context, t *hookTarget) error {
	root, hooks, err := gitHookTarget(ctx, t)
	if err != nil {
		return err
	}
	res, err := hookconf.UninstallGitHook(hooks)
	if err != nil {
		return err
	}
	return a.emitHooks(hooksReport{Client: "git", Scope: root, Files: []hookconf.Result{res}}, "removed from", "none in")
}

// gitHookStatus is where the git hook of the current working tree stands;
// false outside a working tree.
func gitHookStatus(ctx context.Context) (hookStatus, bool) {
	_, hooks, err := gitHooksDir(ctx)
	if err != nil {
		return hookStatus{}, false
	}
	s := hookStatus{Client: "git", Scope: "project", Path: filepath.Join(hooks, hookconf.GitHook), Events: []string{}}
	ok, err := hookconf.GitHookInstalled(hooks)
	switch {
	case err != nil:
		s.Error = err.Error()
	case ok:
		s.Events = []string{hookconf.GitHook}
	default:
		s.Missing = []string{hookconf.GitHook}
	}
	return s, true
}
