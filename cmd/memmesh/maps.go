package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/gitrepo"
	"github.com/memmesh/memmesh/internal/projmap"
	"github.com/memmesh/memmesh/node"
)

func (a *app) mapCommand() *cobra.Command {
	var list bool
	var remove, remote string
	cmd := &cobra.Command{
		Use:   "map [GLOB NAMESPACE | --remote URL NAMESPACE]",
		Short: "Map project directories to a namespace",
		Long: `Map the directories that match GLOB, and everything under them, to
NAMESPACE: commands run there (and MCP servers that agents start there) use
it by default. A project's own .memmesh.toml, MEMMESH_NAMESPACE and --ns
come first. GLOB is a path with shell wildcards (* ? [...]) within a path
element; ~ is your home. --remote URL NAMESPACE maps every git working tree
whose remote (origin, else its first) is URL, wherever it is on this
machine: give the same mapping on each machine and a project has one
namespace on all of them (glob mappings come first). Without arguments (or
with --list), list the mappings; --remove GLOB (or URL) deletes one.`,
		Example: `  memmesh map ~/work/acme acme
  memmesh map '~/src/*/backend' backend
  memmesh map --remote github.com/acme/app acme
  memmesh map --list
  memmesh map --remove ~/work/acme`,
		Args: args(func(cmd *cobra.Command, argv []string) error {
			if remote != "" {
				if len(argv) != 1 || list || remove != "" {
					return fmt.Errorf("--remote URL takes one NAMESPACE, and no --list or --remove")
				}
				return nil
			}
			if len(argv) != 0 && len(argv) != 2 {
				return fmt.Errorf("give GLOB and NAMESPACE, or nothing to list")
			}
			if len(argv) == 2 && (list || remove != "") {
				return fmt.Errorf("--list and --remove take no GLOB NAMESPACE")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, argv []string) error {
			maps, err := projmap.Load(a.home)
			if err != nil {
				return err
			}
			switch {
			case remove != "":
				url := gitrepo.NormalizeRemote(remove)
				i := slices.IndexFunc(maps, func(m projmap.Mapping) bool { return m.Remote != "" && strings.EqualFold(m.Remote, url) })
				if i < 0 {
					glob, err := cleanGlob(remove)
					if err != nil {
						return err
					}
					if i = slices.IndexFunc(maps, func(m projmap.Mapping) bool { return m.Glob == glob }); i < 0 {
						return fmt.Errorf("%w: no mapping for %s (see 'memmesh map --list')", api.ErrNotFound, glob)
					}
				}
				maps = slices.Delete(maps, i, i+1)
				if err := projmap.Save(a.home, maps); err != nil {
					return err
				}
			case remote != "":
				url := gitrepo.NormalizeRemote(remote)
				if url == "" || len(url) > 1024 {
					return usageError{fmt.Errorf("--remote %q: give a repository URL such as github.com/acme/app", remote)}
				}
				ns, err := node.NormalizeNamespace(argv[0])
				if err != nil {
					return usageError{err}
				}
				maps = slices.DeleteFunc(maps, func(m projmap.Mapping) bool { return strings.EqualFold(m.Remote, url) })
				maps = append(maps, projmap.Mapping{Remote: url, Namespace: ns})
				if err := projmap.Save(a.home, maps); err != nil {
					return err
				}
			case len(argv) == 2:
				glob, err := cleanGlob(argv[0])
				if err != nil {
					return err
				}
				ns, err := node.NormalizeNamespace(argv[1])
				if err != nil {
					return usageError{err}
				}
				maps = slices.DeleteFunc(maps, func(m projmap.Mapping) bool { return m.Glob == glob })
				maps = append(maps, projmap.Mapping{Glob: glob, Namespace: ns})
				if err := projmap.Save(a.home, maps); err != nil {
					return err
				}
			}
			wd, _ := os.Getwd()
			current := dirNamespace(cmd.Context(), maps, wd)
			return a.emit(struct {
				Maps    []projmap.Mapping `json:"maps"`
				Current string            `json:"current,omitempty"`
			}{append([]projmap.Mapping{}, maps...), current}, func(w io.Writer) {
				printTable(w, maps, "No project mappings: 'memmesh map GLOB NAMESPACE' adds one.", "GLOB OR REMOTE\tNAMESPACE", func(m projmap.Mapping) []any {
					return []any{cmp.Or(m.Glob, "remote "+m.Remote), m.Namespace}
				})
				if current != "" {
					fmt.Fprintf(w, "\nHere (%s) the namespace is %s.\n", wd, current)
				}
			}, func(w io.Writer) {
				for _, m := range maps {
					fmt.Fprintf(w, "%s\t%s\n", cmp.Or(m.Glob, "remote "+m.Remote), m.Namespace)
				}
			})
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the mappings (the default without arguments)")
	cmd.Flags().StringVar(&remove, "remove", "", "delete the mapping of this glob or remote URL")
	cmd.Flags().StringVar(&remote, "remote", "", "map the git working trees whose remote is this URL")
	return cmd
}

// cleanGlob is projmap.CleanGlob with a bad glob reported as a usage error.
func cleanGlob(glob string) (string, error) {
	abs, err := projmap.CleanGlob(glob)
	if errors.Is(err, filepath.ErrBadPattern) {
		return "", usageError{err}
	}
	return abs, err
}

// dirNamespace is the namespace the mappings give dir: its glob mapping,
// else, when some mapping is by remote, that of its git working tree's
// remote ("" when none applies). Git is asked only when a remote mapping
// exists, so commands in unmapped homes run no git.
func dirNamespace(ctx context.Context, maps []projmap.Mapping, dir string) string {
	if ns, ok := projmap.Lookup(maps, dir); ok {
		return ns
	}
	if !projmap.HasRemote(maps) {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	root, err := gitrepo.Root(ctx, dir)
	if err != nil {
		return ""
	}
	remote, err := gitrepo.Remote(ctx, root)
	if err != nil {
		return ""
	}
	ns, _ := projmap.LookupRemote(maps, remote)
	return ns
}
