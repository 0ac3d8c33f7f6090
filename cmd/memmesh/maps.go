package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/projmap"
	"github.com/memmesh/memmesh/node"
)

func (a *app) mapCommand() *cobra.Command {
	var list bool
	var remove string
	cmd := &cobra.Command{
		Use:   "map [GLOB NAMESPACE]",
		Short: "Map project directories to a namespace",
		Long: `Map the directories that match GLOB, and everything under them, to
NAMESPACE: commands run there (and MCP servers that agents start there) use
it by default. A project's own .memmesh.toml, MEMMESH_NAMESPACE and --ns
come first. GLOB is a path with shell wildcards (* ? [...]) within a path
element; ~ is your home. Without arguments (or with --list), list the
mappings; --remove GLOB deletes one.`,
		Example: `  memmesh map ~/work/acme acme
  memmesh map '~/src/*/backend' backend
  memmesh map --list
  memmesh map --remove ~/work/acme`,
		Args: args(func(cmd *cobra.Command, argv []string) error {
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
				glob, err := cleanGlob(remove)
				if err != nil {
					return err
				}
				i := slices.IndexFunc(maps, func(m projmap.Mapping) bool { return m.Glob == glob })
				if i < 0 {
					return fmt.Errorf("%w: no mapping for %s (see 'memmesh map --list')", api.ErrNotFound, glob)
				}
				maps = slices.Delete(maps, i, i+1)
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
			current, _ := projmap.Lookup(maps, wd)
			return a.emit(struct {
				Maps    []projmap.Mapping `json:"maps"`
				Current string            `json:"current,omitempty"`
			}{append([]projmap.Mapping{}, maps...), current}, func(w io.Writer) {
				printTable(w, maps, "No project mappings: 'memmesh map GLOB NAMESPACE' adds one.", "GLOB\tNAMESPACE", func(m projmap.Mapping) []any {
					return []any{m.Glob, m.Namespace}
				})
				if current != "" {
					fmt.Fprintf(w, "\nHere (%s) the namespace is %s.\n", wd, current)
				}
			}, func(w io.Writer) {
				for _, m := range maps {
					fmt.Fprintf(w, "%s\t%s\n", m.Glob, m.Namespace)
				}
			})
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the mappings (the default without arguments)")
	cmd.Flags().StringVar(&remove, "remove", "", "delete the mapping of this glob")
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
