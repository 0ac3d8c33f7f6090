package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/bridge"
	"github.com/memmesh/memmesh/internal/projmap"
	"github.com/memmesh/memmesh/node"
)

func (a *app) bridgeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Mirror another tool's memory with memmesh",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.bridgeClaudeCodeCommand())
	return cmd
}

func (a *app) bridgeClaudeCodeCommand() *cobra.Command {
	var (
		list, dry bool
		project   string
	)
	cmd := &cobra.Command{
		Use:   "claude-code",
		Short: "Mirror Claude Code's auto memory with each project's namespace, both ways",
		Long: `Mirror each Claude Code project's auto memory (~/.claude/projects/<project>/memory:
MEMORY.md and its topic files) with the project's namespace, in both
directions, once: entries written or edited here become memories (or their
new revisions), and the namespace's memories from the project's other
machines are written into a managed part of the files, so what Claude Code
remembered on one machine is in its memory on the others.

A project's namespace comes from its working directory's mapping ('memmesh
map GLOB NS'), else its git remote's ('memmesh map --remote URL NS'), else
its remote's owner and name (github.com/acme/app is acme-app), the same on
every machine. A project with no remote and no mapping is skipped.

Your text is kept: the bridge changes an entry of yours only when its memory
changed on another machine, writes through a temporary file, and keeps a
copy of each file it replaces under $MEMMESH_HOME/bridge/backups. An entry
edited here and elsewhere at once is a sync conflict: both versions stay in
the file, and 'memmesh doctor' lists it. The daemon does the same on its own
with [bridge] claude_code = true in config.toml.`,
		Example: `  memmesh bridge claude-code --list
  memmesh bridge claude-code --dry-run
  memmesh bridge claude-code
  memmesh bridge claude-code --project ~/src/app`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			br := newBridge(a.home, slog.New(slog.DiscardHandler))
			if list {
				ps, err := br.List(cmd.Context(), project)
				if err != nil {
					return err
				}
				return emitList(a, "projects", ps, func(w io.Writer) {
					printTable(w, ps, "No Claude Code projects in ~/.claude/projects.", "PROJECT\tREMOTE\tNAMESPACE", func(p bridge.Project) []any {
						ns := p.Namespace
						if p.Skipped != "" {
							ns = "skipped: " + p.Skipped
						}
						return []any{cmp.Or(p.Path, p.Dir), cmp.Or(p.Remote, "-"), ns}
					})
				}, func(p bridge.Project) string { return cmp.Or(p.Path, p.Dir) + "\t" + p.Namespace })
			}
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			reps, runErr := br.Run(cmd.Context(), c, bridge.Options{Project: project, DryRun: dry})
			if runErr != nil && len(reps) == 0 {
				return runErr
			}
			err = emitList(a, "projects", reps, func(w io.Writer) { printBridgeReports(w, reps, dry) },
				func(r bridge.ProjectReport) string {
					return fmt.Sprintf("%s\t%s\t+%d ~%d -%d\t%s", cmp.Or(r.Path, r.Dir), r.Namespace, r.Imported, r.Updated, r.Archived, strings.Join(r.Written, ","))
				})
			if runErr != nil {
				return runErr
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&list, "list", false, "list the projects, their paths, remotes and namespaces (or why skipped), and change nothing")
	fs.BoolVar(&dry, "dry-run", false, "say what would change, and change nothing")
	fs.StringVar(&project, "project", "", "only the project of this directory (its git tree)")
	return cmd
}

func printBridgeReports(w io.Writer, reps []bridge.ProjectReport, dry bool) {
	if len(reps) == 0 {
		fmt.Fprintln(w, "No Claude Code projects in ~/.claude/projects.")
		return
	}
	verb := "wrote"
	if dry {
		verb = "would write"
	}
	for _, r := range reps {
		fmt.Fprintf(w, "%s\n", cmp.Or(r.Path, r.Dir))
		if r.Skipped != "" {
			fmt.Fprintf(w, "  skipped: %s\n", r.Skipped)
			continue
		}
		fmt.Fprintf(w, "  namespace %s (remote %s), memory %s\n", r.Namespace, cmp.Or(r.Remote, "none"), r.MemoryDir)
		if r.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", r.Note)
		}
		fmt.Fprintf(w, "  entries in: %d new, %d edited, %d deleted; %s %d files", r.Imported, r.Updated, r.Archived, verb, len(r.Written))
		if len(r.Written) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(r.Written, ", "))
		}
		fmt.Fprintln(w)
		if r.Conflicts > 0 {
			fmt.Fprintf(w, "  %d entries edited on two machines at once: both versions are in the file; edit the entry to settle it (memmesh doctor lists them)\n", r.Conflicts)
		}
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  left alone: %s\n", p)
		}
	}
}

// newBridge is the bridge of this user's Claude Code and home.
func newBridge(home string, log *slog.Logger) *bridge.Bridge {
	userHome, _ := os.UserHomeDir()
	return bridge.New(bridge.Config{
		ClaudeHome: filepath.Join(userHome, ".claude"),
		StateDir:   filepath.Join(home, "bridge"),
		Namespace:  func(path, remote string) string { return bridgeNamespace(home, path, remote) },
		Logger:     log,
	})
}

// bridgeNamespace is the namespace of a Claude Code project: its path's
// glob mapping, its remote's mapping, else one made from the remote.
func bridgeNamespace(home, path, remote string) string {
	maps, err := projmap.Load(home)
	if err != nil {
		return ""
	}
	if ns, ok := projmap.Lookup(maps, path); ok {
		return ns
	}
	if ns, ok := projmap.LookupRemote(maps, remote); ok {
		return ns
	}
	ns, err := node.NormalizeNamespace(projmap.RemoteNamespace(remote))
	if err != nil || projmap.RemoteNamespace(remote) == "" {
		return ""
	}
	return ns
}

// runBridge mirrors Claude Code's auto memory with n until ctx ends.
func runBridge(ctx context.Context, home string, n *node.Node, interval time.Duration, log *slog.Logger) {
	newBridge(home, log).Watch(ctx, n, interval, min(interval, bridgePoll))
}

// bridgePoll is how often the daemon looks for a change to mirror: the
// memory directories' file times and the store's change log.
const bridgePoll = 250 * time.Millisecond
