package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/internal/hookconf"
)

func (a *app) hooksCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Install memmesh's hooks in Claude Code, Codex and Gemini CLI",
		Long: `Write memmesh's hooks into a coding agent's configuration, take them out
again, or see where they are.

The hooks give every session the brief and every prompt the memories it
touches ('memmesh context --hook'), and hand the session's transcript to
memmesh before the client compacts it and when the session ends
('memmesh sessions ingest --hook'):

  claude-code  .claude/settings.json   SessionStart, UserPromptSubmit: context
                                       PreCompact, SessionEnd: ingest
  codex        .codex/hooks.json       SessionStart, UserPromptSubmit: context
                                       PreCompact, Stop: ingest
               and codex_hooks = true under [features] in ~/.codex/config.toml
  gemini       .gemini/settings.json   SessionStart, BeforeAgent: context
                                       PreCompress, SessionEnd: ingest

--project (the default) edits the files of the working directory's project
(its git root, or the directory itself); --user edits those of your home.
A file is backed up beside itself (NAME.memmesh-backup-TIME) before it
changes, keeps everything else it holds, and is left alone if it is not
valid JSON (or TOML). Installing twice is installing once; uninstall takes
out memmesh's hooks only.

--git installs a git post-commit hook in the working tree of the current
directory instead: after each commit it asks the memmesh daemon, in the
background, to check the namespace's memories against the new commit (see
'memmesh stale'). A post-commit hook already there is backed up, kept and
run first; uninstall --git puts it back byte for byte.`,
		Example: `  memmesh hooks install --client claude-code
  memmesh hooks install --git
  memmesh hooks install --client codex --user
  memmesh hooks status
  memmesh hooks uninstall --client gemini --project`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(a.hooksInstallCommand(), a.hooksUninstallCommand(), a.hooksStatusCommand())
	return cmd
}

// hookTarget is the client and the scope a hooks command edits, or the
// git working tree of the current directory.
type hookTarget struct {
	client        string
	user, project bool
	git           bool
	ns            string
}

func (t *hookTarget) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&t.git, "git", false, "the git post-commit hook of the current directory's working tree")
	cmd.Flags().StringVar(&t.ns, "ns", "", "with --git: the namespace the tree's commits are checked for (default: the working directory's)")
	cmd.Flags().StringVar(&t.client, "client", "", "the coding agent: claude-code, codex or gemini")
	cmd.Flags().BoolVar(&t.user, "user", false, "edit the client's config in your home (~/.claude, ~/.codex, ~/.gemini)")
	cmd.Flags().BoolVar(&t.project, "project", false, "edit the config of the working directory's project (the default)")
}

// resolve returns the client, the scope's name and its root directory.
func (t *hookTarget) resolve() (hookconf.Client, string, string, error) {
	if t.client == "" {
		return hookconf.Client{}, "", "", usagef("--client is required: claude-code, codex or gemini")
	}
	c, err := hookconf.Lookup(t.client)
	if err != nil {
		return c, "", "", usageError{fmt.Errorf("--client: %w", err)}
	}
	if t.user && t.project {
		return c, "", "", usagef("--user and --project do not go together")
	}
	if t.user {
		home, err := os.UserHomeDir()
		return c, "user", home, err
	}
	root, err := projectRoot()
	return c, "project", root, err
}

// projectRoot is the working directory's project: the nearest directory
// up holding .git, else the working directory.
func projectRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return wd, nil
		}
	}
}

// hooksReport is what hooks install and uninstall did.
type hooksReport struct {
	Client string            `json:"client"`
	Scope  string            `json:"scope"`
	Files  []hookconf.Result `json:"files"`
	Notes  []string          `json:"notes,omitempty"`
}

func (a *app) hooksInstallCommand() *cobra.Command {
	var t hookTarget
	cmd := &cobra.Command{
		Use:   "install --client claude-code|codex|gemini [--project|--user] | --git [--ns NS]",
		Short: "Write memmesh's hooks into a client's configuration",
		Long: `Write memmesh's hooks into a client's configuration (see 'memmesh hooks'):
the project's by default, your home's with --user. For Codex, hooks are also
turned on in ~/.codex/config.toml (codex_hooks = true under [features]), one
line added with your comments and settings kept.`,
		Example: `  memmesh hooks install --client claude-code           # .claude/settings.json of this project
  memmesh hooks install --client codex --user          # ~/.codex/hooks.json and ~/.codex/config.toml
  memmesh hooks install --client gemini --format json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if t.git {
				return a.installGitHook(cmd.Context(), &t)
			}
			c, scope, root, err := t.resolve()
			if err != nil {
				return err
			}
			rep := hooksReport{Client: c.Name, Scope: scope}
			now := time.Now()
			if c.Feature != "" {
				home, err := os.UserHomeDir()
				if err != nil {
					return err
				}
				res, err := hookconf.EnableCodexHooks(filepath.Join(home, c.Dir, c.Feature), now)
				if err != nil {
					return err
				}
				rep.Files = append(rep.Files, res)
			}
			res, err := hookconf.Install(c.Path(root), c.Hooks, now)
			if err != nil {
				return err
			}
			rep.Files = append(rep.Files, res)
			if _, err := exec.LookPath("memmesh"); err != nil {
				rep.Notes = append(rep.Notes, "memmesh is not on your PATH: the client runs 'memmesh ...' and will not find it until it is")
			}
			if c.Name == "codex" && scope == "project" {
				rep.Notes = append(rep.Notes, "Codex reads a project's .codex/ only once the project is trusted")
			}
			return a.emitHooks(rep, "installed in", "already installed in")
		},
	}
	t.register(cmd)
	return cmd
}

func (a *app) hooksUninstallCommand() *cobra.Command {
	var t hookTarget
	cmd := &cobra.Command{
		Use:   "uninstall --client claude-code|codex|gemini [--project|--user] | --git",
		Short: "Take memmesh's hooks out of a client's configuration",
		Long: `Take memmesh's hooks out of a client's configuration (the project's by
default, your home's with --user): every hook entry that runs 'memmesh
context --hook' or 'memmesh sessions ingest --hook', and the groups,
events and "hooks" member that held only them. A file left empty is
removed (its backup stays). Codex's codex_hooks feature is left on: other
hooks may need it.`,
		Example: `  memmesh hooks uninstall --client claude-code
  memmesh hooks uninstall --client codex --user`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if t.git {
				return a.uninstallGitHook(cmd.Context(), &t)
			}
			c, scope, root, err := t.resolve()
			if err != nil {
				return err
			}
			res, err := hookconf.Uninstall(c.Path(root), time.Now())
			if err != nil {
				return err
			}
			rep := hooksReport{Client: c.Name, Scope: scope, Files: []hookconf.Result{res}}
			return a.emitHooks(rep, "removed from", "none in")
		},
	}
	t.register(cmd)
	return cmd
}

// emitHooks reports an install or an uninstall: per file, what changed
// (done) or that nothing had to (none), its backup, then the notes.
func (a *app) emitHooks(rep hooksReport, done, none string) error {
	for _, n := range rep.Notes {
		fmt.Fprintf(a.stderr, "memmesh: %s\n", n)
	}
	return a.emit(rep, func(w io.Writer) {
		for _, f := range rep.Files {
			switch {
			case !f.Changed:
				fmt.Fprintf(w, "%s hooks: %s %s\n", rep.Client, none, f.Path)
			case f.Removed:
				fmt.Fprintf(w, "%s hooks: %s %s (%s), which held nothing else and is removed\n", rep.Client, done, f.Path, strings.Join(f.Events, ", "))
			default:
				fmt.Fprintf(w, "%s hooks: %s %s (%s)\n", rep.Client, done, f.Path, strings.Join(f.Events, ", "))
			}
			if f.Backup != "" {
				fmt.Fprintf(w, "  backup: %s\n", f.Backup)
			}
		}
	}, func(w io.Writer) {
		for _, f := range rep.Files {
			if f.Changed {
				fmt.Fprintln(w, f.Path)
			}
		}
	})
}

// hookStatus is where one client's hooks stand in one scope.
type hookStatus struct {
	Client  string   `json:"client"`
	Scope   string   `json:"scope"`
	Path    string   `json:"path"`
	Events  []string `json:"events"`            // events running memmesh's hooks
	Missing []string `json:"missing,omitempty"` // memmesh's events without them
	Feature string   `json:"feature,omitempty"` // Codex: the state of codex_hooks
	Error   string   `json:"error,omitempty"`
}

func (a *app) hooksStatusCommand() *cobra.Command {
	var client string
	cmd := &cobra.Command{
		Use:   "status [--client claude-code|codex|gemini]",
		Short: "Show which clients have memmesh's hooks, in your home and in this project",
		Example: `  memmesh hooks status
  memmesh hooks status --client codex --format json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			clients := hookconf.Clients
			if client != "" {
				c, err := hookconf.Lookup(client)
				if err != nil {
					return usageError{fmt.Errorf("--client: %w", err)}
				}
				clients = []hookconf.Client{c}
			}
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			project, err := projectRoot()
			if err != nil {
				return err
			}
			var list []hookStatus
			for _, c := range clients {
				for _, scope := range []struct{ name, root string }{{"user", home}, {"project", project}} {
					list = append(list, statusOf(c, scope.name, scope.root, home))
				}
			}
			if s, ok := gitHookStatus(cmd.Context()); ok && client == "" {
				list = append(list, s)
			}
			return emitList(a, "hooks", list, func(w io.Writer) { printHookStatus(w, list) }, func(s hookStatus) string {
				return fmt.Sprintf("%s\t%s\t%s", s.Client, s.Scope, strings.Join(s.Events, ","))
			})
		},
	}
	cmd.Flags().StringVar(&client, "client", "", "only this client: claude-code, codex or gemini")
	return cmd
}

// statusOf reads where the client's hooks stand under root.
func statusOf(c hookconf.Client, scope, root, home string) hookStatus {
	s := hookStatus{Client: c.Name, Scope: scope, Path: c.Path(root), Events: []string{}}
	events, err := hookconf.Installed(s.Path)
	if err != nil {
		s.Error = err.Error()
	}
	s.Events = append(s.Events, events...)
	for _, h := range c.Hooks {
		if !slices.Contains(events, h.Event) {
			s.Missing = append(s.Missing, h.Event)
		}
	}
	if c.Feature != "" {
		state, err := hookconf.CodexFeature(filepath.Join(home, c.Dir, c.Feature))
		s.Feature = string(state)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && s.Error == "" {
			s.Error = err.Error()
		}
	}
	return s
}

func printHookStatus(w io.Writer, list []hookStatus) {
	for _, s := range list {
		state := "installed"
		switch {
		case s.Error != "":
			state = "unreadable: " + s.Error
		case len(s.Events) == 0:
			state = "not installed"
		case len(s.Missing) > 0:
			state = "partly installed (missing " + strings.Join(s.Missing, ", ") + ")"
		}
		fmt.Fprintf(w, "%-12s %-8s %s: %s\n", s.Client, s.Scope, s.Path, state)
		switch {
		case s.Feature == "" || len(s.Events) == 0 || s.Feature == string(hookconf.FeatureOn):
		case s.Feature == string(hookconf.FeatureOff):
			fmt.Fprintf(w, "%-21s but ~/.codex/config.toml turns Codex's hooks off\n", "")
		default:
			fmt.Fprintf(w, "%-21s but codex_hooks is not on in ~/.codex/config.toml (%s), which older Codex releases need: run 'memmesh hooks install --client codex'\n", "", s.Feature)
		}
	}
}
