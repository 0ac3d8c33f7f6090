package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/cmd/memmesh-bench/internal/bench"
	"github.com/memmesh/memmesh/embed/embedconf"
	"github.com/memmesh/memmesh/internal/inert"
)

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "memmesh-bench",
		Short: "Measure retrieval quality and performance on real nodes",
		Long: `Measure memmesh on real nodes started for the purpose (their own Pebble
stores and search indexes in a temporary directory, QUIC on loopback),
removed afterwards. Each subcommand prints a table, or with --json one JSON
object of its figures. The running daemon and its home are not touched.

'memmesh bench ...' runs this command. The benchmarks that start daemons
(idle, startup, sessions) run the memmesh executable beside this one, else
memmesh on PATH, or the one --memmesh names.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return a.setup()
		},
	}
	root.PersistentFlags().StringVar(&a.format, "format", "", "output format: human or json (default: human on a terminal, json otherwise)")
	root.PersistentFlags().BoolVar(&a.json, "json", false, "same as --format json")
	root.PersistentFlags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark to this file (go tool pprof; samples carry a phase label)")
	root.SetFlagErrorFunc(misuse)
	root.AddCommand(a.benchLocomoCommand(), a.benchCaptureCommand(), a.benchSearchCommand(),
		a.benchSyncCommand(), a.benchResyncCommand(), a.benchIdleCommand(), a.benchStartupCommand(), a.benchBriefCommand(), a.benchSessionsCommand(), a.benchGitCommand())
	return root
}

// memmeshFlag adds --memmesh, the memmesh executable that the daemons of
// cmd's benchmark run, to binary.
func memmeshFlag(cmd *cobra.Command, binary *string) {
	cmd.Flags().StringVar(binary, "memmesh", "", "memmesh executable the daemons run (default: the one beside memmesh-bench, else on PATH)")
}

// benchOptions are a benchmark's options, set by its command's flags.
type benchOptions[O any] interface {
	*O
	Validate() error
	SetLog(*slog.Logger)
}

// benchRunE returns the RunE of a bench subcommand: invalid options are a
// usage error; otherwise run gets them with progress on standard error,
// and its report is printed. SIGINT and SIGTERM cancel the benchmark's
// context: it stops what it started and removes its data before the
// command returns.
func benchRunE[O any, P benchOptions[O], R bench.Report](a *app, opts P, run func(context.Context, O) (R, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := opts.Validate(); err != nil {
			return misuse(cmd, err)
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		opts.SetLog(log.With("bench", cmd.Name()))
		stopProfile, err := startCPUProfile(a.cpuProfile)
		if err != nil {
			return err
		}
		r, err := run(ctx, *opts)
		if perr := stopProfile(); err == nil {
			err = perr
		}
		if err != nil {
			return err
		}
		return a.emit(r)
	}
}

// startCPUProfile starts a CPU profile written to path, unless path is
// empty, and returns what stops it.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		return nil
	}, nil
}

// emit writes r as indented JSON, or as a table of its rows; either is
// inert.
func (a *app) emit(r bench.Report) error {
	var b bytes.Buffer
	if a.json {
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
		_, err := a.stdout.Write(inert.JSON(b.Bytes()))
		return err
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, row := range r.Rows() {
		fmt.Fprintf(tw, "%s\t%s\n", row.Name, row.Value)
	}
	tw.Flush()
	_, err := io.WriteString(a.stdout, inert.Text(b.String()))
	return err
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
BM25) runs on the same files with python3 and its figures are shown beside.
With --embed, the protocol runs a second time on a node that also searches
by meaning, and both are shown (each conversation's questions wait until
its memories have their vectors).`,
		Example: `  memmesh bench locomo --data ../bench/locomo --baseline ../bench/locomo_fts5_baseline.py
  memmesh bench locomo --data ./locomo --json
  memmesh bench locomo --data ./locomo --embed builtin --embed-model ./potion-base-8M
  memmesh bench locomo --data ./locomo --embed ollama --embed-model nomic-embed-text`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Locomo),
	}
	cmd.Flags().StringVar(&opts.Data, "data", "", "folder of LoCoMo conversations (conv-*.json)")
	cmd.Flags().StringVar(&opts.Baseline, "baseline", "", "reference script to run on the same files (python3)")
	cmd.Flags().BoolVar(&opts.NoGraph, "no-graph", false, "search by text alone, as 'memmesh search --no-graph' does")
	var model, home string
	cmd.Flags().StringVar(&opts.Embed.Provider, "embed", "", "also search by meaning: with no value, as [embed] of config.toml says; else this provider (builtin, ollama or openai)")
	cmd.Flags().Lookup("embed").NoOptDefVal = embedFromConfig
	cmd.Flags().StringVar(&home, "home", "", "with --embed alone: the memmesh home whose config.toml and models to read (env MEMMESH_HOME, default ~/.memmesh)")
	cmd.Flags().StringVar(&model, "embed-model", "", "the provider's model; for builtin, the model's folder")
	cmd.Flags().StringVar(&opts.Embed.URL, "embed-url", "", "the provider's URL (ollama's root, or an OpenAI-compatible base URL ending in /v1)")
	cmd.Flags().StringVar(&opts.Embed.APIKeyEnv, "embed-key-env", "", "openai: the environment variable holding the API key")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if opts.Embed.Provider == embedFromConfig {
			var err error
			opts.Embed, opts.EmbedModels, err = configEmbed(home)
			return err
		}
		opts.Embed.Model = model
		if opts.Embed.Provider == "builtin" && model != "" {
			opts.EmbedModels, opts.Embed.Model = filepath.Dir(model), filepath.Base(model)
		}
		return nil
	}
	return cmd
}

func (a *app) benchCaptureCommand() *cobra.Command {
	opts := bench.CaptureOptions{Memories: 3000, Import: 10_000}
	cmd := &cobra.Command{
		Use:   "capture",
		Short: "Durable capture latency and batch import throughput, in-process",
		Long: `Capture corpus memories one by one through a fresh node (node.Remember:
validation, scrub, dedup, Automerge, a synced Pebble batch; indexing runs
beside it) and report the latency's p50 and p99. Then import a batch of
corpus memories into another fresh node and report memories per second until
the import is durable, and the time until all of it is searchable.`,
		Example: `  memmesh bench capture
  memmesh bench capture --memories 10000 --json`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Capture),
	}
	cmd.Flags().IntVar(&opts.Memories, "memories", opts.Memories, "memories captured one by one")
	cmd.Flags().IntVar(&opts.Import, "import", opts.Import, "memories in the batch import")
	return cmd
}

func (a *app) benchSearchCommand() *cobra.Command {
	opts := bench.SearchOptions{Memories: 100_000, Queries: 2000}
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Search latency on a node holding many memories",
		Long: `Fill a node with corpus memories through the import path, open it again
cold (as a restarted daemon would), warm its caches with the corpus queries
once, then time top-10 searches of those queries and report p50 and p99.

With --vector-dims, it then times the vector stage of search by meaning
alone: a vector index of as many vectors (clustered, as texts fall into
topics; no model runs) asked for the 50 nearest a query, as a search of 10
results asks it.`,
		Example: `  memmesh bench search
  memmesh bench search --memories 10000 --queries 500 --json
  memmesh bench search --memories 100000 --vector-dims 256`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Search),
	}
	cmd.Flags().IntVar(&opts.Memories, "memories", opts.Memories, "memories the node holds")
	cmd.Flags().IntVar(&opts.Queries, "queries", opts.Queries, "searches timed")
	cmd.Flags().IntVar(&opts.VectorDims, "vector-dims", 0, "also time the vector stage, with vectors of this many values (256 for the builtin models, 768 for nomic-embed-text)")
	return cmd
}

func (a *app) benchBriefCommand() *cobra.Command {
	opts := bench.BriefOptions{Sizes: []int{300, 3000, 30_000}, Budgets: []int{500, 2000, 8000}, Runs: 100, Seed: 1}
	cmd := &cobra.Command{
		Use:   "brief",
		Short: "Key memories in the context brief, and its latency",
		Long: `Generate a project for each size (key memories of known kinds: decisions, a
superseded decision, conventions, preferences, open tasks and a note that
contradicts a decision, written first; then many later low-value notes,
among them clusters of near duplicates), import it into a fresh node, and
report the share of the key memories its Markdown brief shows at each
budget, with the tokens the brief says it holds and the tokenizer's count
of its text. Then time briefs at the default budget, idle and each right
after a new memory, and report p50 and p99.`,
		Example: `  memmesh bench brief
  memmesh bench brief --sizes 100000 --budgets 2000 --runs 200
  memmesh bench brief --sizes 300 --seed 7 --json`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Brief),
	}
	cmd.Flags().IntSliceVar(&opts.Sizes, "sizes", opts.Sizes, "memories of each project")
	cmd.Flags().IntSliceVar(&opts.Budgets, "budgets", opts.Budgets, "token budgets of the briefs checked for key memories")
	cmd.Flags().IntVar(&opts.Runs, "runs", opts.Runs, "briefs timed, idle and after a change")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", opts.Seed, "seed of the generated projects")
	return cmd
}

func (a *app) benchSyncCommand() *cobra.Command {
	opts := bench.SyncOptions{Nodes: 3, Memories: 100_000, Samples: 300}
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Propagation between nodes and the initial sync of a fresh node",
		Long: `Run real nodes in this process, each with its own home and QUIC on its own
loopback address (127.0.0.x), with the daemon's default mesh timings.

First, on a mesh of --nodes empty nodes, capture on one node and search on
the next until the memory is found (push, durable apply, indexing), and
report p50 and p99. Then a fresh node joins a mesh of --nodes - 1 members
holding the same --memories corpus memories: the time until it stores them
all, until they are all searchable, the bytes and round trips of the pull
that brought the most, and the bytes of all its pulls from every member.`,
		Example: `  memmesh bench sync
  memmesh bench sync --nodes 3 --memories 10000 --json`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Sync),
	}
	cmd.Flags().IntVar(&opts.Nodes, "nodes", opts.Nodes, "nodes of the propagation mesh (at least 2)")
	cmd.Flags().IntVar(&opts.Memories, "memories", opts.Memories, "memories on the members a fresh node joins")
	cmd.Flags().IntVar(&opts.Samples, "samples", opts.Samples, "captures timed until searchable on a peer")
	return cmd
}

func (a *app) benchResyncCommand() *cobra.Command {
	opts := bench.ResyncOptions{Changes: 1000, Memories: 100_000}
	cmd := &cobra.Command{
		Use:   "resync",
		Short: "Two nodes meeting again after a partition",
		Long: `Start two nodes in this process (QUIC on 127.0.0.1 and 127.0.0.2) holding
the same --memories corpus memories, partition them until each sees the
other dead, change --changes memories on one side, heal the partition, and
report the time until both are identical again and the time, bytes and
round trips of the pull that brought the changes.`,
		Example: `  memmesh bench resync
  memmesh bench resync --changes 200 --memories 10000 --json`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Resync),
	}
	cmd.Flags().IntVar(&opts.Changes, "changes", opts.Changes, "memories changed during the partition")
	cmd.Flags().IntVar(&opts.Memories, "memories", opts.Memories, "memories on both nodes")
	return cmd
}

func (a *app) benchIdleCommand() *cobra.Command {
	opts := bench.IdleOptions{Nodes: 3, Memories: 20_000, Settle: 3 * time.Minute, Window: 60 * time.Second}
	cmd := &cobra.Command{
		Use:   "idle",
		Short: "CPU of an idle mesh of daemons holding many memories",
		Long: `Start --nodes daemons ('memmesh serve': see --memmesh), each with a home
and a user home of its own, the mesh on a loopback port and no MCP over
HTTP; join them into one mesh, import --memories corpus memories
into the first, wait until every daemon holds and has indexed them all, let
the mesh run for --settle (what the import and the catch-up leave behind,
Pebble's compactions and the search index's merges, and the daemons' first
lifecycle pass, a minute after they start, end within it), then report each
daemon's CPU time (user and system, from /proc) over --window, in percent
of one core.`,
		Example: `  memmesh bench idle
  memmesh bench idle --memories 2000 --window 20s --json`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Idle),
	}
	memmeshFlag(cmd, &opts.Binary)
	cmd.Flags().IntVar(&opts.Nodes, "nodes", opts.Nodes, "daemons in the mesh (at least 2)")
	cmd.Flags().IntVar(&opts.Memories, "memories", opts.Memories, "memories on every daemon")
	cmd.Flags().DurationVar(&opts.Settle, "settle", opts.Settle, "how long the synced mesh runs before the measurement")
	cmd.Flags().DurationVar(&opts.Window, "window", opts.Window, "how long CPU time is measured")
	return cmd
}

func (a *app) benchStartupCommand() *cobra.Command {
	opts := bench.StartupOptions{Memories: 100_000, Runs: 5}
	cmd := &cobra.Command{
		Use:   "startup",
		Short: "Cold start of the daemon on a full home, and its memory",
		Long: `Fill a new home with corpus memories through a daemon's import (memmesh
serve, see --memmesh), stop it, then start 'memmesh serve' on the home
--runs times: the time until it answers a search (p50, p99) and its resident
memory after that search. Each daemon runs without MCP over HTTP and with
the mesh on an ephemeral loopback port, and is stopped with SIGTERM.`,
		Example: `  memmesh bench startup
  memmesh bench startup --memories 20000 --runs 3 --json`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Startup),
	}
	memmeshFlag(cmd, &opts.Binary)
	cmd.Flags().IntVar(&opts.Memories, "memories", opts.Memories, "memories in the home")
	cmd.Flags().IntVar(&opts.Runs, "runs", opts.Runs, "daemon starts timed")
	return cmd
}

func (a *app) benchSessionsCommand() *cobra.Command {
	opts := bench.SessionsOptions{MB: 50, Hooks: 50}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "Reading agents' transcripts: throughput, a read of one more turn, the hook",
		Long: `Generate a Claude Code transcript of --mb MB and read it whole into a fresh
node (adapter, scrubbing, storage, the session's summary and lessons): MB/s
and turns/s, wall and CPU time. Append one turn and time the read of it.
Then start a daemon (memmesh serve, see --memmesh) and run 'memmesh
sessions ingest --hook' --hooks times as a client's hook runs it: latency
from process start to exit (p50, p99). With --corpus, first read each
session of a labelled corpus (extract/testdata/corpus in the source) with
its client's adapter, extract its lessons and judge them against its
labels: precision and recall overall, per client and per kind.`,
		Example: `  memmesh bench sessions
  memmesh bench sessions --mb 5 --hooks 20 --json
  memmesh bench sessions --mb 1 --hooks 3 --corpus extract/testdata/corpus`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Sessions),
	}
	memmeshFlag(cmd, &opts.Binary)
	cmd.Flags().IntVar(&opts.MB, "mb", opts.MB, "size of the transcript in MB (1 to 2000)")
	cmd.Flags().IntVar(&opts.Hooks, "hooks", opts.Hooks, "runs of the ingest hook (1 to 10000)")
	cmd.Flags().StringVar(&opts.Corpus, "corpus", "", "a labelled corpus of sessions to measure the lessons' extraction on")
	return cmd
}

func (a *app) benchGitCommand() *cobra.Command {
	opts := bench.GitOptions{Commits: 10000, Files: 2000, Memories: 5000, New: 20, Seed: 1}
	cmd := &cobra.Command{
		Use:   "git",
		Short: "Staleness against git: the first check of a long history, a check per new commit",
		Long: `Write a history of --commits commits over --files files with git
fast-import (each commit changes one to three files, a third of the changes
rename the file's function; some commits rename or delete files), and
--memories memories that each name a file and its function as they were at
some commit. Then time, on a fresh node, the first check of the tree (the
whole history read, then every memory judged; CPU of memmesh and of git),
one 'memmesh stale', and a check after each of --new commits added one at
a time.`,
		Example: `  memmesh bench git
  memmesh bench git --commits 1000 --memories 500 --json`,
		Args: noArgs,
		RunE: benchRunE(a, &opts, bench.Git),
	}
	cmd.Flags().IntVar(&opts.Commits, "commits", opts.Commits, "commits of the history")
	cmd.Flags().IntVar(&opts.Files, "files", opts.Files, "files in the tree")
	cmd.Flags().IntVar(&opts.Memories, "memories", opts.Memories, "memories naming a file and a symbol")
	cmd.Flags().IntVar(&opts.New, "new", opts.New, "commits added and checked one at a time")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", opts.Seed, "seed of the history and the memories")
	return cmd
}

// embedFromConfig is --embed without a value: as config.toml says.
const embedFromConfig = "config"

// configEmbed reads [embed] of the config.toml of home (or MEMMESH_HOME,
// or ~/.memmesh), and the folder of its builtin models.
func configEmbed(home string) (embedconf.Config, string, error) {
	home = cmp.Or(home, os.Getenv("MEMMESH_HOME"))
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return embedconf.Config{}, "", fmt.Errorf("--embed: no home: %w", err)
		}
		home = filepath.Join(h, ".memmesh")
	}
	var cfg struct {
		Embed embedconf.Config `toml:"embed"`
	}
	path := filepath.Join(home, "config.toml")
	if _, err := toml.DecodeFile(path, &cfg); err != nil {
		return embedconf.Config{}, "", fmt.Errorf("--embed: %w", err)
	}
	if p := cfg.Embed.Provider; p == "" || p == "off" {
		return embedconf.Config{}, "", fmt.Errorf("--embed: %s sets no [embed] provider: set one, or name it (--embed ollama)", path)
	}
	return cfg.Embed, filepath.Join(home, embedconf.ModelsDir), nil
}
