package search

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

var benchDocs = flag.Int("search.docs", 10_000, "memories indexed by BenchmarkSearch")

// Vocabulary of the generated notes: short technical memories about the
// services of a made-up company. Words are drawn with a Zipf distribution,
// so a few are common and most are rare, as in real notes.
var (
	benchServices = []string{
		"checkout", "billing", "auth", "search", "inventory", "ledger", "notifications", "gateway",
		"scheduler", "ingest", "export", "payments", "profile", "catalog", "shipping", "analytics",
		"audit", "webhooks", "sessions", "media", "chat", "onboarding", "pricing", "reporting",
	}
	benchComponents = []string{
		"worker", "API", "cache", "queue consumer", "cron job", "migration", "database",
		"client", "handler", "index", "dashboard", "CLI",
	}
	benchProblems = []string{
		"times out", "leaks goroutines", "needs a retry with backoff", "drops messages",
		"is rate limited", "returns stale results", "holds a lock too long", "runs out of file descriptors",
		"logs the token in plain text", "deadlocks on shutdown", "uses too much memory", "fails the health check",
		"retries forever", "skips the migration", "double charges the customer", "loses the cursor",
		"panics on nil config", "sends duplicate emails", "reads from the wrong replica", "ignores the timezone",
		"floods the logs", "blocks the event loop", "corrupts the cache key", "overflows the batch size",
	}
	benchConditions = []string{
		"under load", "after a deploy", "when the disk is full", "on cold start",
		"if the token expired", "during failover", "when the replica lags", "with more than 100 connections",
		"on the first request", "when the queue is empty", "after the schema change", "in the staging cluster",
		"behind the VPN", "on ARM hosts", "at midnight UTC", "when Redis restarts",
		"with Postgres 16", "during the Kafka rebalance", "in dry-run mode", "for EU customers",
	}
	benchFixes = []string{
		"Set max_conns to 50.", "Wrap the call in a context with a 5s deadline.", "Add an index on user_id.",
		"Call parseConfig before startServer.", "Use the retry_budget helper.", "Pin the client to TLS 1.3.",
		"Drain the queue in HandleShutdown.", "Move the check into internal/store/pebble.go.",
		"Bump the pool size in config/prod.toml.", "Guard it with the NewRateLimiter middleware.",
		"Close the rows iterator.", "Batch the writes, 100 per transaction.",
		"Run make migrate before the tests.", "Read the flag from FEATURE_CHECKOUT_V2.",
		"Use idempotency keys on POST /payments.", "Log the request id, never the body.",
		"Add jitter to the backoff.", "Set GOMAXPROCS from the cgroup limit.",
		"Invalidate the cache after the write.", "Store times in UTC and convert at the edge.",
	}
	benchTags       = []string{"bug", "perf", "deploy", "security", "flaky", "ci", "postgres", "redis", "kafka", "migration", "grpc", "frontend", "oncall", "billing", "infra", "docs"}
	benchNamespaces = []string{"shop", "platform", "mobile", "data", "infra", "website", "billing", "tools"}
	benchKinds      = []string{"note", "decision", "convention", "bug", "fact", "task"}
	benchTiers      = []model.Tier{model.TierAgent, model.TierAuto, model.TierHuman}
	// The machines of a mesh: each memory is written on one, and every
	// fourth was also revised on the next (derived from the memory's
	// number, so that the other draws stay as they were).
	benchDevices = []string{"GQ2LAPTOP", "GQ2DESKTOP", "HOMESERVER", "CIRUNNER", "TABLET"}
	benchQueries = map[string][]string{
		"terms":  {"checkout worker timeout", "retry backoff jitter", "goroutine leak shutdown", "token expired", "kafka rebalance", "memory load", "parseConfig", "schema migration deploy"},
		"phrase": {`"rate limited"`, `"cache key" corrupts`, `"dry-run mode"`, `"health check"`},
		"fuzzy":  {"idempotncy", "goroutnes", "dedlocks", "timezon"},
	}
)

// noteGen draws generated memories from a seeded source.
type noteGen struct {
	rng  *rand.Rand
	zipf map[int]*rand.Zipf // by list length
}

func newNoteGen(seed uint64) *noteGen {
	return &noteGen{rng: rand.New(rand.NewPCG(seed, seed)), zipf: map[int]*rand.Zipf{}}
}

// pick draws from s, favouring its first elements.
func pick[T any](g *noteGen, s []T) T {
	z, ok := g.zipf[len(s)]
	if !ok {
		z = rand.NewZipf(g.rng, 1.1, 2, uint64(len(s)-1))
		g.zipf[len(s)] = z
	}
	return s[z.Uint64()]
}

// memory generates the i-th memory of the corpus.
func (g *noteGen) memory(i int) model.Memory {
	subject := pick(g, benchServices) + " " + pick(g, benchComponents)
	problem := pick(g, benchProblems)
	var content strings.Builder
	fmt.Fprintf(&content, "The %s %s %s.", subject, problem, pick(g, benchConditions))
	for range g.rng.IntN(3) {
		fmt.Fprintf(&content, " It also %s %s.", pick(g, benchProblems), pick(g, benchConditions))
	}
	fmt.Fprintf(&content, " %s", pick(g, benchFixes))
	tags := []string{pick(g, benchTags)}
	if t := pick(g, benchTags); t != tags[0] {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	device := benchDevices[i*7%len(benchDevices)]
	m := model.Memory{
		ID:         fmt.Sprintf("m%025d", i),
		Namespace:  pick(g, benchNamespaces),
		Title:      fmt.Sprintf("%s %s", subject, problem),
		Content:    content.String(),
		Kind:       pick(g, benchKinds),
		Tags:       tags,
		Tier:       pick(g, benchTiers),
		Confidence: 0.5 + g.rng.Float64()/2,
		Status:     model.StatusActive,
		Provenance: model.Provenance{
			Device:    device,
			CreatedAt: now.Add(-time.Duration(g.rng.IntN(365*24)) * time.Hour),
			UpdatedAt: now.Add(-time.Duration(g.rng.IntN(365*24)) * time.Hour),
		},
	}
	m.Revisions = []model.Revision{{ID: "r0", Text: m.Content, Device: device, At: m.Provenance.CreatedAt}}
	if i%4 == 0 {
		m.Revisions = append(m.Revisions, model.Revision{ID: "r1", Parent: "r0", Text: m.Content, Device: benchDevices[(i*7+1)%len(benchDevices)], At: m.Provenance.UpdatedAt})
	}
	return m
}

// benchIndex builds an index of n generated memories, then closes and
// reopens it, so that searches run on the persisted, merged index a node
// has after a restart rather than racing the first background merges.
func benchIndex(b *testing.B, n int) *Index {
	b.Helper()
	dir := b.TempDir()
	ix, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	g := newNoteGen(1)
	const batch = 1000
	for start := 0; start < n; start += batch {
		ms := make([]model.Memory, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			ms = append(ms, g.memory(i))
		}
		if err := ix.Apply(ms, nil, uint64(start)); err != nil {
			b.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		b.Fatal(err)
	}
	if ix, err = Open(dir, Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	return ix
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportLatency adds p50 and p99 of the per-operation durations.
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

func BenchmarkSearch(b *testing.B) {
	ix := benchIndex(b, *benchDocs)
	ctx := context.Background()
	run := func(name string, queries []Query) {
		b.Run(name, func(b *testing.B) {
			var lat []time.Duration
			var matches uint64
			i := 0
			cpu := cpuTime()
			for b.Loop() {
				start := time.Now()
				res, err := ix.Search(ctx, queries[i%len(queries)])
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Hits) == 0 {
					b.Fatalf("%+v: no hits", queries[i%len(queries)])
				}
				matches += res.Total
				i++
			}
			reportLatency(b, lat)
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(i), "cpu-µs/op")
			b.ReportMetric(float64(matches)/float64(i), "matches/op")
		})
	}
	texts := func(texts []string, q Query) []Query {
		var qs []Query
		for _, t := range texts {
			q.Text = t
			qs = append(qs, q)
		}
		return qs
	}
	run("terms", texts(benchQueries["terms"], Query{Now: now}))
	run("phrase", texts(benchQueries["phrase"], Query{Now: now}))
	run("filtered", texts(benchQueries["terms"], Query{Now: now, Namespace: "shop", Tiers: []model.Tier{model.TierHuman, model.TierAgent}}))
	run("since", texts(benchQueries["terms"], Query{Now: now, Since: now.Add(-30 * 24 * time.Hour), Until: now.Add(-time.Hour)}))
	run("explain", texts(benchQueries["terms"], Query{Now: now, Explain: true}))
	run("fuzzy", texts(benchQueries["fuzzy"], Query{Now: now}))
	run("list", []Query{{Now: now, Namespace: "billing"}, {Now: now, Namespace: "shop", Tags: []string{"redis"}}})
	// The dashboard's list: every memory, newest first, a page of 100;
	// and that list of one device's memories, whole or in a namespace,
	// and a search of them.
	run("list-all", []Query{{Now: now, Limit: 100}})
	var device []Query
	for _, d := range benchDevices {
		device = append(device, Query{Now: now, Limit: 100, Device: d}, Query{Now: now, Limit: 100, Device: d, Namespace: "shop"})
	}
	run("list-device", device)
	run("terms-device", texts(benchQueries["terms"], Query{Now: now, Device: benchDevices[1]}))
	b.Run("list-pages", func(b *testing.B) {
		// Paging the whole list, 100 at a time, from a cursor.
		var lat []time.Duration
		var after *api.Cursor
		for b.Loop() {
			start := time.Now()
			res, err := ix.Search(ctx, Query{Now: now, Limit: 100, After: after})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			after = res.Next
		}
		reportLatency(b, lat)
	})
}

func benchApply(b *testing.B, perBatch int) {
	ix, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	g := newNoteGen(2)
	pool := make([]model.Memory, 1000)
	for i := range pool {
		pool[i] = g.memory(i)
	}
	var lat []time.Duration
	n := 0
	for b.Loop() {
		ms := make([]model.Memory, perBatch)
		for j := range ms {
			ms[j] = pool[n%len(pool)]
			ms[j].ID = fmt.Sprintf("m%025d", n)
			n++
		}
		start := time.Now()
		if err := ix.Apply(ms, nil, uint64(n)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "docs/s")
	reportLatency(b, lat)
}

func BenchmarkApplyBatch(b *testing.B) { benchApply(b, 100) }

func BenchmarkApplyOne(b *testing.B) { benchApply(b, 1) }

// BenchmarkApplyBacklog indexes batches the size of node's indexer's
// batches of a backlog (a catch-up, an import, a rebuild).
func BenchmarkApplyBacklog(b *testing.B) { benchApply(b, 2048) }
