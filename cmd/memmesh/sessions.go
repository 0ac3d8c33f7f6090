package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
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
			if req.Since, err = parseWhen("--since", since); err != nil {
				return err
			}
			if req.Until, err = parseWhen("--until", until); err != nil {
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
	cmd.AddCommand(a.sessionShowCommand(), a.sessionSearchCommand())
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
			if req.Since, err = parseWhen("--since", since); err != nil {
				return err
			}
			if req.Until, err = parseWhen("--until", until); err != nil {
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
