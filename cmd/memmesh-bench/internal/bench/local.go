package bench

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/vector"
)

// CaptureOptions configures Capture.
type CaptureOptions struct {
	// Memories is how many corpus memories are captured one by one.
	Memories int
	// Import is how many corpus memories the batch import brings.
	Import int
	Common
}

// Validate checks the options.
func (o CaptureOptions) Validate() error {
	return firstErr(atLeast("memories", o.Memories, 1), atLeast("import", o.Import, 1))
}

// CaptureReport holds the figures of local writes.
type CaptureReport struct {
	Captures int     `json:"captures"`
	Capture  Summary `json:"capture"`
	Imported int     `json:"imported"`
	// ImportRate is memories per second until the import is durable.
	ImportRate float64 `json:"import_per_s"`
	// ImportSearchable is the seconds from the start of the import until
	// all of it is searchable.
	ImportSearchable float64 `json:"import_searchable_s"`
	// ImportCPU is the CPU time the process used until the import was
	// durable; on a shared machine it varies less than the rate does.
	ImportCPU float64 `json:"import_cpu_s"`
}

// Rows implements Report.
func (r CaptureReport) Rows() []Row {
	return []Row{
		{"captures (node.Remember, durable)", fmt.Sprint(r.Captures)},
		{"capture latency", r.Capture.String()},
		{"batch import (node.Import, durable)", fmt.Sprintf("%d memories", r.Imported)},
		{"import throughput", fmt.Sprintf("%s memories/s", num(r.ImportRate))},
		{"import until all searchable", fmt.Sprintf("%s s", num(r.ImportSearchable))},
		{"CPU time used until durable", fmt.Sprintf("%s s", num(r.ImportCPU))},
	}
}

// Capture measures durable writes in-process on fresh nodes: the latency
// of node.Remember for corpus memories captured one by one (indexing runs
// beside them, as in the daemon), and the throughput of a batch import
// with the time until all of it is searchable.
func Capture(ctx context.Context, opts CaptureOptions) (CaptureReport, error) {
	if err := opts.Validate(); err != nil {
		return CaptureReport{}, err
	}
	log := logger(opts.Log)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return CaptureReport{}, err
	}
	defer cleanup()

	r := CaptureReport{Captures: opts.Memories, Imported: opts.Import}
	lat, err := captures(ctx, filepath.Join(dir, "capture"), opts.Memories, log)
	if err != nil {
		return CaptureReport{}, err
	}
	r.Capture = lat.Summary()
	log.Info("captured", "memories", opts.Memories, "latency", r.Capture.String())

	var durable, all, cpu time.Duration
	err = inPhase(ctx, "import", func(ctx context.Context) error {
		durable, all, cpu, err = batchImport(ctx, filepath.Join(dir, "import"), opts.Import, log)
		return err
	})
	if err != nil {
		return CaptureReport{}, err
	}
	r.ImportRate = float64(opts.Import) / durable.Seconds()
	r.ImportSearchable = all.Seconds()
	r.ImportCPU = cpu.Seconds()
	log.Info("imported", "memories", opts.Import, "per_s", num(r.ImportRate), "searchable_after", all.Round(time.Millisecond))
	return r, nil
}

// captures times node.Remember for count corpus memories on a fresh node.
func captures(ctx context.Context, home string, count int, log *slog.Logger) (Latencies, error) {
	gen := corpus.New(seedCapture)
	reqs := make([]api.RememberRequest, count)
	for i := range reqs {
		m := gen.Next()
		reqs[i] = api.RememberRequest{Namespace: m.Namespace, Kind: m.Kind, Title: m.Title, Content: m.Content, Tags: m.Tags}
	}
	n, err := startNode(ctx, node.Config{Home: home, Logger: nodeLogger(log)})
	if err != nil {
		return nil, err
	}
	defer n.Close()
	log.Info("capturing", "memories", count)
	lat := make(Latencies, 0, count)
	for _, req := range reqs {
		start := time.Now()
		if _, err := remember(ctx, n, req); err != nil {
			return nil, fmt.Errorf("bench: capture: %w", err)
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

// batchImport imports count corpus memories into a fresh node and returns
// the time until the import is durable and until it is all searchable, and
// the CPU time the process used until it was durable.
func batchImport(ctx context.Context, home string, count int, log *slog.Logger) (durable, all, cpu time.Duration, err error) {
	n, err := startNode(ctx, node.Config{Home: home, Logger: nodeLogger(log)})
	if err != nil {
		return 0, 0, 0, err
	}
	defer n.Close()
	log.Info("importing", "memories", count)
	start, cpu0 := time.Now(), cpuTime()
	if err := importCorpus(ctx, n, seedImport, count); err != nil {
		return 0, 0, 0, err
	}
	durable, cpu = time.Since(start), cpuTime()-cpu0
	if err := searchable(ctx, n); err != nil {
		return 0, 0, 0, err
	}
	return durable, time.Since(start), cpu, nil
}

// SearchOptions configures Search.
type SearchOptions struct {
	// Memories is how many corpus memories the node holds.
	Memories int
	// Queries is how many corpus queries are timed.
	Queries int
	// VectorDims, when positive, also times the vector stage of search
	// by meaning: a vector index of Memories vectors of this many values.
	VectorDims int
	Common
}

// Validate checks the options.
func (o SearchOptions) Validate() error {
	err := firstErr(atLeast("memories", o.Memories, 1), atLeast("queries", o.Queries, 1), atLeast("vector-dims", o.VectorDims, 0))
	if err == nil && o.VectorDims > vector.MaxDims {
		err = fmt.Errorf("--vector-dims %d: at most %d", o.VectorDims, vector.MaxDims)
	}
	return err
}

// SearchReport holds search latency on a node of many memories.
type SearchReport struct {
	Memories int     `json:"memories"`
	Queries  int     `json:"queries"`
	Latency  Summary `json:"latency"`
	// Empty counts the queries that found nothing.
	Empty int `json:"empty"`
	// Vectors is the vector stage's, with --vector-dims.
	Vectors *VectorStage `json:"vectors,omitempty"`
}

// Rows implements Report.
func (r SearchReport) Rows() []Row {
	rows := []Row{
		{"memories", fmt.Sprint(r.Memories)},
		{"queries (top 10)", fmt.Sprint(r.Queries)},
		{"search latency", r.Latency.String()},
		{"queries without results", fmt.Sprint(r.Empty)},
	}
	if v := r.Vectors; v != nil {
		rows = append(rows,
			Row{"vector stage: vectors × dims", fmt.Sprintf("%d × %d", v.Vectors, v.Dims)},
			Row{fmt.Sprintf("vector stage latency (nearest %d)", vectorK), v.Latency.String()},
			Row{"vector stage fill (graph built)", v.Fill.Round(time.Millisecond).String()},
		)
	}
	return rows
}

// distinctQueries is how many different corpus queries a search benchmark
// cycles through; the first pass over them warms the index's caches, as a
// running daemon's are.
const distinctQueries = 256

// Search fills a home with corpus memories through the import path,
// opens it cold as a restarted daemon would, and times top-10 searches of
// corpus queries.
func Search(ctx context.Context, opts SearchOptions) (SearchReport, error) {
	if err := opts.Validate(); err != nil {
		return SearchReport{}, err
	}
	log := logger(opts.Log)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return SearchReport{}, err
	}
	defer cleanup()
	home := filepath.Join(dir, "search")
	if err := populate(ctx, home, opts.Memories, log); err != nil {
		return SearchReport{}, err
	}
	n, err := startNode(ctx, node.Config{Home: home, Logger: nodeLogger(log)})
	if err != nil {
		return SearchReport{}, err
	}
	defer n.Close()

	gen := corpus.New(seedQueries)
	queries := make([]string, distinctQueries)
	for i := range queries {
		queries[i] = gen.Query()
	}
	for _, q := range queries {
		if _, err := n.Search(ctx, api.SearchRequest{Query: q, Limit: 10}); err != nil {
			return SearchReport{}, fmt.Errorf("bench: search %q: %w", q, err)
		}
	}
	log.Info("searching", "queries", opts.Queries)
	r := SearchReport{Memories: opts.Memories, Queries: opts.Queries}
	lat := make(Latencies, 0, opts.Queries)
	for i := range opts.Queries {
		q := queries[i%len(queries)]
		start := time.Now()
		res, err := n.Search(ctx, api.SearchRequest{Query: q, Limit: 10})
		lat = append(lat, time.Since(start))
		if err != nil {
			return SearchReport{}, fmt.Errorf("bench: search %q: %w", q, err)
		}
		if len(res.Results) == 0 {
			r.Empty++
		}
	}
	r.Latency = lat.Summary()
	if opts.VectorDims > 0 {
		log.Info("vector stage", "vectors", opts.Memories, "dims", opts.VectorDims)
		v, err := vectorStage(ctx, filepath.Join(dir, "vectors"), opts.Memories, opts.VectorDims, opts.Queries, log)
		if err != nil {
			return SearchReport{}, err
		}
		r.Vectors = &v
	}
	return r, nil
}
