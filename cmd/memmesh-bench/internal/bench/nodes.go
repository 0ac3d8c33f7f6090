package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/node"
)

// Seeds of the corpora, fixed so that every run measures the same data.
const (
	seedCapture  = 1 // memories captured one by one
	seedImport   = 2 // the batch import
	seedPopulate = 3 // the memories a home is filled with
	seedQueries  = 4 // search queries
)

// waitLimit bounds every wait for a node or a mesh to reach a state; it
// is a guard against hanging, not a performance budget.
const waitLimit = 10 * time.Minute

// pollInterval is how often a wait checks its condition at first; see
// pollAfter.
const pollInterval = 10 * time.Millisecond

// remember is n.Remember, which does not look at its context, refused
// once ctx is done: a signal stops a benchmark at its next memory.
func remember(ctx context.Context, n *node.Node, req api.RememberRequest) (api.RememberResult, error) {
	if err := ctx.Err(); err != nil {
		return api.RememberResult{}, err
	}
	return n.Remember(ctx, req)
}

// pollAfter is how long a wait that started elapsed ago sleeps before it
// checks its condition again: pollInterval, or a hundredth of what it
// waited so far, so that a long wait is timed to 1 % and its checks cost
// little. A check can cost much: the digest of a store that just took
// 100,000 documents merges as many operands, tens of milliseconds that
// would otherwise take the CPU from what is being timed.
func pollAfter(elapsed time.Duration) time.Duration {
	return max(pollInterval, elapsed/100)
}

// startNode opens a node with cfg and starts it.
func startNode(ctx context.Context, cfg node.Config) (*node.Node, error) {
	n, err := node.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	return n, nil
}

// importer is what takes an import file: a node, or a daemon's client.
type importer interface {
	Import(ctx context.Context, r io.Reader) (api.ImportResult, error)
}

// importCorpus imports count corpus memories of seed, generated while
// they are read.
func importCorpus(ctx context.Context, to importer, seed uint64, count int) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(corpus.New(seed).WriteImport(pw, count)) }()
	res, err := to.Import(ctx, pr)
	pr.Close() // ends the writer if the import stopped early
	if err != nil {
		return fmt.Errorf("bench: import: %w", err)
	}
	if res.Imported != count {
		return fmt.Errorf("bench: import: %d of %d memories imported", res.Imported, count)
	}
	return nil
}

// searcher is what answers searches: a node, or a daemon's client.
type searcher interface {
	Search(ctx context.Context, req api.SearchRequest) (api.SearchResult, error)
}

// searchable returns once every memory s stores is in its search index:
// a search first brings the index up to date.
func searchable(ctx context.Context, s searcher) error {
	if _, err := s.Search(ctx, api.SearchRequest{Query: "postgres", Limit: 1}); err != nil {
		return fmt.Errorf("bench: search: %w", err)
	}
	return nil
}

// populate fills home with count corpus memories through the import path,
// waits until they are searchable and closes the node, so that a
// benchmark opens the home cold, as a restarted daemon would.
func populate(ctx context.Context, home string, count int, log *slog.Logger) error {
	return inPhase(ctx, "populate", func(ctx context.Context) error { return fill(ctx, home, count, log) })
}

func fill(ctx context.Context, home string, count int, log *slog.Logger) error {
	log.Info("filling a home", "memories", count)
	start := time.Now()
	n, err := startNode(ctx, node.Config{Home: home, Logger: nodeLogger(log)})
	if err != nil {
		return err
	}
	defer n.Close()
	if err := importCorpus(ctx, n, seedPopulate, count); err != nil {
		return err
	}
	if err := searchable(ctx, n); err != nil {
		return err
	}
	if err := n.Close(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	log.Info("home filled", "memories", count, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// waitFor polls cond until it holds, for at most limit.
func waitFor(ctx context.Context, what string, limit time.Duration, cond func() (bool, error)) error {
	start := time.Now()
	deadline := start.Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("bench: %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s: not reached in %v", what, limit)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: %s: %w", what, ctx.Err())
		case <-time.After(pollAfter(time.Since(start))):
		}
	}
}

// atLeast checks an option against its lowest value; options are named
// as the flags of `memmesh bench` that set them.
func atLeast(flag string, v, low int) error {
	if v < low {
		return fmt.Errorf("--%s %d: give at least %d", flag, v, low)
	}
	return nil
}

// firstErr returns the first error that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
