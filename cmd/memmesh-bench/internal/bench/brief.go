package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/node"
)

// BriefOptions configures Brief.
type BriefOptions struct {
	// Sizes are the memories of each project measured.
	Sizes []int
	// Budgets are the token budgets whose briefs are checked for key
	// memories.
	Budgets []int
	// Runs is how many briefs are timed, idle and right after a change.
	Runs int
	// Seed draws the projects.
	Seed uint64
	Common
}

// Validate checks the options.
func (o BriefOptions) Validate() error {
	if len(o.Sizes) == 0 || len(o.Budgets) == 0 {
		return fmt.Errorf("give at least one --sizes and one --budgets")
	}
	errs := []error{atLeast("runs", o.Runs, 1)}
	for _, s := range o.Sizes {
		errs = append(errs, atLeast("sizes", s, corpus.ProjectKeys), atMost("sizes", s, 1_000_000))
	}
	for _, b := range o.Budgets {
		errs = append(errs, atLeast("budgets", b, 100), atMost("budgets", b, 100_000))
	}
	return firstErr(errs...)
}

func atMost(flag string, v, high int) error {
	if v > high {
		return fmt.Errorf("--%s %d: give at most %d", flag, v, high)
	}
	return nil
}

// BriefReport holds, for projects of each size, the share of their key
// memories the brief shows at each budget and the brief's latency.
type BriefReport struct {
	Seed     uint64        `json:"seed"`
	Projects []BriefResult `json:"projects"`
}

// BriefResult is one project's figures.
type BriefResult struct {
	Memories int `json:"memories"`
	Keys     int `json:"key_memories"`
	// Shown holds, by budget, the key memories the Markdown brief shows.
	Shown []BriefShown `json:"shown"`
	// Latency is that of a brief at the default budget, the index built;
	// AfterChange that of a brief right after a new memory.
	Latency     Summary `json:"latency"`
	AfterChange Summary `json:"latency_after_change"`
}

// BriefShown is what a brief of one budget shows, and its honesty: the
// tokens it says it holds and the tokenizer's count of its text.
type BriefShown struct {
	Budget  int     `json:"budget"`
	Keys    int     `json:"keys"`
	Share   float64 `json:"share"`
	Tokens  int     `json:"tokens"`
	Counted int     `json:"counted"`
}

// Rows implements Report.
func (r BriefReport) Rows() []Row {
	rows := []Row{{"seed", fmt.Sprint(r.Seed)}}
	for _, p := range r.Projects {
		pre := fmt.Sprintf("%d memories: ", p.Memories)
		for _, s := range p.Shown {
			rows = append(rows, Row{fmt.Sprintf("%skey memories in a %d-token brief", pre, s.Budget),
				fmt.Sprintf("%d of %d (%.0f %%); %d tokens said, %d counted", s.Keys, p.Keys, 100*s.Share, s.Tokens, s.Counted)})
		}
		rows = append(rows, Row{pre + "brief latency", p.Latency.String()}, Row{pre + "brief latency after a change", p.AfterChange.String()})
	}
	return rows
}

// Brief generates projects (corpus.Project: key memories of known kinds
// among many later notes and near duplicates), imports each into a fresh
// node, waits until it is searchable, and reports the share of key memories its briefs show at each
// budget, then times briefs at the default budget, idle and right after
// a new memory.
func Brief(ctx context.Context, opts BriefOptions) (BriefReport, error) {
	if err := opts.Validate(); err != nil {
		return BriefReport{}, err
	}
	log := logger(opts.Log)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return BriefReport{}, err
	}
	defer cleanup()
	r := BriefReport{Seed: opts.Seed}
	for _, size := range opts.Sizes {
		res, err := briefProject(ctx, filepath.Join(dir, fmt.Sprintf("brief-%d", size)), size, opts, log)
		if err != nil {
			return r, err
		}
		r.Projects = append(r.Projects, res)
	}
	return r, nil
}

const briefNamespace = "project"

func briefProject(ctx context.Context, home string, size int, opts BriefOptions, log *slog.Logger) (BriefResult, error) {
	res := BriefResult{Memories: size}
	n, err := startNode(ctx, node.Config{Home: home, Logger: nodeLogger(log)})
	if err != nil {
		return res, err
	}
	defer n.Close()
	var file bytes.Buffer
	keys, err := corpus.Project{NS: briefNamespace, Size: size, Now: time.Now(), Seed: opts.Seed}.Write(&file)
	if err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}
	res.Keys = len(keys)
	log.Info("importing a project", "memories", size)
	if _, err := n.Import(ctx, &file); err != nil {
		return res, fmt.Errorf("bench: import: %w", err)
	}
	// Briefs are timed in a steady state: every memory searchable.
	if err := searchable(ctx, n); err != nil {
		return res, err
	}
	for _, budget := range opts.Budgets {
		b, err := n.Context(ctx, api.ContextRequest{Namespace: briefNamespace, Budget: budget})
		if err != nil {
			return res, fmt.Errorf("bench: brief: %w", err)
		}
		text := b.Markdown()
		shown := 0
		for _, k := range keys {
			if strings.Contains(text, shortOf(b, k)) {
				shown++
			}
		}
		res.Shown = append(res.Shown, BriefShown{Budget: budget, Keys: shown, Share: float64(shown) / float64(len(keys)),
			Tokens: b.Tokens, Counted: tokens.Count(text)})
	}
	log.Info("timing briefs", "runs", opts.Runs)
	var idle, after Latencies
	for i := range opts.Runs {
		start := time.Now()
		if _, err := n.Context(ctx, api.ContextRequest{Namespace: briefNamespace}); err != nil {
			return res, fmt.Errorf("bench: brief: %w", err)
		}
		idle = append(idle, time.Since(start))
		if _, err := remember(ctx, n, api.RememberRequest{Namespace: briefNamespace, Content: fmt.Sprintf("Run %d of the brief benchmark wrote this note at %s.", i, time.Now().Format(time.RFC3339Nano))}); err != nil {
			return res, fmt.Errorf("bench: remember: %w", err)
		}
		start = time.Now()
		if _, err := n.Context(ctx, api.ContextRequest{Namespace: briefNamespace}); err != nil {
			return res, fmt.Errorf("bench: brief: %w", err)
		}
		after = append(after, time.Since(start))
	}
	res.Latency, res.AfterChange = idle.Summary(), after.Summary()
	return res, nil
}

// shortOf returns how the brief b names the memory with display id id: its
// short id, or the id itself when b does not show it.
func shortOf(b api.Brief, id string) string {
	for _, items := range [][]api.BriefItem{b.Matches, b.Conflicts, b.FromPeers, b.Decisions, b.Tasks, b.Active, b.StaleAlerts} {
		if i := slices.IndexFunc(items, func(it api.BriefItem) bool { return it.ID == id }); i >= 0 {
			return items[i].ShortID + " ·"
		}
	}
	return id
}
