package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// now is the reference time of every test query.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// testLogWriter routes log lines to t.Log.
type testLogWriter struct{ tb testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// testOptions are the options of a test's index: its batches are written
// at once, so that a close does not wait out the second the index
// gathers them for (the tests of that delay set it).
func testOptions(tb testing.TB) Options {
	tb.Helper()
	return Options{Logger: slog.New(slog.NewTextHandler(testLogWriter{tb}, nil)), FlushDelay: -1}
}

// openTest opens an index in a fresh directory, closed at cleanup.
func openTest(tb testing.TB) *Index {
	tb.Helper()
	ix, err := Open(tb.TempDir(), testOptions(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := ix.Close(); err != nil {
			tb.Error(err)
		}
	})
	return ix
}

// mem builds an active agent note in namespace "proj", updated a day
// before now; opts adjust it.
func mem(id, title, content string, opts ...func(*model.Memory)) model.Memory {
	m := model.Memory{
		ID:         id,
		Namespace:  "proj",
		Title:      title,
		Content:    content,
		Kind:       "note",
		Tier:       model.TierAgent,
		Confidence: 0.8,
		Status:     model.StatusActive,
		Provenance: model.Provenance{Device: "dev1", UpdatedAt: now.Add(-24 * time.Hour)},
	}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func withNamespace(ns string) func(*model.Memory) { return func(m *model.Memory) { m.Namespace = ns } }
func withKind(k string) func(*model.Memory)       { return func(m *model.Memory) { m.Kind = k } }
func withTier(t model.Tier) func(*model.Memory)   { return func(m *model.Memory) { m.Tier = t } }
func withTags(tags ...string) func(*model.Memory) { return func(m *model.Memory) { m.Tags = tags } }
func withStatus(s model.Status) func(*model.Memory) {
	return func(m *model.Memory) { m.Status = s }
}
func withUpdated(t time.Time) func(*model.Memory) {
	return func(m *model.Memory) { m.Provenance.UpdatedAt = t }
}
func withExpires(t time.Time) func(*model.Memory) { return func(m *model.Memory) { m.ExpiresAt = t } }

// withRevisionsBy gives the memory a revision by each device.
func withRevisionsBy(devices ...string) func(*model.Memory) {
	return func(m *model.Memory) {
		for i, d := range devices {
			m.Revisions = append(m.Revisions, model.Revision{ID: fmt.Sprintf("r%d", i), Text: m.Content, Device: d, At: m.Provenance.UpdatedAt})
		}
	}
}

func apply(tb testing.TB, ix *Index, ms ...model.Memory) {
	tb.Helper()
	if err := ix.Apply(ms, nil, 1); err != nil {
		tb.Fatal(err)
	}
}

// search runs q at now unless q sets Now.
func search(tb testing.TB, ix *Index, q Query) Result {
	tb.Helper()
	if q.Now.IsZero() {
		q.Now = now
	}
	res, err := ix.Search(context.Background(), q)
	if err != nil {
		tb.Fatalf("Search(%+v): %v", q, err)
	}
	return res
}

func ids(res Result) []string {
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}

// sameSet reports whether a and b hold the same ids in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestTitleRanksAboveDeepContent(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	filler := strings.Repeat("The deploy script copies the build to the staging host and restarts the service. ", 8)
	apply(t, ix,
		mem("deep", "Staging deploy notes", filler+"Remember connection pooling."),
		mem("title", "Connection pooling for the API", "Keep at most twenty open connections per worker."),
		mem("other", "Logging format", "Logs are JSON lines with a level and a message."),
	)
	res := search(t, ix, Query{Text: "pooling"})
	if got, want := ids(res), []string{"title", "deep"}; !slices.Equal(got, want) {
		t.Fatalf("hits = %v, want %v", got, want)
	}
	if res.Total != 2 || res.Fuzzy {
		t.Errorf("Total = %d, Fuzzy = %v; want 2, false", res.Total, res.Fuzzy)
	}
}

func TestTermsAreOR(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("both", "Redis cache eviction", "Eviction uses LRU."),
		mem("redis", "Redis sentinel", "Three sentinels watch the primary."),
		mem("none", "Kafka topics", "Topics have twelve partitions."),
	)
	res := search(t, ix, Query{Text: "redis eviction"})
	if got, want := ids(res), []string{"both", "redis"}; !slices.Equal(got, want) {
		t.Fatalf("hits = %v, want %v (both terms rank first)", got, want)
	}
}

func TestStemming(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix, mem("runs", "Nightly job", "The compaction worker runs every night."))
	for _, text := range []string{"running", "run", "runs", "RUNS"} {
		if got := ids(search(t, ix, Query{Text: text})); !slices.Equal(got, []string{"runs"}) {
			t.Errorf("%q: hits = %v, want [runs]", text, got)
		}
	}
}

// TestIrregularForms: a question in the base form finds the past forms
// and irregular plurals that the stemmer cannot join to it, and those
// forms find each other.
func TestIrregularForms(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("chose", "", "I chose the agency because it helps LGBTQ families"),
		mem("went", "", "We went camping by the lake last weekend"),
		mem("bought", "", "Bought a new guitar for the band"),
		mem("children", "", "The children loved the pottery class"),
		mem("other", "", "The agency sends a newsletter"),
	)
	for query, want := range map[string]string{
		"why did she choose it": "chose",
		"chosen":                "chose",
		"where did they go":     "went",
		"buy":                   "bought",
		"child":                 "children",
	} {
		if got := ids(search(t, ix, Query{Text: query})); len(got) == 0 || got[0] != want {
			t.Errorf("%q: results %v, want %s first", query, got, want)
		}
	}
}

func TestIdentifierParts(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("code", "Config loading", "Call parseConfig from internal/loader/file_source.go; it sets snake_case_name and uses HTTPServer."),
		mem("other", "Unrelated", "Nothing about code here."),
	)
	for _, text := range []string{"parseConfig", "parse", "config", "file_source.go", "file", "source", "loader", "snake", "case", "http", "server", "httpserver"} {
		if got := ids(search(t, ix, Query{Text: text})); len(got) == 0 || got[0] != "code" {
			t.Errorf("%q: hits = %v, want code first", text, got)
		}
	}
}

func TestPhrases(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("adjacent", "Retries", "Retry the request with exponential backoff and jitter."),
		mem("apart", "Backoff", "Backoff is linear here, not exponential; retry the request once."),
		mem("stop", "Cache", "Put the cache in front of the database."),
	)
	tests := []struct {
		text  string
		want  []string // in any order
		match string
		loose bool // no memory holds the phrases: their words, loose
	}{
		{`exponential backoff`, []string{"adjacent", "apart"}, MatchTerms, false},
		{`"exponential backoff"`, []string{"adjacent"}, MatchPhrase, false},
		{`"exponential backoff" retry`, []string{"adjacent"}, MatchPhrase, false},
		{`"backoff exponential"`, []string{"adjacent", "apart"}, MatchTerms, true},
		{`"cache in front of the database"`, []string{"stop"}, MatchPhrase, false},
		{`"cache in front of a database"`, []string{"stop"}, MatchPhrase, false}, // stop words are gaps
		{`"Cache" "database"`, []string{"stop"}, MatchPhrase, false},
		{`"cache" "exponential"`, []string{"stop", "adjacent", "apart"}, MatchTerms, true},
		{`"exponential cache" jitter`, []string{"adjacent", "apart", "stop"}, MatchTerms, true},
		{`"exponentiel backof"`, nil, "", false}, // quoted words stay exact
		// A quote without a partner starts loose text.
		{`"exponential backoff`, []string{"adjacent", "apart"}, MatchTerms, false},
		{`"exponential backoff" "cache`, []string{"adjacent"}, MatchPhrase, false},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			res := search(t, ix, Query{Text: tt.text, Explain: true})
			if got := ids(res); !sameSet(got, tt.want) {
				t.Fatalf("hits = %v, want %v", got, tt.want)
			}
			if res.Fuzzy {
				t.Error("Fuzzy = true")
			}
			if res.Loose != tt.loose {
				t.Errorf("Loose = %v, want %v", res.Loose, tt.loose)
			}
			for _, h := range res.Hits {
				if h.Explain.Match != tt.match {
					t.Errorf("%s: Match = %q, want %q", h.ID, h.Explain.Match, tt.match)
				}
			}
		})
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	day := func(n int) time.Time { return now.Add(time.Duration(-n) * 24 * time.Hour) }
	apply(t, ix,
		mem("a", "Token rotation", "Rotate the token weekly.", withTags("auth", "ops"), withUpdated(day(1)), withTier(model.TierHuman)),
		mem("b", "Token scopes", "Scopes limit the token.", withTags("auth"), withKind("decision"), withUpdated(day(5)), withRevisionsBy("dev1", "dev2")),
		mem("c", "Token storage", "Store the token in the keychain.", withNamespace("other"), withUpdated(day(10)), withTier(model.TierAuto)),
		mem("stale", "Token format", "Tokens are opaque strings.", withStatus(model.StatusStale), withUpdated(day(20))),
		mem("archived", "Token history", "We used JWT token before.", withStatus(model.StatusArchived), withUpdated(day(30))),
		mem("compacted", "Token notes", "Summary of token notes.", withStatus(model.StatusCompacted), withUpdated(day(40))),
	)
	tests := []struct {
		name string
		q    Query
		want []string
	}{
		{"default statuses", Query{}, []string{"a", "b", "c", "stale"}},
		{"namespace", Query{Namespace: "proj"}, []string{"a", "b", "stale"}},
		{"other namespace", Query{Namespace: "other"}, []string{"c"}},
		{"unknown namespace", Query{Namespace: "nope"}, nil},
		{"one tag", Query{Tags: []string{"auth"}}, []string{"a", "b"}},
		{"all tags", Query{Tags: []string{"auth", "ops"}}, []string{"a"}},
		{"kind", Query{Kind: "decision"}, []string{"b"}},
		{"status archived", Query{Statuses: []model.Status{model.StatusArchived}}, []string{"archived"}},
		{"statuses", Query{Statuses: []model.Status{model.StatusActive, model.StatusCompacted}}, []string{"a", "b", "c", "compacted"}},
		{"deleted is never indexed", Query{Statuses: []model.Status{model.StatusDeleted}}, nil},
		{"tier", Query{Tiers: []model.Tier{model.TierHuman}}, []string{"a"}},
		{"tiers", Query{Tiers: []model.Tier{model.TierHuman, model.TierAuto}}, []string{"a", "c"}},
		{"since", Query{Since: day(5)}, []string{"a", "b"}},
		{"until", Query{Until: day(5)}, []string{"c", "stale"}},
		{"since and until", Query{Since: day(10), Until: day(1)}, []string{"b", "c"}},
		{"device of provenance or a revision", Query{Device: "dev1"}, []string{"a", "b", "c", "stale"}},
		{"device of a revision only", Query{Device: "dev2"}, []string{"b"}},
		{"device of no memory", Query{Device: "dev3"}, nil},
		{"device and tag", Query{Device: "dev2", Tags: []string{"ops"}}, nil},
		{"equal bounds", Query{Since: day(5), Until: day(5)}, nil},
		{"empty window", Query{Since: now.Add(time.Hour)}, nil},
		{"empty window and namespace", Query{Namespace: "proj", Until: day(100)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, text := range []string{"token", ""} {
				q := tt.q
				q.Text = text
				res := search(t, ix, q)
				if got := ids(res); !sameSet(got, tt.want) {
					t.Errorf("text %q: hits = %v, want %v", text, got, tt.want)
				}
				if res.Total != uint64(len(tt.want)) {
					t.Errorf("text %q: Total = %d, want %d", text, res.Total, len(tt.want))
				}
			}
		})
	}
}

func TestListingNewestFirst(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("old", "Old", "x", withUpdated(now.Add(-72*time.Hour))),
		mem("new", "New", "x", withUpdated(now.Add(-time.Hour))),
		mem("mid", "Mid", "x", withUpdated(now.Add(-24*time.Hour))),
		mem("elsewhere", "Elsewhere", "x", withNamespace("other")),
	)
	res := search(t, ix, Query{Namespace: "proj", Explain: true})
	if got, want := ids(res), []string{"new", "mid", "old"}; !slices.Equal(got, want) {
		t.Fatalf("hits = %v, want %v", got, want)
	}
	if res.Hits[0].Explain.Match != MatchFilter || res.Hits[0].Score != 0 {
		t.Errorf("listing hit = %+v, explain %+v; want score 0, match %q", res.Hits[0], res.Hits[0].Explain, MatchFilter)
	}
	res = search(t, ix, Query{Namespace: "proj", Limit: 2})
	if got, want := ids(res), []string{"new", "mid"}; !slices.Equal(got, want) || res.Total != 3 {
		t.Errorf("limit 2: hits = %v, Total = %d; want %v, 3", got, res.Total, want)
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("expired", "Cache TTL", "cache entry", withExpires(now.Add(-time.Minute))),
		mem("now", "Cache TTL", "cache entry", withExpires(now)),
		mem("later", "Cache TTL", "cache entry", withExpires(now.Add(time.Minute))),
		mem("never", "Cache TTL", "cache entry"),
	)
	for _, text := range []string{"cache", ""} {
		if got, want := ids(search(t, ix, Query{Text: text})), []string{"later", "never"}; !sameSet(got, want) {
			t.Errorf("text %q: hits = %v, want %v", text, got, want)
		}
	}
	later := search(t, ix, Query{Text: "cache", Now: now.Add(time.Hour)})
	if got := ids(later); !slices.Equal(got, []string{"never"}) {
		t.Errorf("an hour later: hits = %v, want [never]", got)
	}
}

func TestFuzzyFallback(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("pg", "Postgres vacuum", "Autovacuum runs on the postgres primary."),
		mem("ids", "Identifiers", "Use parseConfiguration before startup."),
		mem("other", "Kafka", "Consumers commit offsets."),
		mem("happy", "Mood", "The team was happy with the release."),
		mem("stopping", "Jobs", "The nightly jobs keep stopping early."),
		mem("deploy", "Rollout", "Deployments wait for the canary."),
		mem("retries", "Client", "Retries use exponential backoff."),
	)
	// The index holds stems: a misspelt word finds the memories of a word
	// within its edits whatever the stem dropped or changed (spell.go),
	// and nothing when only the stem is that close.
	tests := []struct {
		text      string
		want      []string
		wantFuzzy bool
	}{
		{"postgres", []string{"pg"}, false},
		{"postgress", []string{"pg"}, true},     // one edit
		{"postgrse", []string{"pg"}, true},      // a transposition is one edit
		{"atovakuum", []string{"pg"}, true},     // two edits from 8 characters
		{"ofsetz", nil, false},                  // two edits under 8 characters
		{"configuraton", []string{"ids"}, true}, // identifier part
		{"ofsets", []string{"other"}, true},
		{"kfk", nil, false},         // under 4 characters: no edits
		{`"postgress"`, nil, false}, // quoted text is exact
		{"kafak consumer", []string{"other"}, false},
		{"zzzzzzzz", nil, false},
		{"hapy", []string{"happy"}, true},          // happy is stemmed happi
		{"stoping", []string{"stopping"}, true},    // stopping is stemmed stop
		{"deploymetns", []string{"deploy"}, true},  // deployments is stemmed deploy
		{"exponentail", []string{"retries"}, true}, // exponential is stemmed exponenti
		{"retires", []string{"retries"}, true},     // retries is stemmed retri
		{"canaryy", []string{"deploy"}, true},
		{"rnu", nil, false},       // under 4 characters: exact
		{"deploi", nil, false},    // the stem itself, but two edits from any of its words
		{"backofxyz", nil, false}, // three edits from any word of backoff
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			res := search(t, ix, Query{Text: tt.text, Explain: true})
			if got := ids(res); !slices.Equal(got, tt.want) {
				t.Fatalf("hits = %v, want %v", got, tt.want)
			}
			if res.Fuzzy != tt.wantFuzzy {
				t.Errorf("Fuzzy = %v, want %v", res.Fuzzy, tt.wantFuzzy)
			}
			for _, h := range res.Hits {
				if want := map[bool]string{true: MatchFuzzy, false: MatchTerms}[tt.wantFuzzy]; h.Explain.Match != want {
					t.Errorf("Match = %q, want %q", h.Explain.Match, want)
				}
			}
		})
	}
}

func TestFuzzyOnlyWithoutExactHits(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("exact", "Postgres", "postgres"),
		mem("near", "Postgrex", "the postgrex driver"),
	)
	res := search(t, ix, Query{Text: "postgres"})
	if got := ids(res); !slices.Equal(got, []string{"exact"}) || res.Fuzzy {
		t.Errorf("hits = %v, Fuzzy = %v; want [exact], false", got, res.Fuzzy)
	}
}

func TestMultipliers(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	text := "Run migrations before deploying the schema change."
	apply(t, ix,
		mem("human", "Migrations", text, withTier(model.TierHuman)),
		mem("auto", "Migrations", text, withTier(model.TierAuto)),
		mem("new", "Rollbacks", text, withUpdated(now.Add(-time.Hour))),
		mem("old", "Rollbacks", text, withUpdated(now.Add(-90*24*time.Hour))),
		mem("active", "Backfills", text),
		mem("stale", "Backfills", text, withStatus(model.StatusStale)),
		mem("sure", "Seeding", text, func(m *model.Memory) { m.Confidence = 1 }),
		mem("unsure", "Seeding", text, func(m *model.Memory) { m.Confidence = 0.1 }),
	)
	res := search(t, ix, Query{Text: "migrations rollbacks backfills seeding", Explain: true})
	pos := map[string]int{}
	for i, h := range res.Hits {
		pos[h.ID] = i
		e := h.Explain
		product := e.BM25 * e.Confidence * e.Tier * e.Recency * e.Status
		if math.Abs(product-e.Final) > 1e-12 || h.Score != e.Final {
			t.Errorf("%s: components %+v multiply to %v; Final %v, Score %v", h.ID, *e, product, e.Final, h.Score)
		}
		if e.BM25 <= 0 {
			t.Errorf("%s: BM25 = %v, want > 0", h.ID, e.BM25)
		}
	}
	if len(pos) != 8 {
		t.Fatalf("hits = %v, want all 8", ids(res))
	}
	for _, pair := range [][2]string{{"human", "auto"}, {"new", "old"}, {"active", "stale"}, {"sure", "unsure"}} {
		if pos[pair[0]] > pos[pair[1]] {
			t.Errorf("%s ranks below %s: %v", pair[0], pair[1], ids(res))
		}
	}
	byID := map[string]*api.Explanation{}
	for _, h := range res.Hits {
		byID[h.ID] = h.Explain
	}
	checks := []struct {
		id    string
		field string
		got   float64
		want  float64
	}{
		{"human", "tier", byID["human"].Tier, 1.2},
		{"auto", "tier", byID["auto"].Tier, 0.85},
		{"new", "tier", byID["new"].Tier, 1.0},
		{"stale", "status", byID["stale"].Status, 0.6},
		{"active", "status", byID["active"].Status, 1.0},
		{"sure", "confidence", byID["sure"].Confidence, 1.0},
		{"unsure", "confidence", byID["unsure"].Confidence, 0.55},
		{"old", "recency", byID["old"].Recency, 0.7 + 0.3/8}, // three half-lives
		{"active", "recency", byID["active"].Recency, 0.7 + 0.3*math.Exp2(-1.0/30)},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s %s = %v, want %v", c.id, c.field, c.got, c.want)
		}
	}
}

func TestHalfLifeOption(t *testing.T) {
	t.Parallel()
	ix, err := Open(t.TempDir(), Options{HalfLife: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	apply(t, ix, mem("m", "Half life", "decay", withUpdated(now.Add(-24*time.Hour))))
	res := search(t, ix, Query{Text: "decay", Explain: true})
	if got := res.Hits[0].Explain.Recency; math.Abs(got-0.85) > 1e-9 {
		t.Errorf("Recency after one half-life = %v, want 0.85", got)
	}
	if _, err := Open(t.TempDir(), Options{HalfLife: -time.Hour}); err == nil {
		t.Error("negative half-life: no error")
	}
}

func TestLimit(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	var ms []model.Memory
	for i := range 30 {
		ms = append(ms, mem(fmt.Sprintf("m%02d", i), "Shared term", fmt.Sprintf("note %d about indexing", i)))
	}
	apply(t, ix, ms...)
	for _, tt := range []struct{ limit, want int }{{0, 10}, {3, 3}, {100, 30}, {5000, 30}} {
		res := search(t, ix, Query{Text: "indexing", Limit: tt.limit})
		if len(res.Hits) != tt.want || res.Total != 30 {
			t.Errorf("Limit %d: %d hits, Total %d; want %d, 30", tt.limit, len(res.Hits), res.Total, tt.want)
		}
	}
}

func TestWatermarkPersisted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ix, err := Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if w, err := ix.Watermark(); err != nil || w != 0 {
		t.Fatalf("new index: Watermark = %d, %v; want 0", w, err)
	}
	if err := ix.Apply([]model.Memory{mem("a", "Alpha", "first note")}, nil, 41); err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply([]model.Memory{mem("b", "Beta", "second note")}, nil, 42); err != nil {
		t.Fatal(err)
	}
	if w, err := ix.Watermark(); err != nil || w != 42 {
		t.Fatalf("Watermark = %d, %v; want 42", w, err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	ix, err = Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if w, err := ix.Watermark(); err != nil || w != 42 {
		t.Errorf("reopened: Watermark = %d, %v; want 42", w, err)
	}
	if n, err := ix.Count(); err != nil || n != 2 {
		t.Errorf("reopened: Count = %d, %v; want 2", n, err)
	}
	if got := ids(search(t, ix, Query{Text: "note"})); !sameSet(got, []string{"a", "b"}) {
		t.Errorf("reopened: hits = %v, want [a b]", got)
	}
}

func TestSchemaChangeRecreates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ix, err := Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.idx.SetInternal(schemaKey, []byte("0")); err != nil {
		t.Fatal(err)
	}
	apply(t, ix, mem("a", "Alpha", "note"))
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	n, _ := ix.Count()
	w, _ := ix.Watermark()
	if n != 0 || w != 0 {
		t.Errorf("after schema change: Count = %d, Watermark = %d; want 0, 0", n, w)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("a", "Queue", "retry queue"),
		mem("b", "Queue", "retry queue"),
		mem("c", "Queue", "retry queue"),
	)
	if err := ix.Apply(nil, []string{"a"}, 2); err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply([]model.Memory{mem("b", "Queue", "retry queue", withStatus(model.StatusDeleted))}, nil, 3); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, ix, Query{Text: "queue"})); !slices.Equal(got, []string{"c"}) {
		t.Errorf("hits = %v, want [c]", got)
	}
	if n, err := ix.Count(); err != nil || n != 1 {
		t.Errorf("Count = %d, %v; want 1", n, err)
	}
	// Deleting an unknown id is not an error.
	if err := ix.Apply(nil, []string{"missing"}, 4); err != nil {
		t.Error(err)
	}
}

func TestReplace(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix, mem("a", "Broker", "we use rabbitmq"))
	apply(t, ix, mem("a", "Broker", "we moved to nats"))
	if got := ids(search(t, ix, Query{Text: "rabbitmq"})); len(got) != 0 {
		t.Errorf("old content still matches: %v", got)
	}
	if got := ids(search(t, ix, Query{Text: "nats"})); !slices.Equal(got, []string{"a"}) {
		t.Errorf("new content: hits = %v, want [a]", got)
	}
	if n, _ := ix.Count(); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}

func TestApplyBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	if err := ix.Apply([]model.Memory{mem("a", "A", "a")}, nil, 5); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		put []model.Memory
		del []string
	}{
		{put: []model.Memory{mem("b", "B", "b"), mem("", "No id", "x")}},
		{del: []string{"a", ""}},
	}
	for _, b := range bad {
		if err := ix.Apply(b.put, b.del, 9); err == nil {
			t.Errorf("Apply(%v, %q): no error", b.put, b.del)
		}
	}
	n, _ := ix.Count()
	w, _ := ix.Watermark()
	if n != 1 || w != 5 {
		t.Errorf("Count = %d, Watermark = %d; want 1, 5", n, w)
	}
}

func TestInvalidQueries(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	tests := []struct {
		name string
		q    Query
	}{
		{"negative limit", Query{Limit: -1}},
		{"since after until", Query{Since: now, Until: now.Add(-time.Second)}},
		{"unknown status", Query{Statuses: []model.Status{"gone"}}},
		{"unknown tier", Query{Tiers: []model.Tier{"root"}}},
		{"empty tag", Query{Tags: []string{""}}},
		{"invalid utf-8", Query{Text: "caf\xe9"}},
		{"too many words", Query{Text: strings.Repeat("word ", MaxQueryWords+1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ix.Search(context.Background(), tt.q)
			if !errors.Is(err, ErrInvalidQuery) {
				t.Errorf("err = %v, want ErrInvalidQuery", err)
			}
		})
	}
}

func TestTextIsLiteral(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("colon", "Keys", "the key format is tenant:user"),
		mem("plus", "Flags", "pass -x to skip, +y to force"),
	)
	tests := []struct {
		text string
		want []string
	}{
		{"tenant:user", []string{"colon"}},
		{"title:keys", []string{"colon"}}, // the words title and keys
		{"-x", []string{"plus"}},
		{"+y -x", []string{"plus"}},
		{"skip AND force", []string{"plus"}},
		{"*", nil},
		{"(keys OR flags)", []string{"colon", "plus"}},
		{`\ ~ ^2 /re/ [a TO b] {}`, nil},
		{"the of and", nil}, // stop words only
		{`""`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := ids(search(t, ix, Query{Text: tt.text})); !sameSet(got, tt.want) {
				t.Errorf("hits = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	ix, err := Open(t.TempDir(), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := ix.Apply(nil, nil, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
	if _, err := ix.Search(context.Background(), Query{Text: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Search after Close: %v, want ErrClosed", err)
	}
	if _, err := ix.Count(); !errors.Is(err, ErrClosed) {
		t.Errorf("Count after Close: %v, want ErrClosed", err)
	}
	if _, err := ix.Watermark(); !errors.Is(err, ErrClosed) {
		t.Errorf("Watermark after Close: %v, want ErrClosed", err)
	}
}

func TestConcurrentSearchAndApply(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix, mem("seed", "Seed", "concurrent indexing"))
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range 50 {
				m := mem(fmt.Sprintf("w%d-%d", w, i), "Writer", "concurrent indexing batch")
				if err := ix.Apply([]model.Memory{m}, nil, uint64(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if _, err := ix.Search(context.Background(), Query{Text: "concurrent", Now: now}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n, _ := ix.Count(); n != 101 {
		t.Errorf("Count = %d, want 101", n)
	}
}

func TestSearchCancelled(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix, mem("a", "A", "cancel me"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Search(ctx, Query{Text: "cancel", Now: now}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestIdentParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"word", []string{"word"}},
		{"parseConfig", []string{"parse", "Config"}},
		{"HTTPServer", []string{"HTTP", "Server"}},
		{"getHTTPResponseCode", []string{"get", "HTTP", "Response", "Code"}},
		{"snake_case_name", []string{"snake", "case", "name"}},
		{"bar.go", []string{"bar", "go"}},
		{"v2Config", []string{"v2", "Config"}},
		{"_private", []string{"private"}},
		{"ÜberFall", []string{"Über", "Fall"}},
		{"ABC", []string{"ABC"}},
		{"don't", []string{"don't"}},
		{"user’s", []string{"user’s"}},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range identParts([]byte(tt.in)) {
			got = append(got, tt.in[p[0]:p[1]])
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("identParts(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMonthAndYearMatch(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	learned := func(y int, mo time.Month) func(*model.Memory) {
		return func(m *model.Memory) { m.Provenance.CreatedAt = time.Date(y, mo, 10, 9, 0, 0, 0, time.UTC) }
	}
	apply(t, ix,
		mem("june", "", "Rotated the signing keys of the staging cluster", learned(2025, time.June)),
		mem("march", "", "Rotated the signing keys of the production cluster", learned(2026, time.March)),
	)
	for text, want := range map[string]string{"keys rotated in June": "june", "keys rotated in March 2026": "march", "2025 key rotation": "june"} {
		if got := ids(search(t, ix, Query{Text: text})); len(got) != 2 || got[0] != want {
			t.Errorf("%q: hits = %v, want %s first", text, got, want)
		}
	}
}

func TestDerivedTitleCountsOnce(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	// Both say "cache" once in their text; one has the start of its text
	// as its title, as when no title is given.
	apply(t, ix,
		mem("derived", "Cache invalidation runs on every deploy", "Cache invalidation runs on every deploy"),
		mem("titled", "Deploys", "Every deploy flushes the cache entirely"),
	)
	res := search(t, ix, Query{Text: "cache", Explain: true})
	if len(res.Hits) != 2 {
		t.Fatalf("hits = %v", ids(res))
	}
	if d, o := res.Hits[0].Explain.BM25, res.Hits[1].Explain.BM25; d > 1.5*o || o > 1.5*d {
		t.Errorf("bm25 %v vs %v: a derived title must not double its words", d, o)
	}
}

// The ranking fields kept in memory when a memory is indexed weigh exactly
// as those read back from the index after a restart, and an update
// replaces them at once.
func TestStoredFieldsCachedAndRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ix, err := Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	m := mem("a", "Retries", "Retry the request with backoff", withTier(model.TierHuman), func(m *model.Memory) {
		m.Confidence = 0.65
		m.Provenance.Session = "s-9"
		m.Provenance.UpdatedAt = now.Add(-50*time.Hour - 1234567*time.Microsecond)
	})
	apply(t, ix, m, mem("b", "Other", "Retry budget per client"))
	cached := search(t, ix, Query{Text: "retry backoff", Explain: true})

	m.Status = model.StatusStale
	apply(t, ix, m)
	if h := search(t, ix, Query{Text: "retry backoff", Explain: true}).Hits[0]; h.Explain.Status != statusWeights[model.StatusStale] {
		t.Errorf("after an update: %+v", h.Explain)
	}
	m.Status = model.StatusActive
	apply(t, ix, m)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	ix, err = Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	read := search(t, ix, Query{Text: "retry backoff", Explain: true})
	if len(read.Hits) != 2 || read.Hits[0].ID != "a" || read.Hits[0].Session != "s-9" {
		t.Fatalf("after reopening: %+v", read.Hits)
	}
	// BM25 moves with the index's statistics (the updates left deleted
	// documents behind); the multipliers must not.
	multipliers := func(e *api.Explanation) api.Explanation {
		m := *e
		m.BM25, m.Final = 0, 0
		return m
	}
	for i := range read.Hits {
		if c, r := multipliers(cached.Hits[i].Explain), multipliers(read.Hits[i].Explain); c != r {
			t.Errorf("%s: cached %+v, read %+v", read.Hits[i].ID, c, r)
		}
	}
}

// When enough memories hold every query term, only they are ranked; a term
// counts in the title or the tags as well as in the content.
func TestAllTermsPass(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	var ms []model.Memory
	for i := range minCandidates + 10 {
		ms = append(ms, mem(fmt.Sprintf("both%02d", i), "", fmt.Sprintf("Alpha service calls the beta service, case %d", i)))
	}
	for i := range 5 {
		ms = append(ms, mem(fmt.Sprintf("alpha%d", i), "", fmt.Sprintf("Alpha service alone, case %d", i)))
	}
	ms = append(ms, mem("titled", "Alpha rollout", "The rollout went fine", withTags("beta")))
	apply(t, ix, ms...)

	res := search(t, ix, Query{Text: "alpha beta"})
	if res.Total != minCandidates+11 {
		t.Errorf("Total = %d, want the %d memories holding both words, one of them by its title and tag", res.Total, minCandidates+11)
	}
	if got := search(t, ix, Query{Text: "alpha beta", IDs: []string{"titled", "alpha0"}}); len(got.Hits) != 2 {
		t.Errorf("few matches: hits = %v, want both (any word may match)", ids(got))
	}
}

// TestAsks: a memory that asks a question is flagged on its hits; a
// question mark inside a URL or a word is not a question.
func TestAsks(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("asks", "", "Which pool size should billing use?"),
		mem("quoted", "", `She said "which pool size?" and left`),
		mem("url", "", "The pool size is in https://example.com/config?pool=50 for billing"),
		mem("plain", "", "The billing pool size is fifty"),
	)
	want := map[string]bool{"asks": true, "quoted": true}
	res := search(t, ix, Query{Text: "pool size"})
	if len(res.Hits) != 4 {
		t.Fatalf("hits = %v, want all four", ids(res))
	}
	for _, h := range res.Hits {
		if h.Asks != want[h.ID] {
			t.Errorf("%s: asks = %v, want %v", h.ID, h.Asks, want[h.ID])
		}
	}
}

// TestDevices: the devices that wrote indexed memories, by prefix, in
// order, at most the limit; a device of no memory is not listed.
func TestDevices(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	apply(t, ix,
		mem("a", "A", "x", func(m *model.Memory) { m.Provenance.Device = "KQ7ABC" }),
		mem("b", "B", "x", func(m *model.Memory) { m.Provenance.Device = "KQ7XYZ" }, withRevisionsBy("KQ7XYZ", "ZZ9")),
	)
	for _, tt := range []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"", 10, []string{"KQ7ABC", "KQ7XYZ", "ZZ9"}},
		{"KQ7", 10, []string{"KQ7ABC", "KQ7XYZ"}},
		{"KQ7", 1, []string{"KQ7ABC"}},
		{"ZZ9", 10, []string{"ZZ9"}},
		{"zz9", 10, nil},
		{"NONE", 10, nil},
	} {
		got, err := ix.Devices(tt.prefix, tt.limit)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Devices(%q, %d) = %q, %v; want %q", tt.prefix, tt.limit, got, err, tt.want)
		}
	}
}

// TestListingPagesByCursor: paging a listing with each page's Next shows
// every memory once, in order, when many share an update time across
// the pages' boundaries; a cursor whose memory is gone still places the
// page.
func TestListingPagesByCursor(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	same := now.Add(-time.Hour).Truncate(time.Millisecond)
	var ms []model.Memory
	var want []string
	for i := range 45 {
		id := fmt.Sprintf("m%03d", i)
		at := same
		switch {
		case i < 5:
			at = same.Add(time.Duration(5-i) * time.Minute) // newer, each its own time
		case i >= 40:
			at = same.Add(-time.Duration(i) * time.Minute) // older
		}
		ms = append(ms, mem(id, "Note", "x", withUpdated(at)))
		want = append(want, id)
	}
	// Newest first; in the shared millisecond, ids last first.
	slices.Reverse(want[5:40])
	apply(t, ix, ms...)
	for _, limit := range []int{1, 7, 10, 35, 45, 50} {
		var got []string
		var after *api.Cursor
		for pages := 0; ; pages++ {
			if pages > 50 {
				t.Fatalf("limit %d: more than 50 pages", limit)
			}
			res := search(t, ix, Query{Limit: limit, After: after})
			got = append(got, ids(res)...)
			if res.Next == nil {
				if len(res.Hits) == limit {
					t.Fatalf("limit %d: a full page without a next cursor", limit)
				}
				break
			}
			after = res.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: pages list\n%v\nwant\n%v", limit, got, want)
		}
	}
	// The memory a cursor names is gone (deleted, updated): the next page
	// still starts at its place.
	res := search(t, ix, Query{After: &api.Cursor{Updated: same, ID: "m020x"}, Limit: 3})
	if got := ids(res); !slices.Equal(got, []string{"m020", "m019", "m018"}) {
		t.Errorf("after a cursor of no memory: %v", got)
	}
}
