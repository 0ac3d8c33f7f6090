package main

import (
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/internal/bench"
)

func (a *app) benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure retrieval quality and performance on real nodes",
		Long: `Measure memmesh on real nodes started for the purpose (their own Pebble
stores and search indexes in a temporary directory, QUIC on loopback),
removed afterwards. Each subcommand prints a table, or with --json one JSON
object of its figures. The running daemon and its home are not touched.`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(a.benchLocomoCommand())
	return cmd
}

// runBench runs a benchmark with progress on standard error and prints
// its report.
func runBench[R bench.Report](a *app, cmd *cobra.Command, run func(log *slog.Logger) (R, error)) error {
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r, err := run(log.With("bench", cmd.Name()))
	if err != nil {
		return err
	}
	return a.emit(r, func(w io.Writer) { printRows(w, r.Rows()) }, func(w io.Writer) { printRows(w, r.Rows()) })
}

func printRows(w io.Writer, rows []bench.Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r.Name, r.Value)
	}
	tw.Flush()
}

func (a *app) benchLocomoCommand() *cobra.Command {
	var opts bench.LocomoOptions
	cmd := &cobra.Command{
		Use:   "locomo --data DIR",
		Short: "Retrieval quality on LoCoMo conversations: recall@5, recall@10, MRR, latency",
		Long: `Run the LoCoMo retrieval protocol through a real node: every turn of the
conversations in DIR (conv-*.json) is captured as a memory of the
conversation's namespace, at its session's time and in a session of its
own; every question of categories 1 to 4 is searched in its conversation's
namespace. Recall@k is the share of a question's evidence turns among the
first k results, averaged over questions; MRR is that of the first evidence
turn in the top 10.

With --baseline, the reference script (locomo_fts5_baseline.py, SQLite FTS5
BM25) runs on the same files with python3 and its figures are shown beside.`,
		Example: `  memmesh bench locomo --data ../bench/locomo --baseline ../bench/locomo_fts5_baseline.py
  memmesh bench locomo --data ./locomo --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if opts.Data == "" {
				return usagef("--data is required: the folder holding the conv-*.json files")
			}
			return runBench(a, cmd, func(log *slog.Logger) (bench.LocomoReport, error) {
				opts.Log = log
				return bench.Locomo(cmd.Context(), opts)
			})
		},
	}
	cmd.Flags().StringVar(&opts.Data, "data", "", "folder of LoCoMo conversations (conv-*.json)")
	cmd.Flags().StringVar(&opts.Baseline, "baseline", "", "reference script to run on the same files (python3)")
	cmd.Flags().BoolVar(&opts.NoGraph, "no-graph", false, "search by text alone, as 'memmesh search --no-graph' does")
	return cmd
}
