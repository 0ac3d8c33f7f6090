package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/nodetest"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/rules"
)

// testNode starts a node on a temporary home, closed when the test ends.
func testNode(tb testing.TB, home string) *Node {
	tb.Helper()
	if home == "" {
		home = tb.TempDir()
	}
	return startNode(tb, Config{Home: home, Logger: testLogger(tb)})
}

// startNode starts a node with cfg, closed when the test ends. Unless
// cfg says otherwise, its search index writes each batch at once: a close
// then does not wait out the second the index gathers batches for (the
// search package tests that delay, e2e runs the daemon with it).
func startNode(tb testing.TB, cfg Config) *Node {
	tb.Helper()
	if cfg.IndexFlushDelay == 0 {
		cfg.IndexFlushDelay = -1
	}
	n, err := New(cfg)
	return nodetest.Start(tb, n, err)
}

var testLogger = nodetest.Logger

var remember = nodetest.Remember

// TestRememberGivenUpWritesNothing: a caller that gave up (its context
// is done) gets the context's error, and nothing is stored.
func TestRememberGivenUpWritesNothing(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := n.Remember(ctx, api.RememberRequest{Namespace: "backend", Content: "Use pgx, not lib/pq."})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("remember with a context done: %v, want context.Canceled", err)
	}
	list, err := n.List(context.Background(), api.ListRequest{Namespace: "backend"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("%d memories stored by a remember given up", len(list))
	}
}

func TestRememberDefaultsAndRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	res := remember(t, n, api.RememberRequest{
		Namespace: "Backend",
		Content:   "# Retries\nRetry idempotent calls in internal/client/retry.go with `backoff.Retry`; see https://example.com/retries.",
		Tags:      []string{"Go", "go", "net"},
	})
	m, err := n.Get(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Namespace != "backend" || m.Title != "Retries" || m.Kind != rules.DefaultKind || m.Tier != model.TierAgent || m.Status != model.StatusActive {
		t.Errorf("defaults: %+v", m.Memory)
	}
	if strings.Join(m.Tags, ",") != "go,net" {
		t.Errorf("tags = %v, want [go net]", m.Tags)
	}
	if got := m.ExpiresAt.Sub(m.Provenance.CreatedAt); got != 90*24*time.Hour {
		t.Errorf("agent TTL = %v, want 90 days", got)
	}
	for _, want := range []string{"file:internal/client/retry.go", "url:https://example.com/retries"} {
		if !slices.Contains(m.Touches, want) {
			t.Errorf("touches %v lack %s", m.Touches, want)
		}
	}
	if m.Provenance.Device != n.DeviceID() || len(m.Revisions) != 1 || m.Heads == nil {
		t.Errorf("provenance/revisions: %+v", m.Memory)
	}
	human := remember(t, n, api.RememberRequest{Content: "Humans vouch for this", Tier: model.TierHuman})
	if hm, _ := n.Get(ctx, human.ID); !hm.ExpiresAt.IsZero() {
		t.Errorf("a human memory expires at %v", hm.ExpiresAt)
	}
	ever := remember(t, n, api.RememberRequest{Content: "Forever true", Tier: model.TierAuto, Evergreen: true})
	if em, _ := n.Get(ctx, ever.ID); !em.ExpiresAt.IsZero() {
		t.Errorf("an evergreen memory expires at %v", em.ExpiresAt)
	}
}

func TestRememberScrubsSecrets(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	key := "AKIA" + "ABCDEFGHIJKLMNOP"
	res := remember(t, n, api.RememberRequest{Title: "creds " + key, Content: "The deploy key is " + key + " for now"})
	if len(res.Redacted) == 0 {
		t.Fatal("no redaction reported")
	}
	m, _ := n.Get(context.Background(), res.ID)
	if strings.Contains(m.Content, key) || strings.Contains(m.Title, key) || strings.Contains(m.Revisions[0].Text, key) {
		t.Fatalf("secret stored: %+v", m.Memory)
	}
}

func TestDuplicatesAndSimilar(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	text := "Run database migrations with goose before starting the API server in development"
	first := remember(t, n, api.RememberRequest{Namespace: "api", Content: text})
	again := remember(t, n, api.RememberRequest{Namespace: "api", Content: "  " + text + "\n"})
	if again.DuplicateOf != first.ID || again.ID != first.ID {
		t.Fatalf("exact duplicate: %+v, want duplicate of %s", again, first.ID)
	}
	other := remember(t, n, api.RememberRequest{Namespace: "web", Content: text})
	if other.DuplicateOf != "" {
		t.Fatal("the same text in another namespace is not a duplicate")
	}
	near := remember(t, n, api.RememberRequest{Namespace: "api", Content: "Run database migrations with goose before starting the API server locally"})
	if near.DuplicateOf != "" || len(near.Similar) != 1 || near.Similar[0].ID != first.ID {
		t.Fatalf("near duplicate: %+v, want similar to %s", near, first.ID)
	}
	unrelated := remember(t, n, api.RememberRequest{Namespace: "api", Content: "The frontend uses Svelte with TypeScript strict mode"})
	if len(unrelated.Similar) != 0 {
		t.Fatalf("unrelated memory reported similar: %+v", unrelated.Similar)
	}
}

func TestConcurrentDuplicateCapturesMakeOneMemory(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := n.Remember(context.Background(), api.RememberRequest{Content: "one fact, captured by many agents at once"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent identical captures made several memories: %v", ids)
		}
	}
}

func TestRememberRejectsBadInput(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	bad := 1.5
	cases := []struct {
		name string
		req  api.RememberRequest
	}{
		{"empty", api.RememberRequest{Content: " \n\t"}},
		{"too big", api.RememberRequest{Content: strings.Repeat("a", api.MaxContentBytes+1)}},
		{"not utf8", api.RememberRequest{Content: "\xff\xfe"}},
		{"namespace", api.RememberRequest{Content: "x", Namespace: "a b"}},
		{"tag", api.RememberRequest{Content: "x", Tags: []string{"no way"}}},
		{"too many tags", api.RememberRequest{Content: "x", Tags: strings.Fields("a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd ee ff gg hh")}},
		{"kind", api.RememberRequest{Content: "x", Kind: "Bad Kind"}},
		{"tier", api.RememberRequest{Content: "x", Tier: "root"}},
		{"confidence", api.RememberRequest{Content: "x", Confidence: &bad}},
		{"ttl", api.RememberRequest{Content: "x", TTL: "tomorrow"}},
		{"title", api.RememberRequest{Content: "x", Title: "two\nlines"}},
		{"binary", api.RememberRequest{Content: "\x7fELF\x02\x01\x01\x00\x00\x00"}},
		{"nul in text", api.RememberRequest{Content: "text\x00more"}},
		{"nul in title", api.RememberRequest{Content: "x", Title: "a\x00b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := n.Remember(context.Background(), tc.req); !errors.Is(err, api.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if st, _ := n.Stats(context.Background()); st.Memories != 0 {
		t.Fatalf("bad input stored %d memories", st.Memories)
	}
}

// TestBinaryContentRefused: content that is binary or not UTF-8 is
// refused by Remember, Update and Import with an error that says what was
// found and where, and nothing changes; it is never stored with U+FFFD.
func TestBinaryContentRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	kept := remember(t, n, api.RememberRequest{Content: "kept as it is"})
	elf := "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00>\x00"
	for _, tc := range []struct{ content, want string }{
		{elf, "content is binary, not text (an ELF executable): a NUL byte at offset 7 (line 1)"},
		{"notes\n\nCaf\xe9 au lait", "content is not UTF-8 text: invalid byte 0xe9 at offset 10 (line 3)"},
	} {
		_, err := n.Remember(ctx, api.RememberRequest{Content: tc.content})
		if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Remember: %v, want %q", err, tc.want)
		}
		_, err = n.Update(ctx, kept.ID, api.UpdateRequest{Content: &tc.content})
		if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Update: %v, want %q", err, tc.want)
		}
	}
	lines := []string{
		"{\"type\":\"memory\",\"id\":\"m-aaaaaaaaaaaaaaaaaaaaaaaaaa\",\"namespace\":\"x\",\"content\":\"caf\xe9\",\"kind\":\"note\",\"tier\":\"human\",\"confidence\":1,\"status\":\"active\",\"provenance\":{\"device\":\"D\",\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\"}}",
		`{"type":"memory","id":"m-aaaaaaaaaaaaaaaaaaaaaaaaaa","namespace":"x","content":"x\ud800","kind":"note","tier":"human","confidence":1,"status":"active","provenance":{"device":"D","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}}`,
		`{"type":"memory","id":"m-aaaaaaaaaaaaaaaaaaaaaaaaaa","namespace":"x","content":"\u007fELF\u0002\u0000","kind":"note","tier":"human","confidence":1,"status":"active","provenance":{"device":"D","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}}`,
	}
	for i, want := range []string{"line 1: not UTF-8 text: invalid byte 0xe9 at offset 83", `line 1: not Unicode text: the escape \ud800`, "content is binary, not text (an ELF executable): a NUL byte at offset 5"} {
		if _, err := n.Import(ctx, strings.NewReader(lines[i]+"\n")); !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Import of line %d: %v, want %q", i, err, want)
		}
	}
	if st, _ := n.Stats(ctx); st.Memories != 1 {
		t.Fatalf("%d memories, want the one kept", st.Memories)
	}
	if m, _ := n.Get(ctx, kept.ID); m.Content != "kept as it is" {
		t.Fatalf("content became %q", m.Content)
	}
}

func TestShortIDsResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	res := remember(t, n, api.RememberRequest{Content: "short ids work like git's"})
	if len(res.ShortID) != len(IDPrefix)+minShortID {
		t.Fatalf("short id %q", res.ShortID)
	}
	for _, ref := range []string{res.ID, res.ShortID, strings.TrimPrefix(res.ShortID, IDPrefix), strings.ToUpper(res.ShortID[2:])} {
		if m, err := n.Get(ctx, ref); err != nil || m.ID != res.ID {
			t.Errorf("Get(%q) = %v, %v", ref, m.ID, err)
		}
	}
	for ref, want := range map[string]error{"m-zzzzzzzz": api.ErrNotFound, "m-!": api.ErrInvalid, "m-ab": api.ErrInvalid} {
		if _, err := n.Get(ctx, ref); !errors.Is(err, want) {
			t.Errorf("Get(%q) err = %v, want %v", ref, err, want)
		}
	}
}

func TestUpdateIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	res := remember(t, n, api.RememberRequest{Content: "original text", Tags: []string{"keep"}})
	title, badKind := "new title", "Not A Kind"
	if _, err := n.Update(ctx, res.ID, api.UpdateRequest{Title: &title, Kind: &badKind}); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	m, _ := n.Get(ctx, res.ID)
	if m.Title == title {
		t.Fatal("a rejected update changed the title")
	}
	content := "edited text"
	m, err := n.Update(ctx, res.ID, api.UpdateRequest{Content: &content, AddTags: []string{"new"}, RemoveTags: []string{"keep"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Content != content || len(m.Revisions) != 2 || m.Revisions[1].Parent != m.Revisions[0].ID || strings.Join(m.Tags, ",") != "new" {
		t.Fatalf("after update: %+v", m.Memory)
	}
}

// TestUpdateFromAnOldBase: an edit made from a revision that was edited
// since is kept beside the newer edit as a sync conflict (doctor lists
// it); a base the memory lacks is refused.
func TestUpdateFromAnOldBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	res := remember(t, n, api.RememberRequest{Content: "deploy on fridays"})
	m, _ := n.Get(ctx, res.ID)
	base := m.Revisions[0].ID
	newer, older := "never deploy on fridays", "deploy on thursdays"
	if _, err := n.Update(ctx, res.ID, api.UpdateRequest{Content: &newer}); err != nil {
		t.Fatal(err)
	}
	unknown := "aaaaaaaaaaaaaaaaaaaaaaaaaa"
	if _, err := n.Update(ctx, res.ID, api.UpdateRequest{Content: &older, Base: unknown}); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("an unknown base: %v, want ErrInvalid", err)
	}
	m, err := n.Update(ctx, res.ID, api.UpdateRequest{Content: &older, Base: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Conflict) != 2 {
		t.Fatalf("an edit of the old text: conflict %+v, want both edits", m.Conflict)
	}
	rep, err := n.Doctor(ctx)
	if err != nil || len(rep.Conflicts) != 1 {
		t.Fatalf("doctor: %+v %v", rep, err)
	}
}

func TestSearchSeesEveryAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	for i := range 200 {
		res := remember(t, n, api.RememberRequest{Namespace: "ryw", Content: "unique marker w" + strings.Repeat("x", i%7) + time.Duration(i).String()})
		m, _ := n.Get(ctx, res.ID)
		hits, err := n.Search(ctx, api.SearchRequest{Query: m.Content, Namespace: "ryw", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, h := range hits.Results {
			found = found || h.ID == res.ID
		}
		if !found {
			t.Fatalf("capture %d (%s) not searchable right after it was acknowledged", i, res.ID)
		}
	}
}

func TestExpiredMemoriesLeaveSearchAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	now := time.Now()
	n, err := New(Config{Home: home, Clock: clock.WithNow(func() time.Time { return now })})
	if err != nil {
		t.Fatal(err)
	}
	n.Start(ctx)
	defer n.Close()
	res, err := n.Remember(ctx, api.RememberRequest{Content: "temporary workaround for the flaky proxy", Tier: model.TierAuto})
	if err != nil {
		t.Fatal(err)
	}
	if hits, _ := n.Search(ctx, api.SearchRequest{Query: "flaky proxy"}); len(hits.Results) != 1 {
		t.Fatalf("fresh memory not found: %+v", hits)
	}
	now = now.Add(31 * 24 * time.Hour)
	if hits, _ := n.Search(ctx, api.SearchRequest{Query: "flaky proxy"}); len(hits.Results) != 0 {
		t.Fatalf("expired memory still found: %+v", hits)
	}
	if list, _ := n.List(ctx, api.ListRequest{}); len(list) != 0 {
		t.Fatalf("expired memory still listed: %v", list)
	}
	if _, err := n.Get(ctx, res.ID); err != nil {
		t.Fatalf("an expired memory can still be shown by id: %v", err)
	}
}

func TestIndexRepairedAfterLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	n, err := New(Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	n.Start(ctx)
	var ids []string
	for i := range 50 {
		res, err := n.Remember(ctx, api.RememberRequest{Content: "repairable memory number " + strings.Repeat("i", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	n.Close()
	// Simulate a crash that lost the whole index.
	if err := os.RemoveAll(filepath.Join(home, "index")); err != nil {
		t.Fatal(err)
	}
	n2 := testNode(t, home)
	hits, err := n2.Search(ctx, api.SearchRequest{Query: "repairable", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits.Results) != len(ids) {
		t.Fatalf("after losing the index, search finds %d of %d", len(hits.Results), len(ids))
	}
}

// TestUpdateFollowsContentAndTier: new content brings its own derived
// title and touches (a given title stays), and a new trust tier brings its
// expiry and, when the memory had the old tier's default, its confidence.
func TestUpdateFollowsContentAndTier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	id := remember(t, n, api.RememberRequest{Content: "Retry uploads in internal/upload/retry.go\nwith backoff"}).ID
	content := "Uploads retry in internal/transfer/backoff.go\nthree times"
	m, err := n.Update(ctx, id, api.UpdateRequest{Content: &content})
	if err != nil {
		t.Fatal(err)
	}
	if m.Title != "Uploads retry in internal/transfer/backoff.go" {
		t.Errorf("title after new content = %q, want the new first line", m.Title)
	}
	if slices.Contains(m.Touches, "file:internal/upload/retry.go") || !slices.Contains(m.Touches, "file:internal/transfer/backoff.go") {
		t.Errorf("touches after new content = %v, want the new file only", m.Touches)
	}

	given := remember(t, n, api.RememberRequest{Title: "Upload policy", Content: "Uploads are capped at 10 MB"}).ID
	content = "Uploads are capped at 20 MB"
	if m, err = n.Update(ctx, given, api.UpdateRequest{Content: &content}); err != nil || m.Title != "Upload policy" {
		t.Errorf("a given title after new content = %q (%v), want it kept", m.Title, err)
	}

	human := model.TierHuman
	m, err = n.Update(ctx, id, api.UpdateRequest{Tier: &human})
	if err != nil {
		t.Fatal(err)
	}
	if !m.ExpiresAt.IsZero() || m.Confidence != 0.9 {
		t.Errorf("agent memory made human: expires %v, confidence %v; want no expiry and 0.9", m.ExpiresAt, m.Confidence)
	}
	auto := model.TierAuto
	before := time.Now()
	conf := 0.8
	m, err = n.Update(ctx, id, api.UpdateRequest{Tier: &auto, Confidence: &conf})
	if err != nil {
		t.Fatal(err)
	}
	if d := m.ExpiresAt.Sub(before); d < 29*24*time.Hour || d > 31*24*time.Hour || m.Confidence != 0.8 {
		t.Errorf("human memory made auto: expires in %v, confidence %v; want 30 days and the given 0.8", d, m.Confidence)
	}
	ttl := "none"
	if m, err = n.Update(ctx, id, api.UpdateRequest{Tier: &human, TTL: &ttl}); err != nil || !m.ExpiresAt.IsZero() {
		t.Errorf("tier with a ttl in the same update: expires %v (%v)", m.ExpiresAt, err)
	}
}

func TestZeroTTLIsRefused(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	for _, ttl := range []string{"0", "0d", "0s", "nand", "-1d"} {
		if _, err := n.Remember(context.Background(), api.RememberRequest{Content: "x " + ttl, TTL: ttl}); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("ttl %q: %v, want ErrInvalid", ttl, err)
		}
	}
}

// TestListBySession lists the memories whose provenance names a session
// (an imported file's "file:PATH" too), in the namespace asked, with the
// other filters, and none for a session nothing names.
func TestListBySession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	a := remember(t, n, api.RememberRequest{Namespace: "acme", Content: "Run go vet before pushing", Session: "file:CLAUDE.md"})
	remember(t, n, api.RememberRequest{Namespace: "acme", Content: "Use pnpm, never npm", Session: "file:AGENTS.md"})
	remember(t, n, api.RememberRequest{Namespace: "other", Content: "Tabs for Go, spaces for YAML", Session: "file:CLAUDE.md"})
	archived := remember(t, n, api.RememberRequest{Namespace: "acme", Content: "Keep handlers thin", Session: "file:CLAUDE.md"})
	if _, err := n.Forget(ctx, archived.ID); err != nil {
		t.Fatal(err)
	}
	got, err := n.List(ctx, api.ListRequest{Namespace: "acme", Session: "file:CLAUDE.md"})
	if err != nil || len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("list of file:CLAUDE.md in acme: %v, %v: want only %s", got, err, a.ID)
	}
	got, _ = n.List(ctx, api.ListRequest{Namespace: "acme", Session: "file:CLAUDE.md", Statuses: []model.Status{model.StatusActive, model.StatusArchived}})
	if len(got) != 2 {
		t.Fatalf("with archived ones: %d memories, want 2", len(got))
	}
	if got, err := n.List(ctx, api.ListRequest{Session: "file:nowhere.md"}); err != nil || len(got) != 0 {
		t.Fatalf("a session nothing names: %v, %v", got, err)
	}
	if _, err := n.List(ctx, api.ListRequest{Session: strings.Repeat("s", 300)}); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("an over-long session: %v, want invalid", err)
	}
}

// TestRevisionsRecordTheirAgent: the first revision carries the agent of
// the capture, each edit the agent of its update (none for a person); an
// agent that is no label is refused and changes nothing.
func TestRevisionsRecordTheirAgent(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	ctx := context.Background()
	res := remember(t, n, api.RememberRequest{Content: "Use pgx for Postgres", Agent: "claude-code/2.0"})
	for _, e := range []struct{ content, agent string }{{"Use pgx v5 for Postgres", " codex/0.9 "}, {"Use pgx v5, pooled", ""}} {
		if _, err := n.Update(ctx, res.ID, api.UpdateRequest{Content: &e.content, Agent: e.agent}); err != nil {
			t.Fatal(err)
		}
	}
	bad := "refused"
	if _, err := n.Update(ctx, res.ID, api.UpdateRequest{Content: &bad, Agent: strings.Repeat("x", rules.MaxLabelLen+1)}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("an agent of %d bytes: %v, want invalid", rules.MaxLabelLen+1, err)
	}
	m, err := n.Get(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	var agents []string
	for _, r := range m.Revisions {
		agents = append(agents, r.Agent)
	}
	if want := []string{"claude-code/2.0", "codex/0.9", ""}; !slices.Equal(agents, want) || m.Provenance.Agent != "claude-code/2.0" {
		t.Errorf("revisions' agents %q (provenance %q), want %q", agents, m.Provenance.Agent, want)
	}
}
