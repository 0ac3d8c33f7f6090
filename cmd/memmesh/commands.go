package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/web"
)

func (a *app) serveCommand() *cobra.Command {
	var httpAddr string
	var mesh meshFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the memmesh node in the foreground",
		Long: `Run the memmesh node in the foreground until interrupted (Ctrl-C, SIGTERM)
or 'memmesh stop'. Other commands start it in the background when needed
(with the settings of the config file and the environment).

It joins the mesh of your other machines over QUIC on UDP (--listen, default
:7420; 'memmesh invite' and 'memmesh join' connect them). When the default
port is taken, for example by the daemon of another home, it runs without the
mesh; an address given with --listen, MEMMESH_LISTEN or the config's listen
must be free.

It also serves MCP over streamable HTTP at http://ADDR/mcp, for clients on this
machine only, with the bearer token that 'memmesh http-token' prints, and the
web dashboard beside it at http://ADDR/ ('memmesh ui' opens it; [ui] enabled =
false in config.toml turns it off). ADDR is a loopback address: --http,
MEMMESH_HTTP or the config's http (http = "127.0.0.1:7431" in config.toml, so
that two homes on one machine need no flags), default 127.0.0.1:7421. When the
default port is taken it runs without HTTP; an address that was asked for must
be free.`,
		Example: `  memmesh serve
  memmesh serve --listen :7430 --name laptop
  memmesh serve --listen 10.0.0.5:7420 --join 10.0.0.6:7420
  memmesh serve --no-mesh --http ""`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h := resolveHTTP(cmd, httpAddr, a.cfg)
			mc, err := mesh.resolve(cmd, a.cfg)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), a.home, a.cfg, h, mc, a.logger())
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http", defaultHTTPAddr, `loopback address of MCP over HTTP and the dashboard (env MEMMESH_HTTP, config http; "" turns them off)`)
	mesh.register(cmd)
	return cmd
}

func (a *app) stopCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop the home's running daemon cleanly",
		Long: `Stop the home's running daemon cleanly, and wait until it has stopped, as
long as it shows signs of life (up to 30 minutes: finishing requests, closing
the search index and the store), saying on a terminal what it waits for. A daemon that shows no sign of life for the client timeout (10 s; the
environment variable MEMMESH_CLIENT_TIMEOUT changes it) is reported: if it
had not accepted the request, the request lapses and it keeps running; if it
had, it is still stopping, and stops when it goes on.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			stopped, err := stopDaemon(cmd.Context(), a.home, a.status)
			if err != nil {
				return err
			}
			res := map[string]bool{"stopped": stopped}
			return a.emit(res, func(w io.Writer) {
				if stopped {
					fmt.Fprintln(w, "memmesh stopped.")
				} else {
					fmt.Fprintln(w, "memmesh was not running.")
				}
			}, func(w io.Writer) { fmt.Fprintln(w, stopped) })
		},
	}
}

func (a *app) captureCommand() *cobra.Command {
	var req api.RememberRequest
	var file, tier string
	var confidence float64
	cmd := &cobra.Command{
		Use:   "capture [TEXT]",
		Short: "Remember something",
		Long: `Remember something: from the arguments, from --file, or from standard input.
Secrets (API keys, tokens, private keys, passwords, <private>...</private>) are
removed before anything is stored. Capturing the same text twice in a namespace
returns the existing memory; close matches are reported as similar.`,
		Example: `  memmesh capture "Use pgx, not lib/pq: lib/pq is in maintenance mode" --kind decision --tag db
  git log -1 --format=%B | memmesh capture --ns myproject --title "Last commit"
  memmesh capture --file notes/auth.md --tag auth`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			content, err := a.readContent(argv, file)
			if err != nil {
				return err
			}
			req.Content = content
			req.Tier = model.Tier(tier)
			if cmd.Flags().Changed("confidence") {
				req.Confidence = &confidence
			}
			if req.Namespace == "" {
				req.Namespace = a.cfg.Namespace
			}
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			res, err := c.Remember(cmd.Context(), req)
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				if res.DuplicateOf != "" {
					fmt.Fprintf(w, "Already remembered as %s (same content in this namespace).\n", res.ShortID)
				} else {
					fmt.Fprintf(w, "Remembered %s\n", res.ShortID)
				}
				if len(res.Redacted) > 0 {
					fmt.Fprintf(w, "Removed secrets before storing: %s\n", strings.Join(res.Redacted, ", "))
				}
				for _, s := range res.Similar {
					fmt.Fprintf(w, "Similar: %s  %s (%.0f%% alike)\n", s.ShortID, s.Title, 100*s.Similarity)
				}
			}, func(w io.Writer) { fmt.Fprintln(w, res.ShortID) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Namespace, "ns", "", "namespace (project or topic); default from config, else \"default\"")
	f.StringVar(&req.Title, "title", "", "title (default: the first line of the text)")
	f.StringArrayVar(&req.Tags, "tag", nil, "tag (repeatable)")
	f.StringVar(&req.Kind, "kind", "", "kind: note, decision, convention, bug, fact, task, preference, ... (default note)")
	f.StringVar(&tier, "tier", string(model.TierHuman), "trust tier: human, agent or auto")
	unitVar(f, &confidence, "confidence", 0, "confidence from 0 to 1 (default by tier)")
	ttlVar(f, &req.TTL, "ttl", "time to live, e.g. 30d, 2w, 36h or none (default by tier: human none, agent 90d, auto 30d)")
	f.BoolVar(&req.Evergreen, "evergreen", false, "never expires and never goes stale")
	f.StringVar(&file, "file", "", "read the text from this file ('-' for standard input)")
	f.StringVar(&req.Agent, "agent", "", "the agent (client) that writes it, recorded in its provenance and first revision")
	return cmd
}

// readContent takes the text to capture from arguments, a file or stdin,
// and refuses, before anything is sent, what no memory holds: more than
// the content limit (with the input's true size), and binary content or
// bytes that are not UTF-8, which would reach the daemon as U+FFFD.
func (a *app) readContent(argv []string, file string) (string, error) {
	switch {
	case len(argv) > 0 && file != "":
		return "", usagef("give the text as arguments or with --file, not both")
	case len(argv) > 0:
		return checkedText("the text given", strings.Join(argv, " "))
	case file != "" && file != "-":
		return readTextFile(file)
	}
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) && file != "-" {
		return "", usagef("nothing to capture: give the text as an argument, with --file, or on standard input")
	}
	data, err := readBounded("standard input", a.stdin)
	if err != nil {
		return "", err
	}
	return checkedText("standard input", string(data))
}

// readTextFile reads a file to capture: one over the content limit is
// refused by its size, unread.
func readTextFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > api.MaxContentBytes {
		return "", tooLarge(path, st.Size(), false)
	}
	data, err := readBounded(path, f)
	if err != nil {
		return "", err
	}
	return checkedText(path, string(data))
}

// maxCounted bounds what readBounded reads past the content limit to say
// how large an input is: a stream may not end.
const maxCounted = 64 << 20

// readBounded reads r, what of it a memory can hold; past the content
// limit it reads on (up to maxCounted) only to count, and fails with the
// input's size.
func readBounded(what string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, api.MaxContentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if len(data) <= api.MaxContentBytes {
		return data, nil
	}
	rest, err := io.CopyN(io.Discard, r, maxCounted)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return nil, tooLarge(what, int64(len(data))+rest, err == nil)
}

// tooLarge is the error for an input of size bytes (or more, when more
// is set: it was not read to its end) that no memory can hold.
func tooLarge(what string, size int64, more bool) error {
	is := "is"
	if more {
		is = "is at least"
	}
	return api.Invalidf("%s %s %.1f MiB (%d bytes): a memory holds at most 1 MiB (%d bytes); split it into several memories",
		what, is, float64(size)/(1<<20), size, api.MaxContentBytes)
}

// checkedText returns text unless it is binary or not UTF-8 (api.CheckText).
func checkedText(what, text string) (string, error) {
	if err := api.CheckText(text); err != nil {
		return "", api.Invalidf("%s is %v: memmesh stores text only", what, err)
	}
	return text, nil
}

// filterFlags are the filters that search and list share.
type filterFlags struct {
	ns           string
	allNS        bool
	tags         []string
	kind         string
	statuses     []string
	tiers        []string
	device       string
	since, until string
	limit        int
}

func (f *filterFlags) register(cmd *cobra.Command, verb string, limit int) {
	fs := cmd.Flags()
	fs.StringVar(&f.ns, "ns", "", "namespace to "+verb+" (default from config)")
	fs.BoolVar(&f.allNS, "all-ns", false, verb+" every namespace")
	fs.StringArrayVar(&f.tags, "tag", nil, "only memories with this tag (repeatable: all must match)")
	fs.StringVar(&f.kind, "kind", "", "only memories of this kind")
	fs.StringArrayVar(&f.statuses, "status", nil, "only memories with this status (repeatable; default active and stale)")
	fs.StringArrayVar(&f.tiers, "tier", nil, "only memories of this trust tier: human, agent or auto (repeatable)")
	fs.StringVar(&f.device, "device", "", "only memories this device wrote or revised: a device id, a unique prefix of one, or its name")
	fs.StringVar(&f.since, "since", "", "only memories updated since this date (2026-01-31, RFC 3339) or this long ago (7d, 36h)")
	fs.StringVar(&f.until, "until", "", "only memories updated before this date or this long ago")
	intRangeVar(fs, &f.limit, "limit", limit, 1, 1000, "most results (1-1000)")
}

// filter is what the flags select.
type filter struct {
	namespace    string
	statuses     []model.Status
	tiers        []model.Tier
	since, until time.Time
}

// resolve turns the flags into a filter: the namespace is the flag, else
// none with --all-ns, else the configured default.
func (f *filterFlags) resolve(cmd *cobra.Command, cfg Config) (filter, error) {
	out := filter{namespace: cfg.Namespace}
	if cmd.Flags().Changed("ns") || f.allNS {
		out.namespace = f.ns
	}
	for _, s := range f.statuses {
		out.statuses = append(out.statuses, model.Status(s))
	}
	for _, t := range f.tiers {
		out.tiers = append(out.tiers, model.Tier(t))
	}
	var err error
	if out.since, err = parseWhen("--since", f.since); err != nil {
		return out, err
	}
	if out.until, err = parseWhen("--until", f.until); err != nil {
		return out, err
	}
	return out, nil
}

// parseWhen reads a date, an RFC 3339 time, or an age such as 7d; "" is
// the zero time.
func parseWhen(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if age, err := api.ParseTTL(s); err == nil && age > 0 {
		return time.Now().Add(-age), nil
	}
	return time.Time{}, usagef("%s %q: use a date (2026-01-31), an RFC 3339 time or an age (7d, 36h)", flag, s)
}

func (a *app) searchCommand() *cobra.Command {
	var filters filterFlags
	var explain, noGraph bool
	var budget int
	cmd := &cobra.Command{
		Use:     "search QUERY",
		Aliases: []string{"recall"},
		Short:   "Search memories",
		Long: `Search memories by words (ranked by BM25, trust, confidence, recency,
staleness and how often this machine read each memory). "Quoted words" must
appear as a phrase. When nothing matches exactly, close spellings are tried;
when the words find too few memories, so are the words their best matches
share. The best matches lend part of their score to the memories linked to
them and to their neighbours in their session (--explain shows how;
--no-graph turns it off). Matches come first; a memory that does not match
and was pulled in through a link is listed under Related, with the link.
With an embedder set ('memmesh embed --help'), memories near the query's
meaning are fused with the matches of its words, and say how near they
are. Each result says when it is stale, superseded or
contradicted. --budget
bounds the tokens of the answer (as JSON): long memories shrink to excerpts
and the weakest results are left out.`,
		Example: `  memmesh search "connection pool" postgres
  memmesh recall auth --ns myproject --tag security --limit 5 --budget 2000`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			f, err := filters.resolve(cmd, a.cfg)
			if err != nil {
				return err
			}
			req := api.SearchRequest{
				Query:     strings.Join(argv, " "),
				Namespace: f.namespace, Tags: filters.tags, Kind: filters.kind, Device: filters.device,
				Statuses: f.statuses, Tiers: f.tiers, Since: f.since, Until: f.until,
				Limit: filters.limit, Explain: explain, NoGraph: noGraph, Budget: budget,
			}
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			res, err := c.Search(cmd.Context(), req)
			if err != nil {
				return err
			}
			if req.Namespace != "" {
				defer a.hintIfEmpty(cmd.Context(), req.Namespace, len(res.Results) == 0)
			}
			return a.emit(res, func(w io.Writer) { printSearch(w, req, res) }, func(w io.Writer) {
				for _, h := range res.Results {
					fmt.Fprintf(w, "%s\t%s\n", h.ShortID, h.Title)
				}
			})
		},
	}
	filters.register(cmd, "search", 10)
	cmd.Flags().BoolVar(&explain, "explain", false, "show how each score was made")
	cmd.Flags().BoolVar(&noGraph, "no-graph", false, "rank text matches only, without the memories linked to the best ones")
	intRangeVar(cmd.Flags(), &budget, "budget", 0, api.MinSearchBudget, api.MaxSearchBudget, fmt.Sprintf("most tokens to answer with, as JSON (%d to %d; default: no bound)", api.MinSearchBudget, api.MaxSearchBudget))
	return cmd
}

// printSearch shows the matches of a search, then the related memories,
// each with its labels.
func printSearch(w io.Writer, req api.SearchRequest, res api.SearchResult) {
	related := slices.IndexFunc(res.Results, func(h api.SearchHit) bool { return h.Related != "" })
	if related < 0 {
		related = len(res.Results)
	}
	if related == 0 && res.Total > 0 {
		fmt.Fprintf(w, "%d memories match %q in namespace %s; none fits in %d tokens.\n", res.Total, req.Query, orAll(req.Namespace), req.Budget)
		return
	}
	if len(res.Results) == 0 {
		fmt.Fprintf(w, "No memories match %q in namespace %s.\n", req.Query, orAll(req.Namespace))
		return
	}
	if res.Fuzzy {
		fmt.Fprintln(w, "No exact matches; showing close spellings.")
	}
	if res.Loose {
		fmt.Fprintln(w, "No memory holds the quoted words as written; showing matches of the words.")
	}
	fmt.Fprintf(w, "%d of %d matches for %q in namespace %s", related, res.Total, req.Query, orAll(req.Namespace))
	if n := len(res.Results) - related; n > 0 {
		fmt.Fprintf(w, ", and %d related", n)
	}
	fmt.Fprintln(w, ":")
	for i, h := range res.Results {
		if i == related {
			fmt.Fprintln(w, "Related:")
		}
		fmt.Fprintf(w, "%d. %s  %s\n   %s · %s · score %.2f", i+1, h.ShortID, h.Title, h.Namespace, h.Kind, h.Score)
		if h.Related != "" {
			fmt.Fprintf(w, " · %s", h.Related)
		}
		if h.Semantic > 0 {
			fmt.Fprintf(w, " · near by meaning (cosine %.2f)", h.Semantic)
		}
		fmt.Fprintln(w)
		for _, l := range h.Labels {
			fmt.Fprintf(w, "   [%s]\n", l)
		}
		fmt.Fprintf(w, "   %s\n", snippet(node.Snippet(h.Content, req.Query, 200), 160))
		if h.Explain != nil {
			e := h.Explain
			fmt.Fprintf(w, "   bm25 %.3f × confidence %.2f × tier %.2f × recency %.2f × status %.2f × maturity %.2f (%s)\n", e.BM25, e.Confidence, e.Tier, e.Recency, e.Status, e.Maturity, e.Match)
		}
		if h.Fusion != nil {
			fmt.Fprintf(w, "   %s\n", h.Fusion)
		}
	}
}

func orAll(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}

// orDefault names the namespace a command looked at: ns, or the default.
func orDefault(ns string) string {
	if ns == "" {
		return api.DefaultNamespace
	}
	return ns
}

func (a *app) showCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one memory in full",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			m, err := c.Get(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			return a.emit(m, func(w io.Writer) { printMemory(w, m) }, func(w io.Writer) { fmt.Fprintln(w, m.Content) })
		},
	}
}

func (a *app) listCommand() *cobra.Command {
	var filters filterFlags
	var cursor string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List memories, most recently updated first",
		Long: `List memories, most recently updated first (and among those updated in the
same millisecond, by id). A full page ends with the cursor of the next one:
the same command with --cursor continues where it ended, skipping and
repeating nothing ("next" in --json).`,
		Example: `  memmesh list --ns backend --device laptop --limit 100
  memmesh list --ns backend --limit 100 --cursor MTc2NDE0...`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := filters.resolve(cmd, a.cfg)
			if err != nil {
				return err
			}
			req := api.ListRequest{
				Namespace: f.namespace, Tags: filters.tags, Kind: filters.kind, Device: filters.device,
				Statuses: f.statuses, Tiers: f.tiers, Since: f.since, Until: f.until,
				Limit: filters.limit, Cursor: cursor,
			}
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			page, err := c.ListPage(cmd.Context(), req)
			if err != nil {
				return err
			}
			if page.Memories == nil {
				page.Memories = []api.Memory{}
			}
			if req.Namespace != "" {
				defer a.hintIfEmpty(cmd.Context(), req.Namespace, len(page.Memories) == 0)
			}
			return a.emit(page, func(w io.Writer) {
				printList(w, page.Memories)
				if page.Next != "" {
					fmt.Fprintf(w, "More: the same command with --cursor %s\n", page.Next)
				}
			}, func(w io.Writer) { printBriefList(w, page.Memories) })
		},
	}
	filters.register(cmd, "list", 50)
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue a list where the page that printed this cursor ended")
	return cmd
}

func (a *app) updateCommand() *cobra.Command {
	var req api.UpdateRequest
	var title, content, file, ns, kind, tier, status, ttl string
	var confidence float64
	var evergreen bool
	cmd := &cobra.Command{
		Use:   "update ID",
		Short: "Change a memory",
		Long: `Change a memory's fields. New content is added as a revision: the history is
kept, and an update resolves a sync conflict.

Moving a memory (--ns) out of a local-only namespace into one that syncs makes
a new memory with a new id, whose history starts at the move, and purges the
old one: no revision written while it was private leaves this machine.

--confirm records that you checked the memory and it still holds (when, and
who: --by, default your user name): the git staleness 'memmesh stale' shows
for it clears until the files it names change again.`,
		Example: `  memmesh update m-k3j5x2ab --tag-add db --kind decision
  memmesh update m-k3j5x2ab --content "Use pgx v5" 
  memmesh update m-k3j5x2ab --status active
  memmesh update m-k3j5x2ab --confirm`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			f := cmd.Flags()
			set := func(name string, v *string) *string {
				if f.Changed(name) {
					return v
				}
				return nil
			}
			req.Title, req.Namespace, req.Kind, req.TTL = set("title", &title), set("ns", &ns), set("kind", &kind), set("ttl", &ttl)
			req.Content = set("content", &content)
			if f.Changed("file") {
				if req.Content != nil {
					return usagef("give new content with --content or --file, not both")
				}
				data, err := a.readContent(nil, file)
				if err != nil {
					return err
				}
				req.Content = &data
			}
			if f.Changed("tier") {
				t := model.Tier(tier)
				req.Tier = &t
			}
			if f.Changed("status") {
				s := model.Status(status)
				req.Status = &s
			}
			if f.Changed("confidence") {
				req.Confidence = &confidence
			}
			if f.Changed("evergreen") {
				req.Evergreen = &evergreen
			}
			if req.Confirm && req.ConfirmedBy == "" {
				req.ConfirmedBy = os.Getenv("USER")
			}
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			m, err := c.Update(cmd.Context(), argv[0], req)
			if err != nil {
				return err
			}
			return a.emit(m, func(w io.Writer) {
				if m.Replaces != "" {
					fmt.Fprintf(w, "Moved to %s as a new memory %s: %s (in a local-only namespace) is purged, and its history stays off the mesh\n", m.Namespace, m.ShortID, m.Replaces)
					return
				}
				fmt.Fprintf(w, "Updated %s\n", m.ShortID)
			}, func(w io.Writer) { fmt.Fprintln(w, m.ShortID) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&title, "title", "", "new title")
	f.StringVar(&content, "content", "", "new content (added as a revision)")
	f.StringVar(&file, "file", "", "read new content from this file ('-' for standard input)")
	f.StringVar(&ns, "ns", "", "move to this namespace")
	f.StringVar(&kind, "kind", "", "new kind")
	f.StringArrayVar(&req.AddTags, "tag-add", nil, "add a tag (repeatable)")
	f.StringArrayVar(&req.RemoveTags, "tag-remove", nil, "remove a tag (repeatable)")
	f.StringVar(&tier, "tier", "", "new trust tier: human, agent or auto")
	unitVar(f, &confidence, "confidence", 0, "new confidence from 0 to 1")
	f.BoolVar(&evergreen, "evergreen", false, "never expires nor goes stale (--evergreen=false to undo)")
	f.StringVar(&status, "status", "", "new status: active, stale or archived")
	ttlVar(f, &ttl, "ttl", "expire this long from now (e.g. 30d), or none")
	f.BoolVar(&req.Confirm, "confirm", false, "record that you checked the memory and it still holds")
	f.StringVar(&req.ConfirmedBy, "by", "", "who confirms (with --confirm; default $USER)")
	f.StringVar(&req.Agent, "agent", "", "the agent (client) that makes the change, recorded on the revision new content adds")
	return cmd
}

func (a *app) forgetCommand() *cobra.Command {
	return a.statusCommand("forget ID", "Archive a memory (kept, but out of searches and lists)",
		"Forgot %[1]s (archived; 'memmesh restore %[1]s' brings it back)\n", (*web.Client).Forget)
}

func (a *app) restoreCommand() *cobra.Command {
	return a.statusCommand("restore ID", "Bring an archived, stale, compacted or deleted memory back to active",
		"Restored %s (active again)\n", (*web.Client).Restore)
}

func (a *app) deleteCommand() *cobra.Command {
	cmd := a.statusCommand("delete ID", "Delete a memory on every machine ('memmesh restore' undoes it)",
		"Deleted %[1]s on every machine; 'memmesh restore %[1]s' undoes it, 'memmesh purge %[1]s' erases it for good\n", (*web.Client).Delete)
	cmd.Long = `Delete a memory: it leaves lists, searches and the brief on every machine,
but it is kept (with its history), and 'memmesh restore ID' brings it back.
To erase a memory for good, for example one that holds a secret, use
'memmesh purge ID'.`
	return cmd
}

func (a *app) purgeCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "purge ID...",
		Short: "Erase memories for good, on every machine",
		Long: `Erase memories for good: their content, title, tags, every revision and
every link, from this machine's files (the database and the search index are
rewritten where they held them) and, through a tombstone that replicates, from
every machine of the mesh. A copy that arrives later (from a machine that was
offline, or an import of an older backup) does not bring them back. A purged
id answers that it was purged, when, and by which device.

This cannot be undone. On a terminal, purge asks before it erases; elsewhere
(scripts, agents) it needs --yes. 'memmesh delete' removes a memory from view
in a way that 'memmesh restore' can undo.`,
		Example: `  memmesh purge m-k3j5x2ab
  memmesh purge --yes m-k3j5x2ab m-4fq2aa7b`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			if !yes {
				if err := a.confirmPurge(cmd.Context(), c, argv); err != nil {
					return err
				}
			}
			var out []api.Purged
			for _, ref := range argv {
				a.status("Erasing %s: the database and the search index are rewritten where they held it...", ref)
				p, err := c.Purge(cmd.Context(), ref)
				if err != nil {
					return err
				}
				out = append(out, p)
			}
			return emitList(a, "purged", out, func(w io.Writer) {
				for _, p := range out {
					if p.Already {
						fmt.Fprintf(w, "%s was already purged (%s by device %s).\n", p.ID, stamp(p.At), shortDevice(p.By))
						continue
					}
					fmt.Fprintf(w, "Purged %s and %s: erased here, and on every other machine as the tombstone reaches it.\n", p.ID, importCount(p.Edges, "link", "links"))
				}
			}, func(p api.Purged) string { return p.ID })
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask (required when standard input is not a terminal)")
	return cmd
}

// confirmPurge shows what purge would erase and asks on the terminal; off
// a terminal it refuses, since nobody can answer.
func (a *app) confirmPurge(ctx context.Context, c *web.Client, refs []string) error {
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return usagef("purge erases for good and cannot be undone: add --yes to confirm")
	}
	for _, ref := range refs {
		m, err := c.Get(ctx, ref)
		if errors.Is(err, api.ErrPurged) {
			continue // purge says so
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "  %s  %s\n", m.ShortID, inert.Text(snippet(m.Title, 70)))
	}
	fmt.Fprintf(a.stderr, "Erase these memories on every machine, for good? [y/N] ")
	answer, _ := bufio.NewReader(io.LimitReader(a.stdin, 64)).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return errors.New("nothing was purged")
	}
	return nil
}

// statusCommand builds forget and delete: one id in, one status change out.
func (a *app) statusCommand(use, short, done string, op func(*web.Client, context.Context, string) (api.Memory, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			m, err := op(c, cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			return a.emit(m, func(w io.Writer) { fmt.Fprintf(w, done, m.ShortID) }, func(w io.Writer) { fmt.Fprintln(w, m.ShortID) })
		},
	}
}

func (a *app) statsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Show what this node holds",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			s, err := c.Stats(cmd.Context())
			if err != nil {
				return err
			}
			return a.emit(s, func(w io.Writer) {
				fmt.Fprintf(w, "Device     %s\nHome       %s\nMemories   %d (%d in the search index)\n", s.DeviceID, s.Home, s.Memories, s.Indexed)
				for _, g := range []struct {
					name   string
					counts map[string]int
				}{{"Status", s.ByStatus}, {"Namespace", s.ByNamespace}, {"Kind", s.ByKind}, {"Tier", s.ByTier}} {
					fmt.Fprintf(w, "%-10s %s\n", g.name, formatCounts(g.counts))
				}
			}, func(w io.Writer) { fmt.Fprintln(w, s.Memories) })
		},
	}
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print memmesh's version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := map[string]any{
				"version":  api.Version(),
				"go":       runtime.Version(),
				"platform": runtime.GOOS + "/" + runtime.GOARCH,
			}
			return a.emit(v, func(w io.Writer) {
				fmt.Fprintf(w, "memmesh %s (%s, %s)\n", v["version"], v["go"], v["platform"])
			}, func(w io.Writer) { fmt.Fprintln(w, v["version"]) })
		},
	}
}
