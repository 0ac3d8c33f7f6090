package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/web"
)

// endpointHelp explains what an edge endpoint may be.
const endpointHelp = `FROM and TO are memory ids (m-xxxxxxxx) or artefacts: file:PATH,
file:PATH:10-20, code:PATH::SYMBOL or url:URL.`

func (a *app) linkCommand() *cobra.Command {
	var notes, validFrom, validTo string
	var strength float64
	cmd := &cobra.Command{
		Use:   "link FROM REL TO",
		Short: "Link two memories, or a memory and an artefact, with a typed edge",
		Long: `Create the edge FROM -REL-> TO, or update it (the same edge made on two
machines is one edge). ` + endpointHelp + `

REL is a known relation (` + strings.Join(api.KnownRelations, ", ") + `)
or your own in kebab-case or snake_case. ` + strings.Join(api.AcyclicRelations, ", ") + `
never form a cycle: a link that would close one is refused.`,
		Example: `  memmesh link m-k3j5x2ab supersedes m-7fq2aa4c --note "pgx replaces lib/pq"
  memmesh link m-k3j5x2ab touches file:internal/db/pool.go:10-40
  memmesh link m-k3j5x2ab depends_on m-6zz4bb2c --valid-from 2026-01-01`,
		Args: args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := api.LinkRequest{From: argv[0], Rel: argv[1], To: argv[2], Notes: notes}
			var err error
			if req.ValidFrom, err = parseWhen("--valid-from", validFrom); err != nil {
				return err
			}
			if req.ValidTo, err = parseWhen("--valid-to", validTo); err != nil {
				return err
			}
			if cmd.Flags().Changed("strength") {
				req.Strength = &strength
			}
			e, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.Edge, error) { return c.Link(ctx, req) })
			if err != nil {
				return err
			}
			return a.emit(e, func(w io.Writer) { fmt.Fprintf(w, "Linked %s\n", edgeLine(e)) }, func(w io.Writer) { fmt.Fprintln(w, e.ID) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&notes, "note", "", "why the edge holds")
	unitVar(f, &strength, "strength", 1, "how strongly, from 0 to 1")
	f.StringVar(&validFrom, "valid-from", "", "holds from this date (2026-01-31 or RFC 3339)")
	f.StringVar(&validTo, "valid-to", "", "holds until this date")
	return cmd
}

func (a *app) unlinkCommand() *cobra.Command {
	return a.edgeCommand("unlink FROM REL TO", "Delete an edge (a tombstone that replicates)", "Unlinked %s\n", (*web.Client).Unlink)
}

func (a *app) invalidateCommand() *cobra.Command {
	return a.edgeCommand("invalidate FROM REL TO", "End an edge's validity now, keeping it as history (graph --as-of still sees it)",
		"Invalidated %s\n", (*web.Client).Invalidate)
}

// edgeCommand builds unlink and invalidate: one edge in, one change out.
func (a *app) edgeCommand(use, short, done string, op func(*web.Client, context.Context, string, string, string) (api.Edge, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  short + ". " + endpointHelp,
		Args:  args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			e, err := op(c, cmd.Context(), argv[0], argv[1], argv[2])
			if err != nil {
				return err
			}
			return a.emit(e, func(w io.Writer) { fmt.Fprintf(w, done, edgeLine(e)) }, func(w io.Writer) { fmt.Fprintln(w, e.ID) })
		},
	}
}

// edgeLine renders an edge on one line, with its validity when bounded.
func edgeLine(e api.Edge) string {
	s := e.From + " -" + e.Rel + "-> " + e.To
	if !e.ValidFrom.IsZero() || !e.ValidTo.IsZero() {
		s += fmt.Sprintf(" (valid %s to %s)", stamp(e.ValidFrom), stamp(e.ValidTo))
	}
	if e.Notes != "" {
		s += ": " + e.Notes
	}
	return s
}

func (a *app) graphCommand() *cobra.Command {
	var req api.TraverseRequest
	var direction, asOf string
	cmd := &cobra.Command{
		Use:   "graph ID",
		Short: "Show what a memory or artefact is linked to, breadth-first",
		Long: `Walk the edges from ID (a memory id or an artefact) up to --depth hops,
following edges out of, into, or both ways through each node, only those of
the --rel relations when given, and only edges valid at --as-of (default
now). ` + endpointHelp,
		Example: `  memmesh graph m-k3j5x2ab
  memmesh graph m-k3j5x2ab --depth 3 --direction out --rel supersedes
  memmesh graph file:internal/db/pool.go --direction in
  memmesh graph code:validateToken --depth 2   # its files (defined_in) and memories
  memmesh graph m-k3j5x2ab --as-of 2026-01-31`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req.Start, req.Direction = argv[0], api.Direction(direction)
			var err error
			if req.AsOf, err = parseWhen("--as-of", asOf); err != nil {
				return err
			}
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.TraverseResult, error) { return c.Traverse(ctx, req) })
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) { printGraph(w, res) }, func(w io.Writer) {
				for _, n := range res.Nodes {
					fmt.Fprintln(w, n.ID)
				}
			})
		},
	}
	f := cmd.Flags()
	intRangeVar(f, &req.Depth, "depth", 1, 1, 5, "hops from ID (1 to 5)")
	f.StringVar(&direction, "direction", "both", "follow edges out, in or both")
	f.StringSliceVar(&req.Rels, "rel", nil, "only these relations (repeat or comma-separate)")
	f.StringVar(&asOf, "as-of", "", "only edges valid at this date (default now)")
	return cmd
}

// printGraph shows the nodes reached, nearest first, then the edges.
func printGraph(w io.Writer, res api.TraverseResult) {
	for _, n := range res.Nodes {
		label := n.ID
		if n.Memory != nil {
			title := n.Memory.Title
			if title == "" {
				title = n.Memory.Content
			}
			label = fmt.Sprintf("%s  %s", n.Memory.ShortID, snippet(title, 60))
			if n.Memory.Status != "active" {
				label += fmt.Sprintf("  [%s]", n.Memory.Status)
			}
		}
		fmt.Fprintf(w, "%s%s\n", strings.Repeat("  ", n.Depth), label)
	}
	if len(res.Edges) > 0 {
		fmt.Fprintln(w, "\nEdges:")
		for _, e := range res.Edges {
			fmt.Fprintf(w, "  %s\n", edgeLine(e))
		}
	}
}

func (a *app) impactCommand() *cobra.Command {
	var depth int
	cmd := &cobra.Command{
		Use:   "impact PATH|SYMBOL",
		Short: "List the memories a file, a directory/ or a symbol affects",
		Long: `List the memories that mention PATH, those linked to it (file:PATH or
file:PATH:LINES edges), and, walking edges backwards up to --depth hops, the
memories that point at those. A PATH ending in / covers every file under it.
Archived and stale memories are listed with their status.

A SYMBOL (code:NAME, or a name without / that the symbol index knows: see
'memmesh symbols') starts from the memories that mention it (code:NAME, and
code:Type.Method for a method found by its name), those linked to it
(code:NAME or code:PATH::NAME edges), and those of the files that define it:
a change to a symbol is a change to its file.`,
		Example: `  memmesh impact internal/db/pool.go
  memmesh impact internal/auth/ --depth 1
  memmesh impact validateToken
  memmesh impact code:Store.Commit`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) ([]api.Impacted, error) {
				return c.Impact(ctx, api.ImpactRequest{Path: argv[0], Depth: depth})
			})
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				printTable(w, res, "No memory mentions or links "+argv[0]+".", "MEMORY\tDEPTH\tSTATUS\tVIA\tTITLE",
					func(im api.Impacted) []any {
						title := im.Memory.Title
						if title == "" {
							title = im.Memory.Content
						}
						return []any{im.Memory.ShortID, im.Depth, im.Memory.Status, im.Via, snippet(title, 50)}
					})
			}, func(w io.Writer) {
				for _, im := range res {
					fmt.Fprintln(w, im.Memory.ShortID)
				}
			})
		},
	}
	intRangeVar(cmd.Flags(), &depth, "depth", 2, 1, 5, "hops back from the memories that touch PATH or SYMBOL (1 to 5)")
	return cmd
}

func (a *app) doctorCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Report what merging cannot decide: cycles, sync conflicts, disputed revocations",
		Long: `Two machines can each add an edge that is fine alone and together close a
cycle of supersedes, caused_by, led_to or part_of; two machines can edit a
memory at the same time. memmesh keeps both and reports them here (and in
the context brief) until someone resolves them: unlink or invalidate an edge
of each cycle; update a conflicted memory with the text that holds.

It also reports revocations that do not stand (made by a device after its
own revocation, or lost in a dispute) and what this machine removed or
refused of revoked devices' work.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			rep, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.DoctorReport, error) { return c.Doctor(ctx) })
			if err != nil {
				return err
			}
			return a.emit(rep, func(w io.Writer) { printDoctor(w, rep) }, func(w io.Writer) {
				fmt.Fprintf(w, "%d cycles, %d conflicts, %d contradictions\n", len(rep.Cycles), len(rep.Conflicts), len(rep.Contradictions))
			})
		},
	}
}

func printDoctor(w io.Writer, rep api.DoctorReport) {
	for _, r := range rep.Revocations {
		if !r.Stands {
			fmt.Fprintf(w, "%s's revocation of %s does not stand: %s.\n", shortID(r.By), shortID(r.Revokes), r.Why)
		}
	}
	for _, f := range rep.Refused {
		fmt.Fprintf(w, "Refused of revoked %s's work: %s.\n", shortID(f.Device), refusedSummary(f))
	}
	if len(rep.Cycles) == 0 && len(rep.Conflicts) == 0 && len(rep.Contradictions) == 0 {
		fmt.Fprintln(w, "Nothing to resolve: no cycles in acyclic relations, no sync conflicts, no contradictions.")
		return
	}
	for _, p := range rep.Contradictions {
		fmt.Fprintf(w, "%s contradicts %s: forget the one that is wrong, or invalidate the edge once resolved.\n", p[0], p[1])
	}
	for _, c := range rep.Cycles {
		fmt.Fprintf(w, "Cycle of %s among %s: unlink or invalidate one of its edges.\n", c.Rel, strings.Join(c.Members, ", "))
	}
	for _, id := range rep.Conflicts {
		fmt.Fprintf(w, "Sync conflict in %s: 'memmesh show %s' lists the versions; settle it with 'memmesh update %s --content TEXT' (the text that holds; an entry of Claude Code's auto memory is settled by editing it in its file).\n", id, id, id)
	}
}

func (a *app) staleCommand() *cobra.Command {
	var ns string
	var checkGit, background bool
	cmd := &cobra.Command{
		Use:   "stale",
		Short: "List memories that may no longer hold, with the reasons",
		Long: `List the memories of a namespace that may no longer hold: marked stale,
superseded by a newer memory (a supersedes link), not updated for longer
than the namespace's stale-after age ('memmesh ns set NS --stale-after 30d';
default 60 days), or linked to nothing and older than 30 days. Evergreen
memories are stale only when marked. 'memmesh update ID --status active'
or 'memmesh restore ID' keeps a marked one; updating or linking a memory
makes it current; 'memmesh invalidate' ends a supersession; 'memmesh forget
ID' retires it; 'memmesh compact' folds related ones into a summary.

Memories that name files (src/auth.ts) or quote symbols (` + "`validateToken`" + `) are
also checked against the namespace's git working trees on this machine (those
'memmesh map' sends to it, and those where 'memmesh stale --git' or
'memmesh hooks install --git' ran): a file changed, deleted or renamed since
the memory was last updated or confirmed, or a symbol in none of the files it
names any more, makes it stale, with the commits that did it. The daemon
reads new commits on its schedule ([git] check_interval) and after each
commit when the hook is installed; --git reads them now, in the working tree
of the current directory (which it registers for the namespace) or else in
every tree of the namespace. 'memmesh update ID --confirm' records that the
memory still holds.`,
		Example: `  memmesh stale
  memmesh stale --git`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if ns == "" {
				ns = a.cfg.Namespace
			}
			if background && !checkGit {
				return usagef("--background goes with --git")
			}
			if background {
				a.queueGitCheck(cmd.Context(), ns)
				return nil
			}
			var checks []api.GitCheck
			if checkGit {
				var err error
				if checks, err = a.checkGit(cmd.Context(), ns); err != nil {
					return err
				}
			}
			list, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) ([]api.StaleMemory, error) {
				return c.Stale(ctx, api.StaleRequest{Namespace: ns})
			})
			if err != nil {
				return err
			}
			if checkGit {
				if a.format == "json" {
					if list == nil {
						list = []api.StaleMemory{}
					}
					return writeJSON(a.stdout, map[string]any{"git_checks": checks, "stale": list}, "  ")
				}
				if err := a.emit(nil, func(w io.Writer) { printGitChecks(w, checks) }, func(io.Writer) {}); err != nil {
					return err
				}
			}
			err = emitList(a, "stale", list, func(w io.Writer) {
				printTable(w, list, "Nothing stale in "+orDefault(ns)+".", staleHeader, staleRow)
			}, func(s api.StaleMemory) string { return s.Memory.ShortID })
			a.hintIfEmpty(cmd.Context(), ns, len(list) == 0)
			return err
		},
	}
	cmd.Flags().StringVar(&ns, "ns", "", "namespace (default: the working directory's)")
	cmd.Flags().BoolVar(&checkGit, "git", false, "read the new commits of the namespace's git trees first")
	cmd.Flags().BoolVar(&background, "background", false, "with --git: ask a running daemon to check the current tree soon, print nothing and succeed (what the post-commit hook runs)")
	return cmd
}

func (a *app) lifecycleCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "lifecycle",
		Short: "Run a lifecycle pass now and show what it found",
		Long: `Run the pass the daemon runs every hour: judge every memory's staleness
(by age, supersession, lack of links and its git trees' last check, as
'memmesh stale' lists them),
count the memories past their TTL, decay confidence (it halves every 180
days without an update; evergreen memories keep theirs) and read maturity
from how often this machine read each memory (candidate, established from
3 reads, proven from 10). Search ranks by what the last pass found. The
pass changes no memory: every machine derives the same from the same data.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.LifecycleReport, error) { return c.RunLifecycle(ctx) })
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) { printLifecycle(w, res) }, func(w io.Writer) {
				fmt.Fprintf(w, "%d live, %d stale, %d expired\n", res.Live, res.Stale, res.Expired)
			})
		},
	}
}

func printLifecycle(w io.Writer, r api.LifecycleReport) {
	fmt.Fprintf(w, "Lifecycle pass at %s, %.1f ms\n", stamp(r.At), r.TookMS)
	fmt.Fprintf(w, "%d memories: %d live, %d past their TTL\n", r.Memories, r.Live, r.Expired)
	fmt.Fprintf(w, "stale: %d (superseded %d, by age %d, unlinked %d); see 'memmesh stale'\n",
		r.Stale, r.StaleByRule[api.StaleSuperseded], r.StaleByRule[api.StaleByAge], r.StaleByRule[api.StaleUnlinked])
	if g := r.StaleByRule[api.StaleFileChanged] + r.StaleByRule[api.StaleFileGone] + r.StaleByRule[api.StaleSymbolGone]; g > 0 {
		fmt.Fprintf(w, "against git: %d files changed, %d deleted or renamed, %d symbols gone\n",
			r.StaleByRule[api.StaleFileChanged], r.StaleByRule[api.StaleFileGone], r.StaleByRule[api.StaleSymbolGone])
	}
	fmt.Fprintf(w, "confidence below half of what was stated: %d\n", r.Decayed)
	fmt.Fprintf(w, "maturity: %d candidate, %d established, %d proven\n",
		r.Maturity[api.MaturityCandidate], r.Maturity[api.MaturityEstablished], r.Maturity[api.MaturityProven])
}

func (a *app) compactCommand() *cobra.Command {
	var req api.CompactRequest
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Compact clusters of related stale memories into summaries",
		Long: `Find clusters of at least three stale memories (see 'memmesh stale') that
related_to edges or similar words connect, and replace each with one
summary memory (kind summary): the links that pointed at the members move
to it, and the members are marked compacted into it. Nothing is lost: the
members are kept, and 'memmesh restore ID' brings one back.

The summary this command writes is a digest that lists each member's gist
with its id. For a summary in your own words use 'memmesh compact apply';
agents get the clusters with a summarising prompt from the MCP tool compact
and store their summary with compact_apply.`,
		Example: `  memmesh compact --dry-run           # list the clusters, change nothing
  memmesh compact --ns backend`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if req.Namespace == "" {
				req.Namespace = a.cfg.Namespace
			}
			plan, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.CompactPlan, error) {
				return c.CompactCandidates(ctx, req)
			})
			if err != nil {
				return err
			}
			defer a.hintIfEmpty(cmd.Context(), req.Namespace, len(plan.Clusters) == 0)
			if dryRun {
				return a.emit(plan, func(w io.Writer) { printClusters(w, plan) }, func(w io.Writer) {
					for _, c := range plan.Clusters {
						fmt.Fprintln(w, strings.Join(memberIDs(c), " "))
					}
				})
			}
			results := []api.CompactResult{}
			for _, c := range plan.Clusters {
				title, summary := digest(c)
				res, err := call(cmd.Context(), a, func(cl *web.Client, ctx context.Context) (api.CompactResult, error) {
					return cl.CompactApply(ctx, api.CompactApplyRequest{Members: memberIDs(c), Title: title, Summary: summary, Tier: model.TierAuto})
				})
				if err != nil {
					return fmt.Errorf("compacted %d of %d clusters: %w", len(results), len(plan.Clusters), err)
				}
				results = append(results, res)
			}
			return a.emit(results, func(w io.Writer) {
				if len(results) == 0 {
					fmt.Fprintf(w, "No cluster of 3 or more related stale memories in %s.\n", plan.Namespace)
				}
				for _, r := range results {
					fmt.Fprintf(w, "Compacted %d memories into %s (%d links moved).\n", len(r.Members), r.Summary.ShortID, len(r.Repointed))
				}
			}, func(w io.Writer) {
				for _, r := range results {
					fmt.Fprintln(w, r.Summary.ShortID)
				}
			})
		},
	}
	cmd.Flags().StringVar(&req.Namespace, "ns", "", "namespace (default: the working directory's)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the clusters and change nothing")
	cmd.AddCommand(a.compactApplyCommand())
	return cmd
}

func (a *app) compactApplyCommand() *cobra.Command {
	req := api.CompactApplyRequest{Tier: model.TierHuman}
	cmd := &cobra.Command{
		Use:   "apply ID ID...",
		Short: "Replace memories with a summary you wrote",
		Long: `Store your summary of two or more memories of one namespace (kind summary),
move the links that pointed at them to it and mark them compacted into it.
They are kept; 'memmesh restore ID' brings one back.`,
		Example: `  memmesh compact apply m-3fq2 m-k7dd m-x4c6 --title "Upload retries" --summary "Uploads retry 3 times with backoff, on 5xx only."`,
		Args:    args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req.Members = argv
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.CompactResult, error) { return c.CompactApply(ctx, req) })
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "Compacted %d memories into %s (%d links moved).\n", len(res.Members), res.Summary.ShortID, len(res.Repointed))
			}, func(w io.Writer) { fmt.Fprintln(w, res.Summary.ShortID) })
		},
	}
	cmd.Flags().StringVar(&req.Summary, "summary", "", "the summary (required)")
	cmd.Flags().StringVar(&req.Title, "title", "", "a short title (default: the summary's first line)")
	cmd.MarkFlagRequired("summary")
	return cmd
}

func memberIDs(c api.CompactCluster) []string {
	ids := make([]string, len(c.Members))
	for i, m := range c.Members {
		ids[i] = m.Memory.ID
	}
	return ids
}

// digest is the summary 'memmesh compact' writes for a cluster: each
// member's gist with its id, so that nothing is paraphrased.
func digest(c api.CompactCluster) (title, summary string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Digest of %d stale memories:\n", len(c.Members))
	for _, m := range c.Members {
		fmt.Fprintf(&b, "- %s (%s, updated %s)\n", snippet(m.Memory.Content, 200), m.Memory.ShortID, m.Memory.Provenance.UpdatedAt.Format(time.DateOnly))
	}
	return "Digest: " + snippet(c.Members[0].Memory.Title, 60), b.String()
}

func printClusters(w io.Writer, plan api.CompactPlan) {
	if len(plan.Clusters) == 0 {
		fmt.Fprintf(w, "No cluster of 3 or more related stale memories in %s.\n", plan.Namespace)
		return
	}
	for i, c := range plan.Clusters {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Cluster %d (%d memories)\n", i+1, len(c.Members))
		printTable(w, c.Members, "", staleHeader, staleRow)
	}
}

const staleHeader = "ID\tUPDATED\tREASON\tTITLE"

func staleRow(s api.StaleMemory) []any {
	title := s.Memory.Title
	if title == "" {
		title = s.Memory.Content
	}
	return []any{s.Memory.ShortID, stamp(s.Memory.Provenance.UpdatedAt), strings.Join(s.Reasons, "; "), snippet(title, 50)}
}

func (a *app) analyzeCommand() *cobra.Command {
	var req api.AnalyzeRequest
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Show the shape of a namespace's knowledge graph",
		Long: `Measure a namespace's graph (its active and stale memories and every valid
edge at them): god nodes (most connected), bridges (on the most shortest
paths between others), PageRank (most linked-to) and gaps (memories with no
edge; link them with 'memmesh link').`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if req.Namespace == "" {
				req.Namespace = a.cfg.Namespace
			}
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.Analysis, error) { return c.Analyze(ctx, req) })
			if err != nil {
				return err
			}
			err = a.emit(res, func(w io.Writer) { printAnalysis(w, res) }, func(w io.Writer) {
				for _, g := range res.Gaps {
					fmt.Fprintln(w, g.ID)
				}
			})
			a.hintIfEmpty(cmd.Context(), req.Namespace, res.Memories == 0)
			return err
		},
	}
	cmd.Flags().StringVar(&req.Namespace, "ns", "", "namespace (default: the working directory's)")
	intRangeVar(cmd.Flags(), &req.Limit, "limit", 10, 1, 100, "entries per list (1 to 100)")
	return cmd
}

func printAnalysis(w io.Writer, res api.Analysis) {
	fmt.Fprintf(w, "%s: %d memories, %d edges, %d with no edge\n", res.Namespace, res.Memories, res.Edges, res.GapCount)
	for _, list := range []struct {
		title string
		items []api.Ranked
	}{{"God nodes (degree)", res.GodNodes}, {"Bridges (betweenness)", res.Bridges}, {"PageRank", res.PageRank}, {"Gaps (no edge)", res.Gaps}} {
		if len(list.items) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", list.title)
		printTable(w, list.items, "", "ID\tSCORE\tTITLE", func(r api.Ranked) []any {
			return []any{r.ID, r.Score, snippet(r.Title, 60)}
		})
	}
}

func (a *app) reflectCommand() *cobra.Command {
	var req api.ReflectRequest
	cmd := &cobra.Command{
		Use:   "reflect",
		Short: "List unlinked memories with what they may relate to",
		Long: `List the memories of a namespace that nothing links, each with the memories a
search for its words finds, to link with 'memmesh link' (or let an agent do
it with the MCP reflect tool).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if req.Namespace == "" {
				req.Namespace = a.cfg.Namespace
			}
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) ([]api.Reflection, error) { return c.Reflect(ctx, req) })
			if err != nil {
				return err
			}
			defer a.hintIfEmpty(cmd.Context(), req.Namespace, len(res) == 0)
			return emitList(a, "memories", res, func(w io.Writer) {
				if len(res) == 0 {
					fmt.Fprintf(w, "Every memory of %s is linked to something.\n", orDefault(req.Namespace))
				}
				for _, r := range res {
					fmt.Fprintf(w, "%s  %s\n", r.Memory.ID, snippet(r.Memory.Title, 70))
					for _, c := range r.Candidates {
						fmt.Fprintf(w, "    may relate to %s  %s\n", c.ID, snippet(c.Title, 60))
					}
				}
			}, func(r api.Reflection) string { return r.Memory.ID })
		},
	}
	cmd.Flags().StringVar(&req.Namespace, "ns", "", "namespace (default: the working directory's)")
	intRangeVar(cmd.Flags(), &req.Limit, "limit", 10, 1, 50, "memories to list (1 to 50)")
	return cmd
}
