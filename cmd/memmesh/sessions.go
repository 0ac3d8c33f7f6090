package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/projmap"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/transcript"
	"github.com/memmesh/memmesh/web"
)

func (a *app) sessionsCommand() *cobra.Command {
	var (
		req          api.SessionsRequest
		since, until string
	)
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List agents' sessions on every machine",
		Long: `List the sessions of coding agents (Claude Code, Codex, Gemini CLI, ...) that
memmesh read on any machine of the mesh, newest first: client, project and
namespace, machine, start and end, turns, files changed, commands run.

A session's turns stay on the machine that ran it ('sessions show' prints them
there); its summary, a memory of kind session, travels with its namespace, so
every machine lists every machine's sessions.`,
		Example: `  memmesh sessions
  memmesh sessions --since 1d --client claude-code
  memmesh sessions show 5f1c2b7e
  memmesh sessions search "clock skew" --scope errors`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var err error
			if req.Since, req.Until, err = sessionWindow(since, until); err != nil {
				return err
			}
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) ([]api.Session, error) { return c.Sessions(ctx, req) })
			if err != nil {
				return err
			}
			return emitList(a, "sessions", res, func(w io.Writer) {
				printTable(w, res, "No sessions yet: memmesh reads agents' transcripts as they are written.",
					"SESSION\tCLIENT\tNAMESPACE\tMACHINE\tENDED\tTURNS\tFILES\tTITLE", func(s api.Session) []any {
						return []any{shortSession(s.ID), s.Client, s.Namespace, machine(s), when(s.End), s.Turns, len(s.FilesChanged), snippet(strings.TrimPrefix(s.Title, "Session: "), 50)}
					})
			}, func(s api.Session) string { return s.ID + "  " + snippet(s.Title, 70) })
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&req.Namespace, "ns", "", "only sessions of this namespace")
	fs.StringVar(&req.Client, "client", "", "only sessions of this client (claude-code, codex, gemini, opencode, cline, continue, aider)")
	fs.StringVar(&req.Device, "device", "", "only sessions of this machine (device id or name)")
	fs.StringVar(&since, "since", "", "only sessions active since this date (2026-01-31, RFC 3339) or this long ago (7d, 36h)")
	fs.StringVar(&until, "until", "", "only sessions active before this date or this long ago")
	intRangeVar(fs, &req.Limit, "limit", 50, 1, api.MaxSessionList, fmt.Sprintf("most sessions listed (1-%d)", api.MaxSessionList))
	cmd.AddCommand(a.sessionShowCommand(), a.sessionSearchCommand(), a.sessionIngestCommand())
	return cmd
}

func (a *app) sessionShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Print one session, with its turns when they are on this machine",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			d, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.SessionDetail, error) { return c.Session(ctx, argv[0]) })
			if err != nil {
				return err
			}
			return a.emit(d, func(w io.Writer) { printSession(w, d) }, func(w io.Writer) {
				fmt.Fprintf(w, "%s  %s\n", d.ID, d.Title)
			})
		},
	}
}

func (a *app) sessionSearchCommand() *cobra.Command {
	var (
		req          api.SessionSearchRequest
		since, until string
	)
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the turns of this machine's sessions",
		Long: `Find the turns of this machine's sessions that hold every word of QUERY,
latest first. --scope narrows the turns searched: prompts (what the person
asked), commands (shell commands run), files (turns that read or changed
files), errors (tool calls that failed), decisions (turns that state one).
With a scope, QUERY may be empty.`,
		Example: `  memmesh sessions search "migration failed" --scope errors
  memmesh sessions search "" --scope commands --ns app`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(argv) == 1 {
				req.Query = argv[0]
			}
			var err error
			if req.Since, req.Until, err = sessionWindow(since, until); err != nil {
				return err
			}
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) ([]api.SessionHit, error) { return c.SearchSessions(ctx, req) })
			if err != nil {
				return err
			}
			return emitList(a, "turns", res, func(w io.Writer) {
				if len(res) == 0 {
					fmt.Fprintln(w, "No turn matches.")
				}
				for _, h := range res {
					fmt.Fprintf(w, "%s #%d  %s  %s\n", shortSession(h.Session), h.Turn.Index, h.Client, h.Namespace)
					fmt.Fprintf(w, "%s\n\n", indent(turnText(h.Turn, 400)))
				}
			}, func(h api.SessionHit) string {
				return fmt.Sprintf("%s #%d %s", h.Session, h.Turn.Index, snippet(turnText(h.Turn, 100), 100))
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&req.Scope, "scope", "", "turns searched: prompts, commands, files, errors or decisions (default all)")
	fs.StringVar(&req.Namespace, "ns", "", "only sessions of this namespace")
	fs.StringVar(&req.Client, "client", "", "only sessions of this client")
	fs.StringVar(&since, "since", "", "only sessions active since this date or this long ago (7d)")
	fs.StringVar(&until, "until", "", "only sessions active before this date or this long ago")
	intRangeVar(fs, &req.Limit, "limit", 20, 1, api.MaxSessionHits, fmt.Sprintf("most turns (1-%d)", api.MaxSessionHits))
	return cmd
}

func (a *app) sessionIngestCommand() *cobra.Command {
	var (
		req  api.IngestRequest
		hook bool
	)
	cmd := &cobra.Command{
		Use:   "ingest [TRANSCRIPT]",
		Short: "Read agents' transcripts now",
		Long: `Read what is new in agents' transcripts: every transcript the daemon finds
(Claude Code, Codex, Gemini CLI, OpenCode, Cline, Continue, and Aider under
[sessions] roots) when none is named, or the
one named (with --client). The daemon also reads them on its own every
minute ('[sessions]' in config.toml: interval, off).

With --hook it answers a client's hook (PreCompact, SessionEnd, Stop): it
reads the hook's JSON on standard input (transcript_path), asks the daemon
to read that transcript in the background and returns at once; on any
error it says why on standard error and still succeeds, so that it never
fails a session. 'memmesh hooks install' sets it up.`,
		Example: `  memmesh sessions ingest
  memmesh sessions ingest --client codex ~/.codex/sessions/2026/11/21/rollout-....jsonl`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if hook {
				a.ingestHook(cmd, req.Client)
				return nil
			}
			if len(argv) == 1 {
				if req.Client == "" {
					return usageError{errors.New("name the transcript's client with --client (claude-code, codex, gemini, opencode, cline, continue or aider)")}
				}
				path, err := filepath.Abs(argv[0])
				if err != nil {
					return err
				}
				req.Path = path
			}
			req.Wait = true
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) ([]api.IngestReport, error) { return c.Ingest(ctx, req) })
			if err != nil {
				return err
			}
			return emitList(a, "transcripts", res, func(w io.Writer) {
				printTable(w, res, "Nothing new in any transcript.", "CLIENT\tSESSION\tNEW TURNS\tSKIPPED\tPATH", func(r api.IngestReport) []any {
					return []any{r.Client, shortSession(r.Session), r.Turns, r.Warnings, r.Path}
				})
			}, func(r api.IngestReport) string { return fmt.Sprintf("%s %s +%d", r.Client, r.Path, r.Turns) })
		},
	}
	cmd.Flags().StringVar(&req.Client, "client", "", "the transcript's client: claude-code, codex, gemini, opencode, cline, continue or aider")
	cmd.Flags().BoolVar(&hook, "hook", false, "answer a client's hook whose JSON is on standard input; never fails")
	return cmd
}

// ingestHook asks the daemon to read the transcript a hook names, within
// the hook's time; it only ever says on standard error what went wrong.
func (a *app) ingestHook(cmd *cobra.Command, client string) {
	in, _ := readHookInput(cmd.InOrStdin())
	if in.TranscriptPath == "" || client == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "memmesh: the hook gave no transcript_path, or --client is missing; nothing read")
		return
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), hookIngestWait)
	defer cancel()
	req := api.IngestRequest{Client: client, Path: in.TranscriptPath}
	if _, err := call(ctx, a, func(c *web.Client, ctx context.Context) ([]api.IngestReport, error) { return c.Ingest(ctx, req) }); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "memmesh: transcript not read now (the daemon reads it on its next scan): %v\n", err)
	}
}

// hookIngestWait bounds the hook's call to the daemon, which only queues
// the read.
const hookIngestWait = 150 * time.Millisecond

// printSession shows a session's metadata, then its turns.
func printSession(w io.Writer, d api.SessionDetail) {
	fmt.Fprintf(w, "%s  %s\n", d.ID, d.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "  %s\t%s\n", k, v)
		}
	}
	row("client", d.Client)
	row("project", d.Project)
	row("namespace", d.Namespace)
	row("machine", machine(d.Session))
	row("started", when(d.Start))
	row("ended", when(d.End))
	row("turns", fmt.Sprint(d.Turns))
	row("files changed", strings.Join(d.FilesChanged, ", "))
	row("commands", strings.Join(d.Commands, " ; "))
	if d.Failures > 0 {
		row("failed calls", fmt.Sprint(d.Failures))
	}
	row("summary", d.SummaryID)
	tw.Flush()
	if !d.Local {
		fmt.Fprintf(w, "\n%s\n\nIts turns are on %s.\n", indent(d.Summary), machine(d.Session))
		return
	}
	for _, h := range d.Handoffs {
		fmt.Fprintf(w, "\nHandoff %s  %s\n", h.ID, snippet(h.Title, 70))
	}
	if len(d.Lessons) > 0 {
		fmt.Fprintln(w, "\nLearned from it:")
		for _, l := range d.Lessons {
			verb := "new"
			if l.Repeat {
				verb = "repeats"
			}
			fmt.Fprintf(w, "  %s  %-10s %s (%s, turns %s, %s)\n", l.ID, l.Kind, snippet(l.Title, 60), l.Rule, joinInts(l.Turns), verb)
		}
	}
	for _, t := range d.Transcript {
		fmt.Fprintf(w, "\n#%d %s", t.Index, t.Role)
		if t.Tool != "" {
			fmt.Fprintf(w, " (%s)", t.Tool)
		}
		if t.Failed {
			fmt.Fprint(w, " FAILED")
		}
		if !t.Time.IsZero() {
			fmt.Fprintf(w, "  %s", t.Time.Format("15:04:05"))
		}
		fmt.Fprintf(w, "\n%s\n", indent(turnText(t, 2000)))
	}
}

// turnText is what a turn says, ran or touched, cut to n characters.
func turnText(t api.SessionTurn, n int) string {
	var parts []string
	if t.Command != "" {
		parts = append(parts, "$ "+t.Command)
	}
	if len(t.Files) > 0 {
		verb := "read"
		if t.Changed {
			verb = "changed"
		}
		parts = append(parts, verb+" "+strings.Join(t.Files, ", "))
	}
	if t.Text != "" {
		text := t.Text
		if r := []rune(text); len(r) > n {
			text = string(r[:n-1]) + "…"
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "\n")
}

func shortSession(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func machine(s api.Session) string {
	if s.DeviceName != "" {
		return s.DeviceName
	}
	return shortDevice(s.Device)
}

// transcriptReaders are the clients whose transcripts memmesh reads;
// Aider's histories, and Gemini CLI's projects, are looked for under
// roots (a leading ~ is userHome).
func transcriptReaders(userHome string, roots []string) []transcript.Adapter {
	var abs []string
	for _, r := range roots {
		if rest, ok := strings.CutPrefix(r, "~"); ok && (rest == "" || rest[0] == '/') {
			r = userHome + rest
		}
		abs = append(abs, r)
	}
	return transcript.Adapters(transcript.Config{Roots: abs})
}

// sessionsConfig is the daemon's reading of transcripts: under the user's
// home, every interval, each session in the namespace its project
// directory uses (as the CLI run there would).
func sessionsConfig(home string, cfg Config, interval time.Duration) *node.SessionsConfig {
	userHome, _ := os.UserHomeDir()
	return &node.SessionsConfig{
		Readers:  transcriptReaders(userHome, cfg.Sessions.Roots),
		Home:     userHome,
		Interval: interval,
		Namespace: func(project string) string {
			return projectNamespace(home, cfg.Namespace, project)
		},
	}
}

// projectNamespace is the namespace of the project directory dir: its
// mapping ('memmesh map'), else its .memmesh.toml's, else fallback.
func projectNamespace(home, fallback, dir string) string {
	if dir == "" || !filepath.IsAbs(dir) {
		return fallback
	}
	if maps, err := projmap.Load(home); err == nil {
		if ns := dirNamespace(context.Background(), maps, dir); ns != "" {
			return ns
		}
	}
	if p := findUp(dir, projectConfigFile); p != "" {
		var c Config
		if mergeConfigFile(&c, p) == nil && c.Namespace != "" {
			return c.Namespace
		}
	}
	return fallback
}

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

// sessionWindow reads the --since and --until of the sessions commands.
func sessionWindow(since, until string) (from, to time.Time, err error) {
	if from, err = parseWhen("--since", since); err != nil {
		return from, to, err
	}
	to, err = parseWhen("--until", until)
	return from, to, err
}
