package search

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/crdt"
)

var benchDocs = flag.Int("search.docs", 10_000, "memories indexed by BenchmarkSearch")

// Vocabulary of the generated notes: short technical memories about a
// small system, so that terms repeat the way they do in real notes.
var (
	benchNamespaces = []string{"api", "web", "infra", "billing", "search"}
	benchKinds      = []string{"note", "decision", "convention", "bug", "fact", "task"}
	benchTiers      = []crdt.Tier{crdt.TierHuman, crdt.TierAgent, crdt.TierAgent, crdt.TierAuto, crdt.TierAuto}
	benchTags       = []string{"postgres", "redis", "kafka", "auth", "deploy", "ci", "perf", "flaky", "security", "migration", "grpc", "frontend"}
	benchSubjects   = []string{
		"postgres", "the redis cache", "the kafka consumer", "the auth service", "the billing worker",
		"the search index", "the API gateway", "the CI pipeline", "the migration runner",
		"the websocket hub", "the nightly cron job", "the session store", "the rate limiter",
		"the webhook handler", "the connection pool", "the feature flag service",
	}
	benchProblems = []string{
		"times out", "leaks goroutines", "needs a retry with backoff", "drops messages",
		"is rate limited", "returns stale results", "holds a lock too long", "runs out of file descriptors",
		"logs the token in plain text", "deadlocks on shutdown", "uses too much memory", "fails the health check",
		"retries forever", "skips the migration", "double charges the customer", "loses the cursor",
	}
	benchConditions = []string{
		"under load", "after a deploy", "when the disk is full", "on cold start",
		"if the token expired", "during failover", "when the replica lags", "with more than 100 connections",
		"on the first request", "when the queue is empty", "after the schema change", "in the staging cluster",
	}
	benchFixes = []string{
		"Set max_conns to 50.", "Wrap the call in a context with a 5s deadline.", "Add an index on user_id.",
		"Call parseConfig before startServer.", "Use the retry_budget helper.", "Pin the client to TLS 1.3.",
		"Drain the queue in HandleShutdown.", "Move the check into internal/store/pebble.go.",
		"Bump the pool size in config/prod.toml.", "Guard it with the NewRateLimiter middleware.",
		"Close the rows iterator.", "Batch the writes, 100 per transaction.",
	}
	benchQueries = map[string][]string{
		"terms":  {"postgres timeout", "retry backoff", "goroutine leak shutdown", "token expired", "kafka consumer messages", "memory load", "parseConfig", "schema migration deploy"},
		"phrase": {`"rate limited"`, `"connection pool" timeout`, `"after a deploy"`, `"health check"`},
		"fuzzy":  {"postgress", "goroutnes", "dedlocks", "websoket"},
	}
)

// benchMemory generates the i-th memory of a corpus made from rng.
func benchMemory(rng *rand.Rand, i int) crdt.Memory {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	subject, problem := pick(benchSubjects), pick(benchProblems)
	var content strings.Builder
	fmt.Fprintf(&content, "%s %s %s.", strings.ToUpper(subject[:1])+subject[1:], problem, pick(benchConditions))
	for range rng.IntN(3) {
		fmt.Fprintf(&content, " It also %s %s.", pick(benchProblems), pick(benchConditions))
	}
	fmt.Fprintf(&content, " %s", pick(benchFixes))
	tags := []string{pick(benchTags)}
	if t := pick(benchTags); t != tags[0] {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	return crdt.Memory{
		ID:         fmt.Sprintf("m%025d", i),
		Namespace:  pick(benchNamespaces),
		Title:      fmt.Sprintf("%s %s", subject, problem),
		Content:    content.String(),
		Kind:       pick(benchKinds),
		Tags:       tags,
		Tier:       benchTiers[rng.IntN(len(benchTiers))],
		Confidence: 0.5 + rng.Float64()/2,
		Status:     crdt.StatusActive,
		Provenance: crdt.Provenance{
			Device:    "bench",
			CreatedAt: now.Add(-time.Duration(rng.IntN(365*24)) * time.Hour),
			UpdatedAt: now.Add(-time.Duration(rng.IntN(365*24)) * time.Hour),
		},
	}
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
	rng := rand.New(rand.NewPCG(1, 2))
	const batch = 1000
	for start := 0; start < n; start += batch {
		ms := make([]crdt.Memory, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			ms = append(ms, benchMemory(rng, i))
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
			i := 0
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
				i++
			}
			reportLatency(b, lat)
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
	run("filtered", texts(benchQueries["terms"], Query{Now: now, Namespace: "api", Tiers: []crdt.Tier{crdt.TierHuman, crdt.TierAgent}}))
	run("explain", texts(benchQueries["terms"], Query{Now: now, Explain: true}))
	run("fuzzy", texts(benchQueries["fuzzy"], Query{Now: now}))
	run("list", []Query{{Now: now, Namespace: "billing"}, {Now: now, Tags: []string{"redis"}}})
}

func benchApply(b *testing.B, perBatch int) {
	ix, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	pool := make([]crdt.Memory, 1000)
	for i := range pool {
		pool[i] = benchMemory(rng, i)
	}
	var lat []time.Duration
	n := 0
	for b.Loop() {
		ms := make([]crdt.Memory, perBatch)
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
