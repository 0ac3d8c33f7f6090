package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/web"
)

func (a *app) symbolsCommand() *cobra.Command {
	var req api.SymbolsRequest
	cmd := &cobra.Command{
		Use:   "symbols QUERY",
		Short: "Find functions, types and methods of the indexed working trees by name or prefix",
		Long: `Find the symbols (functions, methods, types, classes, structs, interfaces,
traits, enums) of the Go, Python, JavaScript, TypeScript and Rust files of the
working trees indexed on this machine, whose name or qualified name (Type.Method)
starts with QUERY, in any case; exact names come first. Each is shown with its
kind, file and line, and the namespace of its tree.

'memmesh symbols index DIR' indexes a tree (its git working tree, or DIR itself
outside git); the daemon then keeps it up to date every 10 minutes
([symbols] interval in config.toml), with the git working trees that project
mappings name ('memmesh map GLOB NS'). To look up a symbol called index or
trees, write it in another case ('memmesh symbols Index'): the lookup
ignores case, the subcommands do not.`,
		Example: `  memmesh symbols index .
  memmesh symbols validateToken
  memmesh symbols Store.        # the methods of Store
  memmesh symbols pars --ns app --limit 10`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req.Query = argv[0]
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) ([]api.SymbolLocation, error) { return c.Symbols(ctx, req) })
			if err != nil {
				return err
			}
			return emitList(a, "symbols", res, func(w io.Writer) {
				printTable(w, res, "No symbol starts with "+argv[0]+" in the indexed trees ('memmesh symbols trees' lists them).",
					"KIND\tNAME\tFILE\tNAMESPACE\tTREE", func(l api.SymbolLocation) []any {
						return []any{l.Kind, l.Qualified(), l.File + ":" + strconv.Itoa(l.Line), l.Namespace, l.Root}
					})
			}, func(l api.SymbolLocation) string {
				return l.Qualified() + " " + filepath.Join(l.Root, filepath.FromSlash(l.File)) + ":" + strconv.Itoa(l.Line)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Namespace, "ns", "", "only the trees of this namespace")
	intRangeVar(f, &req.Limit, "limit", 50, 1, 1000, "at most this many symbols (1 to 1,000)")
	cmd.AddCommand(a.symbolsIndexCommand(), a.symbolsTreesCommand())
	return cmd
}

func (a *app) symbolsIndexCommand() *cobra.Command {
	var ns string
	cmd := &cobra.Command{
		Use:   "index [DIR]",
		Short: "Index the symbols of the working tree that holds DIR (default: here) now",
		Long: `Index the symbols of the working tree that holds DIR (default: the working
directory): its git working tree, whose files git tracks or would (.gitignore
is respected), or DIR itself outside git. Only the files changed since the last
index are parsed; files gone are dropped. Files over 1 MiB, binary or not
UTF-8, symlinks, and vendor, node_modules, testdata, build and dot directories are
left out. The tree's memories are in the namespace of DIR ('memmesh map',
.memmesh.toml) unless --ns says otherwise. The daemon indexes the trees again
on its schedule.`,
		Example: `  memmesh symbols index
  memmesh symbols index ~/src/app --ns app`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			dir := "."
			if len(argv) == 1 {
				dir = argv[0]
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			req := api.SymbolsIndexRequest{Dir: abs, Namespace: ns}
			if req.Namespace == "" {
				req.Namespace = projectNamespace(a.home, a.cfg.Namespace, abs)
			}
			progress, stop := a.indexProgress(abs)
			rep, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.SymbolsReport, error) {
				return c.IndexSymbols(ctx, req, progress)
			})
			stop()
			if err != nil {
				return err
			}
			return a.emit(rep, func(w io.Writer) { printIndexReport(w, rep) }, func(w io.Writer) {
				fmt.Fprintf(w, "%s %d files %d symbols %d parsed\n", rep.Root, rep.Files, rep.Symbols, rep.Parsed)
			})
		},
	}
	cmd.Flags().StringVar(&ns, "ns", "", "the namespace of the tree's memories (default: DIR's)")
	return cmd
}

func (a *app) symbolsTreesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "trees",
		Short: "List the working trees whose symbols are indexed here",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) ([]api.SymbolTree, error) { return c.SymbolTrees(ctx) })
			if err != nil {
				return err
			}
			return emitList(a, "trees", res, func(w io.Writer) {
				printTable(w, res, "No tree indexed: 'memmesh symbols index DIR' indexes one.", "TREE\tNAMESPACE\tFILES\tSYMBOLS\tINDEXED",
					func(t api.SymbolTree) []any {
						return []any{t.Root, t.Namespace, t.Files, t.Symbols, when(t.IndexedAt)}
					})
			}, func(t api.SymbolTree) string { return t.Root })
		},
	}
}

// indexProgress shows, on a terminal, how far indexing a tree is, until
// stop is called.
func (a *app) indexProgress(dir string) (progress func(api.SymbolsProgress), stop func()) {
	f, ok := a.stderrTerminal()
	if !ok {
		return nil, func() {}
	}
	var mu sync.Mutex
	shown := false
	name := inert.Text(dir)
	return func(p api.SymbolsProgress) {
			mu.Lock()
			defer mu.Unlock()
			shown = true
			fmt.Fprintf(f, "\rIndexing %s: %d of %d files, %d parsed", name, p.Done, p.Total, p.Parsed)
		}, func() {
			mu.Lock()
			defer mu.Unlock()
			if shown {
				fmt.Fprintln(f)
			}
		}
}

// printIndexReport says what indexing a tree did.
func printIndexReport(w io.Writer, rep api.SymbolsReport) {
	fmt.Fprintf(w, "Indexed %s (namespace %s): %d files, %d symbols; %d files parsed, %d dropped, in %.0f ms.\n",
		rep.Root, rep.Namespace, rep.Files, rep.Symbols, rep.Parsed, rep.Removed, rep.TookMS)
	s := rep.Skipped
	var skipped []string
	for _, c := range []struct {
		n    int
		what string
	}{{s.Large, "over the size limit"}, {s.Binary, "binary or not UTF-8"}, {s.Special, "symlinks or paths too deep or long"},
		{s.Errors, "unreadable or unparsable"}, {s.OverCap, "past the limits per tree"}} {
		if c.n > 0 {
			skipped = append(skipped, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, "Left out: %s.\n", strings.Join(skipped, ", "))
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warn)
	}
}
