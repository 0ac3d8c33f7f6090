package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/agentfiles"
	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/mcp/servermemory"
	"github.com/memmesh/memmesh/node"
)

func (a *app) exportCommand() *cobra.Command {
	var out, to, ns string
	var check, force bool
	var budget int
	cmd := &cobra.Command{
		Use:   "export [--to agents-md|claude-md FILE]",
		Short: "Back up everything, or write a namespace's conventions and decisions into CLAUDE.md or AGENTS.md",
		Long: `Write this home's whole knowledge as JSON Lines: a header, the namespace
settings, the tombstones of purged memories, every memory (deleted ones too)
with every field and revision, and every edge with its notes, strength,
origin and validity. 'memmesh import' restores it, in this home or a new one.

With --to agents-md or --to claude-md, write the human-tier conventions and
decisions of namespace --ns (default: the namespace of FILE's directory) into
FILE, for the agents that read it at every session. They go into a managed
block between '<!-- memmesh:begin ... -->' and '<!-- memmesh:end -->' lines,
appended when the file has none (the file is created when missing); every
other byte of the file stays as it is. The block holds at most --budget
tokens (default 2000, counted with the o200k_base tokenizer), the most
trusted and most recently updated first, and says how many it left out.
Memories imported from FILE, and those whose text FILE already says, are
left out. Agent-tier memories are not written: what goes into an
instruction file is what a person vouched for (agents get the rest from
'memmesh context').

The begin marker records a hash of the block: a block edited by hand is
never written over; the export shows the diff and stops, unless --force
(the edit is then in the backup). The file is written through a temporary
file renamed over it, after a copy of it is kept in $MEMMESH_HOME/backups.
A read-only file is left alone.

--check writes nothing and exits 1 when the block is not what an export
would write (missing, out of date, or edited by hand), printing why and the
diff: for CI and pre-commit hooks.`,
		Example: `  memmesh export --out backup.jsonl
  memmesh export | gzip > backup.jsonl.gz
  memmesh export --to claude-md CLAUDE.md
  memmesh export --to agents-md AGENTS.md --ns backend --budget 1000
  memmesh export --to claude-md CLAUDE.md --check    # in CI or a pre-commit hook`,
		Args: func(cmd *cobra.Command, argv []string) error {
			if to == "" {
				return args(cobra.NoArgs)(cmd, argv)
			}
			return args(cobra.ExactArgs(1))(cmd, argv)
		},
		RunE: func(cmd *cobra.Command, argv []string) error {
			if to != "" {
				format, ok := agentFileFormat(to, agentfiles.ExportFormats)
				switch {
				case !ok:
					return usagef("--to %q: use agents-md or claude-md", to)
				case out != "":
					return usagef("--out is for a backup; with --to, FILE is where the block goes")
				}
				return a.exportAgentFile(cmd.Context(), format, argv[0], ns, budget, check, force)
			}
			for _, f := range []string{"ns", "check", "force", "budget"} {
				if cmd.Flags().Changed(f) {
					return usagef("--%s goes with --to agents-md or claude-md (a backup holds every namespace)", f)
				}
			}
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err := c.Export(cmd.Context(), a.stdout)
				return err
			}
			// Write beside the target and rename, so a failed export never
			// leaves a truncated file under the requested name.
			tmp, err := os.CreateTemp(filepath.Dir(out), ".memmesh-export-*")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name())
			h, err := c.Export(cmd.Context(), tmp)
			if err == nil {
				err = tmp.Sync()
			}
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), out); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Exported %s, %s, %s and %s to %s\n",
				importCount(h.Memories, "memory", "memories"), importCount(h.Edges, "edge", "edges"),
				importCount(h.Namespaces, "namespace setting", "namespace settings"), importCount(h.Purged, "purged id", "purged ids"), inert.Text(out))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write to this file instead of standard output")
	cmd.Flags().StringVar(&to, "to", "", "write a managed block into FILE instead of a backup: agents-md or claude-md")
	cmd.Flags().StringVar(&ns, "ns", "", "with --to: the namespace to write (default: the namespace of FILE's directory)")
	cmd.Flags().BoolVar(&check, "check", false, "with --to: write nothing; exit 1 when the block is out of date, saying why")
	cmd.Flags().BoolVar(&force, "force", false, "with --to: write over a block edited by hand (a backup keeps the edit)")
	cmd.Flags().IntVar(&budget, "budget", agentfiles.DefaultBudget, "with --to: the block's size in tokens")
	return cmd
}

func (a *app) importCommand() *cobra.Command {
	var from, ns string
	var archive, dryRun bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Restore a backup made by 'memmesh export', or import CLAUDE.md, AGENTS.md, .cursorrules or Copilot's instructions",
		Long: `Restore what 'memmesh export' wrote: namespace settings, purges, memories with
their ids, times and revisions, and edges. What this home has already is
skipped, and a memory purged here is never brought back, so importing a file
twice changes nothing the second time.

A file is checked whole first: if any line is bad, nothing is imported. On a
terminal the import shows its progress. Interrupted (Ctrl-C), it stops at the
next line, says how far it got, and keeps what it stored: the same command
then completes the job. (Standard input cannot be checked first: an import
from it stops at the first bad line, keeping what came before.)

With --from server-memory, FILE is the memory.jsonl of the official MCP memory
server (@modelcontextprotocol/server-memory): its entities and relations are
stored in namespace --ns as 'memmesh mcp --profile server-memory' serves them.
Importing the file again adds only what is new.

With --from claude-md, agents-md, cursorrules or copilot, FILE is an agent
instruction file (CLAUDE.md, AGENTS.md, .cursorrules or a .cursor/rules/*.mdc
rule, .github/copilot-instructions.md), Markdown or plain text. Each bullet
point and paragraph becomes a memory of tier human in namespace --ns
(default: the namespace of FILE's directory): kind convention, or decision,
note (a pitfall), preference or fact when its text or its section says so;
titled and tagged by the headings above it; with the file as provenance
(its path in its git repository) and a defined_in link to its lines
('memmesh impact CLAUDE.md' lists them). Secrets are removed first. The
file's memmesh block ('memmesh export --to') is left out.

Importing the file again keeps the memories in step with it: an unchanged
item is skipped (its link follows it when lines moved), an edited item
updates its memory (found in its section by the words they share), a new
one is created, and a memory whose item left the file is reported, and
archived with --archive-removed. --dry-run tells what it would do. A file
over 1 MiB, with more than 1000 items or an item over 16 KiB, or that is
not UTF-8 text, is refused whole, naming the line.`,
		Example: `  memmesh export --out backup.jsonl && memmesh import backup.jsonl
  gunzip -c backup.jsonl.gz | memmesh import -
  memmesh import --from server-memory "$MEMORY_FILE_PATH"
  memmesh import --from server-memory --ns team-graph memory.jsonl
  memmesh import --from claude-md CLAUDE.md
  memmesh import --from agents-md AGENTS.md --ns backend --dry-run
  memmesh import --from cursorrules .cursor/rules/react.mdc
  memmesh import --from copilot .github/copilot-instructions.md --archive-removed`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if format, ok := agentFileFormat(from, agentfiles.Formats); ok {
				if argv[0] == "-" {
					return usagef("--from %s reads a file, not standard input: the file is the memories' provenance", from)
				}
				return a.importAgentFile(cmd.Context(), format, argv[0], ns, archive, dryRun)
			}
			switch {
			case from != "" && from != "server-memory":
				return usagef("--from %q: use server-memory, claude-md, agents-md, cursorrules or copilot, or leave it out for a memmesh export", from)
			case from == "" && cmd.Flags().Changed("ns"):
				return usagef("--ns goes with --from (an export keeps its namespaces)")
			case cmd.Flags().Changed("archive-removed") || cmd.Flags().Changed("dry-run"):
				return usagef("--archive-removed and --dry-run go with --from claude-md, agents-md, cursorrules or copilot")
			}
			var r io.Reader = a.stdin
			var file *os.File
			if argv[0] != "-" {
				f, err := os.Open(argv[0])
				if err != nil {
					return err
				}
				defer f.Close()
				r, file = f, f
			}
			if from == "server-memory" {
				return a.importServerMemory(cmd.Context(), r, ns)
			}
			return a.importExport(cmd.Context(), argv[0], r, file)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "format of FILE: server-memory (the official MCP memory server's memory.jsonl), claude-md, agents-md, cursorrules or copilot (default: a memmesh export)")
	cmd.Flags().StringVar(&ns, "ns", "", "with --from: the namespace that receives it (default: "+servermemory.DefaultNamespace+" for server-memory, else the namespace of FILE's directory)")
	cmd.Flags().BoolVar(&archive, "archive-removed", false, "with an agent file: archive the memories whose item left the file")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "with an agent file: say what the import would do, change nothing")
	return cmd
}

// importExport imports an export file: checked whole first when it is a
// file, then sent line by line, with progress on a terminal. The first
// Ctrl-C stops sending at the end of a line, so that the daemon stores
// what it received and says so; a second one aborts.
func (a *app) importExport(ctx context.Context, name string, r io.Reader, file *os.File) error {
	total := 0
	if file != nil && isRegular(file) {
		check, err := node.CheckImport(bufio.NewReader(file))
		if err != nil {
			return fmt.Errorf("%s: %w; nothing was imported", name, err)
		}
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		total = check.Lines
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	lines := &lineReader{r: bufio.NewReaderSize(r, 1<<20)}
	abort, cancel := context.WithCancel(ctx)
	defer cancel()
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	go func() {
		for range interrupts {
			if lines.stop.Swap(true) {
				cancel() // the second Ctrl-C
			}
		}
	}()
	stopProgress := a.progress(inert.Text(name), lines, total)
	res, err := c.Import(abort, lines)
	stopProgress()
	sent := lines.count.Load()
	switch {
	case err != nil:
		return fmt.Errorf("the import of %s stopped after line %d%s: %w; run the same command again to finish (what was imported is skipped)", name, sent, ofTotal(total), err)
	case lines.stop.Load():
		printImport(a.stdout, res)
		return fmt.Errorf("interrupted after line %d%s, with what came before it imported; run the same command again to finish", sent, ofTotal(total))
	}
	return a.emit(res, func(w io.Writer) { printImport(w, res) }, func(w io.Writer) { fmt.Fprintln(w, res.Imported) })
}

func printImport(w io.Writer, res api.ImportResult) {
	fmt.Fprintf(w, "Imported %s (%d already here), %s (%d already here or at a memory that is not), %s (%d kept as they were) and %s.\n",
		importCount(res.Imported, "memory", "memories"), res.Skipped, importCount(res.Edges, "edge", "edges"), res.EdgesSkipped,
		importCount(res.Namespaces, "namespace setting", "namespace settings"), res.NamespacesKept, importCount(res.Purged, "purge", "purges"))
	if res.Erased > 0 {
		fmt.Fprintf(w, "Left out %s that were purged here: a purge is for good.\n", importCount(res.Erased, "memory", "memories"))
	}
}

func ofTotal(total int) string {
	if total == 0 {
		return ""
	}
	return fmt.Sprintf(" of %d", total)
}

func isRegular(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}

// lineReader passes its input through whole lines at a time, counts them,
// and ends (io.EOF) at a line boundary once stop is set.
type lineReader struct {
	r     *bufio.Reader
	buf   []byte
	stop  atomic.Bool
	count atomic.Int64
}

func (l *lineReader) Read(p []byte) (int, error) {
	if len(l.buf) == 0 {
		if l.stop.Load() {
			return 0, io.EOF
		}
		line, err := l.r.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		l.buf = line
		l.count.Add(1)
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

// progress shows, on a terminal, how many lines of total have gone to the
// daemon, until the returned function is called.
func (a *app) progress(name string, lines *lineReader, total int) (stop func()) {
	f, ok := a.stderrTerminal()
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			sent := lines.count.Load()
			if total > 0 {
				fmt.Fprintf(f, "\rImporting %s: line %d of %d (%d%%)", name, sent, total, 100*sent/int64(total))
			} else {
				fmt.Fprintf(f, "\rImporting %s: line %d", name, sent)
			}
			select {
			case <-done:
				fmt.Fprintln(f)
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
