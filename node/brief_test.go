package node

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/model"
)

// importProject imports a generated project of size memories into ns and
// returns the display ids of its key memories.
func importProject(t *testing.T, n *Node, ns string, size int, seed uint64) []string {
	t.Helper()
	var buf bytes.Buffer
	keys, err := corpus.Project{NS: ns, Size: size, Now: n.now(), Seed: seed}.Write(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Import(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return keys
}

// briefIDs returns the ids of every memory a brief shows.
func briefIDs(b *api.Brief) []string {
	var ids []string
	for _, items := range b.Sections() {
		for _, it := range *items {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// checkTokens fails unless b's text holds its budget by the tokenizer and
// b.Tokens is within 2 % of the tokenizer's count.
func checkTokens(t *testing.T, b *api.Brief) {
	t.Helper()
	text := b.Text()
	got := tokens.Count(text)
	if got > b.Budget {
		t.Errorf("%s brief of budget %d: %d tokens by the tokenizer", b.Format, b.Budget, got)
	}
	if diff := b.Tokens - got; diff*50 > got || -diff*50 > got {
		t.Errorf("%s brief says %d tokens; the tokenizer counts %d", b.Format, b.Tokens, got)
	}
}

// TestBriefShowsKeyMemories: in a project whose key memories (decisions,
// conventions, preferences, open tasks, a superseded decision, a
// contradiction) were written before hundreds of notes, a 2,000-token brief
// shows every key memory, in Markdown, within its budget by the tokenizer.
func TestBriefShowsKeyMemories(t *testing.T) {
	t.Parallel()
	const seed = 1
	t.Logf("seed %d", seed)
	n := testNode(t, "")
	keys := importProject(t, n, "shop", 300, seed)
	b, err := n.Context(context.Background(), api.ContextRequest{Namespace: "shop", Budget: 2000})
	if err != nil {
		t.Fatal(err)
	}
	shown := briefIDs(&b)
	for _, k := range keys {
		if !slices.Contains(shown, k) {
			t.Errorf("key memory %s is not in the brief", k)
		}
	}
	if len(b.StaleAlerts) == 0 || b.StaleAlerts[0].ID != keys[10] || !strings.Contains(b.StaleAlerts[0].Reason, "superseded") {
		t.Errorf("stale alerts %+v, want the superseded decision first", b.StaleAlerts)
	}
	if len(b.Conflicts) != 2 {
		t.Errorf("conflicts %+v, want the contradiction's two memories", b.Conflicts)
	}
	checkTokens(t, &b)
	if t.Failed() {
		t.Logf("brief:\n%s", b.Markdown())
	}
}

// TestBriefTokensAreCounted: the brief holds its budget by the tokenizer's
// count of the text emitted, in Markdown and JSON, and says how many
// tokens it holds within 2 %.
func TestBriefTokensAreCounted(t *testing.T) {
	t.Parallel()
	const seed = 2
	t.Logf("seed %d", seed)
	n := testNode(t, "")
	importProject(t, n, "shop", 400, seed)
	for _, format := range []string{api.FormatMarkdown, api.FormatJSON} {
		for _, budget := range []int{300, 500, 2000, 8000} {
			b, err := n.Context(context.Background(), api.ContextRequest{Namespace: "shop", Budget: budget, Format: format})
			if err != nil {
				t.Fatal(err)
			}
			if len(briefIDs(&b)) == 0 {
				t.Errorf("%s brief of %d tokens shows nothing", format, budget)
			}
			if b.Tokens < budget*8/10 && budget < 8000 {
				t.Errorf("%s brief of %d tokens uses only %d", format, budget, b.Tokens)
			}
			checkTokens(t, &b)
			if sum, whole := partsCount(&b), tokens.Count(b.Text()); (sum-whole)*50 > whole || (whole-sum)*50 > whole {
				t.Errorf("%s brief of %d tokens: its parts count %d, the whole %d", format, budget, sum, whole)
			}
		}
	}
}

// partsCount sums the token counts of a brief's parts, as the brief is
// filled: its head (or empty JSON), each section's heading, each item.
func partsCount(b *api.Brief) int {
	items := b.Sections()
	if b.Format == api.FormatJSON {
		empty := *b
		for _, it := range empty.Sections() {
			*it = []api.BriefItem{}
		}
		empty.Cycles = []api.Cycle{}
		sum := tokens.Count(string(empty.JSON()))
		for _, it := range items {
			for i := range *it {
				// The item's object without its braces, and one token
				// for them and the comma between items.
				j := api.CompactJSON(&(*it)[i])
				sum += tokens.Count(string(j[1:len(j)-1])) + 1
			}
		}
		return sum
	}
	sum := tokens.Count(b.Head())
	for sec, it := range items {
		if len(*it) > 0 {
			sum += tokens.Count(api.SectionHead(sec))
		}
		for i := range *it {
			sum += tokens.Count((*it)[i].Markdown())
		}
	}
	return sum
}

// TestBriefNearDuplicates: near duplicates (auto-linked) are shown once,
// as one memory with the count of the others, and their links to each
// other do not rank them above a memory with a real link.
func TestBriefNearDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	at := time.Now().Add(-time.Hour)
	base := "The nightly export job writes CSV files to the reports bucket in eu-west-1 and retries three times on failure"
	first := remember(t, n, api.RememberRequest{Namespace: "ops", Content: base, At: at})
	for i := range 4 {
		res := remember(t, n, api.RememberRequest{Namespace: "ops", Content: base + " again " + strings.Repeat("x", i+2), At: at})
		if len(res.Similar) == 0 {
			t.Fatalf("near duplicate %d found nothing similar", i)
		}
	}
	// Older, so that only its link can put it first.
	linked := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Grafana alerts page the on-call engineer through PagerDuty", At: at.Add(-time.Hour)})
	if _, err := n.Link(ctx, api.LinkRequest{From: linked.ID, Rel: "touches", To: "file:deploy/alerts.yaml"}); err != nil {
		t.Fatal(err)
	}
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Active) != 2 || b.Active[0].ID != linked.ID || b.Active[1].Similar != 4 {
		t.Fatalf("active = %+v, want the linked memory, then one of the five near duplicates standing for 4 others", b.Active)
	}
	if !strings.Contains(b.Markdown(), "And 4 similar notes") {
		t.Fatalf("markdown does not count the near duplicates:\n%s", b.Markdown())
	}
	_ = first
}

// TestBriefFollowsChanges: the brief sees every change at once: a memory
// forgotten leaves it, a supersedes link makes a stale alert, a memory
// restored comes back.
func TestBriefFollowsChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	old := remember(t, n, api.RememberRequest{Namespace: "p", Kind: "decision", Tier: model.TierHuman, Content: "Sessions are stored in Postgres"})
	gone := remember(t, n, api.RememberRequest{Namespace: "p", Content: "The build cache lives in /var/cache/build"})
	if _, err := n.Context(ctx, api.ContextRequest{Namespace: "p"}); err != nil {
		t.Fatal(err)
	}
	repl := remember(t, n, api.RememberRequest{Namespace: "p", Kind: "decision", Tier: model.TierHuman, Content: "Sessions are stored in Redis"})
	if _, err := n.Link(ctx, api.LinkRequest{From: repl.ID, Rel: "supersedes", To: old.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Forget(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "p"})
	if err != nil {
		t.Fatal(err)
	}
	ids := briefIDs(&b)
	if slices.Contains(ids, gone.ID) || len(b.StaleAlerts) != 1 || b.StaleAlerts[0].ID != old.ID || !slices.Contains(ids, repl.ID) {
		t.Fatalf("after the changes: %+v", b)
	}
	if _, err := n.Restore(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if b, _ = n.Context(ctx, api.ContextRequest{Namespace: "p"}); !slices.Contains(briefIDs(&b), gone.ID) {
		t.Fatalf("a restored memory is missing: %+v", b)
	}
	// A contradiction is a conflict until one side is retired: the other
	// side's standing follows the change of a memory it is linked to.
	wrong := remember(t, n, api.RememberRequest{Namespace: "p", Content: "The build cache lives in /tmp"})
	if _, err := n.Link(ctx, api.LinkRequest{From: wrong.ID, Rel: "contradicts", To: gone.ID}); err != nil {
		t.Fatal(err)
	}
	if b, _ = n.Context(ctx, api.ContextRequest{Namespace: "p"}); len(b.Conflicts) != 2 {
		t.Fatalf("conflicts %+v, want the two sides of the contradiction", b.Conflicts)
	}
	if _, err := n.Forget(ctx, wrong.ID); err != nil {
		t.Fatal(err)
	}
	if b, _ = n.Context(ctx, api.ContextRequest{Namespace: "p"}); len(b.Conflicts) != 0 || !slices.ContainsFunc(b.Active, func(it api.BriefItem) bool { return it.ID == gone.ID }) {
		t.Fatalf("after forgetting one side: conflicts %+v, active %+v", b.Conflicts, b.Active)
	}
}

// TestBriefTitleNotRepeated: a title that is the start of the content is
// not shown again.
func TestBriefTitleNotRepeated(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	remember(t, n, api.RememberRequest{Namespace: "p", Content: "Releases are tagged from main after the smoke tests pass"})
	remember(t, n, api.RememberRequest{Namespace: "p", Title: "Release tags", Content: "Tag from main after the smoke tests pass"})
	b, err := n.Context(context.Background(), api.ContextRequest{Namespace: "p"})
	if err != nil {
		t.Fatal(err)
	}
	md := b.Markdown()
	if strings.Count(md, "Releases are tagged from main") != 1 || !strings.Contains(md, "**Release tags**") {
		t.Fatalf("markdown:\n%s", md)
	}
}

// TestBriefAimedAtQuery: with a query (an agent's prompt), the brief holds
// the memories that match it well, within 600 tokens by default, and
// nothing when nothing matches well.
func TestBriefAimedAtQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	pgx := remember(t, n, api.RememberRequest{Namespace: "shop", Kind: "decision", Content: "Use pgx, not lib/pq, for every Postgres connection: lib/pq is in maintenance mode."})
	remember(t, n, api.RememberRequest{Namespace: "shop", Content: "The reports service exports CSV files every night."})
	remember(t, n, api.RememberRequest{Namespace: "shop", Content: "Payments go through the Stripe adapter in billing/stripe.go."})
	for i := range 30 {
		remember(t, n, api.RememberRequest{Namespace: "shop", Content: strings.Repeat("Postgres connection pools need tuning under load. ", 8) + crdt.NewID() + strings.Repeat(" x", i)})
	}
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "shop", Query: `Please switch the reports service to the "lib/pq" Postgres driver, it should be simple`})
	if err != nil {
		t.Fatal(err)
	}
	if b.Budget != 600 || len(b.Matches) == 0 || b.Matches[0].ID != pgx.ID || len(b.Active)+len(b.Decisions) != 0 {
		t.Fatalf("aimed brief: %+v", b)
	}
	checkTokens(t, &b)
	for _, q := range []string{"bake a chocolate cake for the birthday party", "kubernetes"} {
		b, err = n.Context(ctx, api.ContextRequest{Namespace: "shop", Query: q})
		if err != nil || !b.Empty() {
			t.Fatalf("query %q matches nothing well, yet: %+v, %v", q, b.Matches, err)
		}
	}
	long := strings.Repeat("postgres driver lib/pq ", 500) + strings.Repeat("x", 300)
	if b, err = n.Context(ctx, api.ContextRequest{Namespace: "shop", Query: long}); err != nil || len(b.Matches) == 0 {
		t.Fatalf("a long prompt: %+v, %v", b.Matches, err)
	}
	// The brief says what it was aimed at, without a secret the prompt held.
	const secret = "hunter2-Sup3r-s3cret"
	if b, err = n.Context(ctx, api.ContextRequest{Namespace: "shop", Query: "replace lib/pq in every Postgres connection, DB_PASSWORD=" + secret}); err != nil || len(b.Matches) == 0 {
		t.Fatalf("a prompt with a secret: %+v, %v", b.Matches, err)
	}
	if strings.Contains(b.Query, secret) || strings.Contains(string(b.JSON()), secret) {
		t.Fatalf("the brief repeats a secret of its prompt: query %q", b.Query)
	}
}

// TestBriefRankingAges: a namespace's ranking is kept between briefs, but
// a memory that crosses its stale-after age with no change at all is a
// stale alert once the ranking is a minute old.
func TestBriefRankingAges(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now().UTC()
	at := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	n, err := New(Config{Home: t.TempDir(), Logger: testLogger(t), Clock: clock.WithNow(at)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	old := remember(t, n, api.RememberRequest{Namespace: "p", Content: "The VPN concentrator is in rack 4", Tier: model.TierHuman, At: now.Add(-60*24*time.Hour + time.Hour)})
	linked := remember(t, n, api.RememberRequest{Namespace: "p", Content: "Rack 4 is in the second row"})
	if _, err := n.Link(ctx, api.LinkRequest{From: linked.ID, Rel: "related_to", To: old.ID}); err != nil {
		t.Fatal(err)
	}
	if b, _ := n.Context(ctx, api.ContextRequest{Namespace: "p"}); len(b.StaleAlerts) != 0 || len(b.Active) != 2 {
		t.Fatalf("59 days old: stale %+v, active %+v", b.StaleAlerts, b.Active)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if b, _ := n.Context(ctx, api.ContextRequest{Namespace: "p"}); len(b.StaleAlerts) != 1 || b.StaleAlerts[0].ID != old.ID || !strings.Contains(b.StaleAlerts[0].Reason, "not updated for 60 days") {
		t.Fatalf("60 days old: stale %+v, active %+v", b.StaleAlerts, b.Active)
	}
}
