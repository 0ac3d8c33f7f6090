package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/node"
)

// mapsFile holds the project mappings in the home, written by `memmesh
// map`: which namespace a working directory uses.
const mapsFile = "maps.toml"

// mapping sends the directories that match Glob (and everything under
// them) to Namespace.
type mapping struct {
	Glob      string `toml:"glob" json:"glob"`
	Namespace string `toml:"namespace" json:"namespace"`
}

type mapsDoc struct {
	Map []mapping `toml:"map"`
}

func loadMaps(home string) ([]mapping, error) {
	path := filepath.Join(home, mapsFile)
	var doc mapsDoc
	if _, err := toml.DecodeFile(path, &doc); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("project mappings %s: %w", path, err)
	}
	return doc.Map, nil
}

// saveMaps replaces the mappings file atomically.
func saveMaps(home string, maps []mapping) error {
	path := filepath.Join(home, mapsFile)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(home, ".maps-*.toml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	fmt.Fprintln(tmp, "# Project mappings, written by 'memmesh map': a working directory that matches")
	fmt.Fprintln(tmp, "# glob (or lies under one that does) uses namespace. The deepest match wins.")
	if err := toml.NewEncoder(tmp).Encode(mapsDoc{Map: maps}); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// mappedNamespace returns the namespace of dir: that of the mapping whose
// glob matches dir or its nearest ancestor (the last such mapping when
// several match the same directory).
func mappedNamespace(maps []mapping, dir string) (string, bool) {
	for {
		for i := len(maps) - 1; i >= 0; i-- {
			if ok, _ := filepath.Match(maps[i].Glob, dir); ok {
				return maps[i].Namespace, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// cleanGlob makes a glob absolute (expanding a leading ~) and checks it.
func cleanGlob(glob string) (string, error) {
	if rest, ok := strings.CutPrefix(glob, "~"); ok && (rest == "" || rest[0] == '/') {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		glob = home + rest
	}
	abs, err := filepath.Abs(glob)
	if err != nil {
		return "", err
	}
	if _, err := filepath.Match(abs, ""); err != nil {
		return "", usagef("glob %q: %v", glob, err)
	}
	return abs, nil
}

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
			maps, err := loadMaps(a.home)
			if err != nil {
				return err
			}
			switch {
			case remove != "":
				glob, err := cleanGlob(remove)
				if err != nil {
					return err
				}
				i := slices.IndexFunc(maps, func(m mapping) bool { return m.Glob == glob })
				if i < 0 {
					return fmt.Errorf("%w: no mapping for %s (see 'memmesh map --list')", api.ErrNotFound, glob)
				}
				maps = slices.Delete(maps, i, i+1)
				if err := saveMaps(a.home, maps); err != nil {
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
				maps = slices.DeleteFunc(maps, func(m mapping) bool { return m.Glob == glob })
				maps = append(maps, mapping{Glob: glob, Namespace: ns})
				if err := saveMaps(a.home, maps); err != nil {
					return err
				}
			}
			wd, _ := os.Getwd()
			current, _ := mappedNamespace(maps, wd)
			return a.emit(struct {
				Maps    []mapping `json:"maps"`
				Current string    `json:"current,omitempty"`
			}{append([]mapping{}, maps...), current}, func(w io.Writer) {
				printTable(w, maps, "No project mappings: 'memmesh map GLOB NAMESPACE' adds one.", "GLOB\tNAMESPACE", func(m mapping) []any {
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
