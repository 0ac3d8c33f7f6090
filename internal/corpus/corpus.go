// Package corpus generates synthetic memories for benchmarks: short technical
// notes built from templates and a vocabulary of real tools, files and
// errors, with a length distribution like agents' memories (a sentence to a
// few paragraphs). The same seed always gives the same corpus.
package corpus

import (
	"bufio"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// Memory is one generated memory.
type Memory struct {
	Namespace string
	Kind      string
	Title     string
	Content   string
	Tags      []string
}

var (
	namespaces = []string{"backend", "frontend", "infra", "mobile", "data", "auth-service", "billing", "cli", "docs", "platform"}
	kinds      = []string{"note", "decision", "convention", "bug", "fact", "task", "preference"}
	tools      = []string{"postgres", "redis", "kafka", "nginx", "docker", "kubernetes", "terraform", "grpc", "graphql", "react", "vite", "webpack", "pytest", "jest", "pebble", "sqlite", "elasticsearch", "prometheus", "grafana", "github actions", "bazel", "make", "goose", "pgx", "sqlc", "zod", "tailwind", "storybook", "playwright", "sentry"}
	files      = []string{"internal/auth/session.go", "cmd/server/main.go", "pkg/api/handlers.go", "src/components/Button.tsx", "src/hooks/useAuth.ts", "migrations/0042_add_index.sql", "Makefile", "docker-compose.yml", "deploy/helm/values.yaml", ".github/workflows/ci.yml", "internal/cache/lru.go", "web/src/routes/+page.svelte", "scripts/release.sh", "config/settings.py", "app/models/user.rb", "src/lib.rs", "package.json", "go.mod", "internal/queue/worker.go", "tests/test_billing.py"}
	symbols    = []string{"parseConfig", "Store.Commit", "http.Handler", "useEffect", "retryWithBackoff", "NewServer", "handleWebhook", "validateToken", "ConnPool.Acquire", "render_invoice", "migrate_up", "SessionManager.Refresh", "fetchUser", "encodeCursor", "rateLimiter.Allow"}
	errorsList = []string{"context deadline exceeded", "connection reset by peer", "too many open files", "deadlock detected", "unique constraint violation", "nil pointer dereference", "CORS preflight failed", "out of memory", "TLS handshake timeout", "hydration mismatch", "flaky test timeout", "race detected during execution"}
	verbs      = []string{"use", "prefer", "avoid", "never call", "always wrap", "cache", "batch", "retry", "pin", "validate", "log", "benchmark", "profile", "mock", "index"}
	reasons    = []string{"it keeps the hot path allocation free", "the old approach leaked goroutines under load", "CI runs on two cores and times out otherwise", "the vendor deprecated the v1 API", "it halves p99 latency in the staging benchmark", "reviewers asked for it in the last three PRs", "it broke production on the last deploy", "the migration locks the table for minutes", "the team agreed on it in the architecture review", "it is the only option that works offline"}
	fillers    = []string{"This came up while debugging the nightly job.", "Check the dashboards before changing it.", "The fix is covered by a regression test now.", "Document any exception in the PR description.", "Ask the on-call engineer before touching production.", "The same pattern applies to the worker service.", "See the runbook for the rollback steps.", "It only reproduces with the race detector on.", "Measured on the shared staging cluster.", "Remove the workaround once upstream releases the fix."}
	tagWords   = []string{"db", "perf", "security", "testing", "ci", "deploy", "api", "ui", "go", "typescript", "python", "rust", "observability", "cache", "auth"}
)

// Generator yields memories from a seeded random source.
type Generator struct {
	rng *rand.Rand
	n   int
}

// New returns a generator; the same seed gives the same sequence.
func New(seed uint64) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x5bd1e995))}
}

func (g *Generator) pick(list []string) string { return list[g.rng.IntN(len(list))] }

// Next returns the next memory.
func (g *Generator) Next() Memory {
	g.n++
	tool, file, sym, errText := g.pick(tools), g.pick(files), g.pick(symbols), g.pick(errorsList)
	var lead, title string
	kind := g.pick(kinds)
	switch kind {
	case "decision":
		title = fmt.Sprintf("Use %s for %s", tool, strings.TrimSuffix(file, ".go"))
		lead = fmt.Sprintf("We decided to %s %s in %s because %s.", g.pick(verbs), tool, file, g.pick(reasons))
	case "bug":
		title = fmt.Sprintf("%s in %s", errText, sym)
		lead = fmt.Sprintf("`%s` failed with %q when %s was under load; the cause was in %s and %s fixes it.", sym, errText, tool, file, g.pick(verbs)+" the client")
	case "convention":
		title = fmt.Sprintf("Convention: %s %s", g.pick(verbs), tool)
		lead = fmt.Sprintf("Convention: %s %s around `%s` because %s.", g.pick(verbs), tool, sym, g.pick(reasons))
	default:
		title = fmt.Sprintf("%s and %s", tool, sym)
		lead = fmt.Sprintf("%s: %s %s when calling `%s` from %s; otherwise expect %q.", strings.ToUpper(kind[:1])+kind[1:], g.pick(verbs), tool, sym, file, errText)
	}
	// Lengths: mostly one to three sentences, sometimes a few paragraphs.
	extra := g.rng.IntN(3)
	if g.rng.IntN(10) == 0 {
		extra += 4 + g.rng.IntN(8)
	}
	parts := []string{lead}
	for range extra {
		parts = append(parts, g.pick(fillers))
	}
	tags := []string{g.pick(tagWords)}
	if g.rng.IntN(2) == 0 {
		tags = append(tags, g.pick(tagWords))
	}
	return Memory{
		Namespace: g.pick(namespaces),
		Kind:      kind,
		Title:     title,
		// A serial number keeps every memory distinct, as real ones are.
		Content: strings.Join(parts, " ") + fmt.Sprintf(" (ref %d)", g.n),
		Tags:    tags,
	}
}

// Query returns a search a user might type against this corpus.
func (g *Generator) Query() string {
	switch g.rng.IntN(3) {
	case 0:
		return g.pick(tools) + " " + g.pick(errorsList)
	case 1:
		return g.pick(symbols)
	default:
		return g.pick(verbs) + " " + g.pick(tools)
	}
}

// exportLine is one line of memmesh's export format (see node.ExportLine),
// spelled out here so that benchmarks of any package can build import files.
type exportLine struct {
	Type       string     `json:"type"`
	ID         string     `json:"id"`
	Namespace  string     `json:"namespace"`
	Title      string     `json:"title"`
	Kind       string     `json:"kind"`
	Tags       []string   `json:"tags"`
	Tier       string     `json:"tier"`
	Confidence float64    `json:"confidence"`
	Status     string     `json:"status"`
	Provenance provenance `json:"provenance"`
	Revisions  []revision `json:"revisions"`
}

type provenance struct {
	Device    string    `json:"device"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type revision struct {
	ID   string    `json:"id"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// id returns a memory or revision id drawn from the generator's source.
func (g *Generator) id() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// WriteImport writes count memories as an import file for `memmesh import`,
// one minute apart from 2026-01-01.
func (g *Generator) WriteImport(w io.Writer, count int) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range count {
		m := g.Next()
		at := base.Add(time.Duration(i) * time.Minute)
		err := enc.Encode(exportLine{
			Type: "memory", ID: "m-" + g.id(), Namespace: m.Namespace, Title: m.Title, Kind: m.Kind, Tags: m.Tags,
			Tier: "human", Confidence: 0.9, Status: "active",
			Provenance: provenance{Device: "BENCH", CreatedAt: at, UpdatedAt: at},
			Revisions:  []revision{{ID: g.id(), Text: m.Content, At: at}},
		})
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}
