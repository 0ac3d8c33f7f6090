package node

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/aging"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/model"
)

func TestLifecyclePassDerivesWithoutWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	ago := func(days int) time.Time { return time.Now().AddDate(0, 0, -days) }
	old := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "The build cache lives on the NAS", Tier: model.TierHuman, At: ago(90)})
	remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Releases are tagged vX.Y.Z", Tier: model.TierHuman, At: ago(400), Evergreen: true})
	remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Deploy freeze until Friday", TTL: "2d", At: ago(5)})
	newer := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "The build cache moved to S3", Tier: model.TierHuman})
	if _, err := n.Link(ctx, api.LinkRequest{From: newer.ID, Rel: "supersedes", To: old.ID}); err != nil {
		t.Fatal(err)
	}
	seq := n.store.DurableSeq()
	digest, err := n.store.Digest()
	if err != nil {
		t.Fatal(err)
	}

	r, err := n.RunLifecycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Memories != 4 || r.Live != 3 || r.Expired != 1 || r.Stale != 1 {
		t.Errorf("report: %d memories, %d live, %d expired, %d stale; want 4, 3, 1, 1", r.Memories, r.Live, r.Expired, r.Stale)
	}
	// The 90-day-old memory is stale by age and superseded; it is linked.
	if r.StaleByRule[api.StaleByAge] != 1 || r.StaleByRule[api.StaleSuperseded] != 1 || r.StaleByRule[api.StaleUnlinked] != 0 {
		t.Errorf("stale by rule: %v", r.StaleByRule)
	}
	// 90 days is half a half-life: 0.71 of the stated confidence; the
	// evergreen memory keeps its confidence however old it is.
	if r.Decayed != 0 || r.Maturity[api.MaturityCandidate] != 3 {
		t.Errorf("decayed %d, maturity %v", r.Decayed, r.Maturity)
	}
	if got := n.LastLifecycle(); !got.At.Equal(r.At) {
		t.Errorf("LastLifecycle at %v, want %v", got.At, r.At)
	}
	after, err := n.store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if n.store.DurableSeq() != seq || after != digest {
		t.Error("the lifecycle pass wrote to replicated data")
	}
}

func TestDecayAndMaturity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	n := testNode(t, home)
	aged := remember(t, n, api.RememberRequest{Content: "Retry flaky uploads twice", Confidence: new(0.8), Tier: model.TierHuman, At: time.Now().AddDate(0, 0, -180)})
	kept := remember(t, n, api.RememberRequest{Content: "Retry database migrations never", Confidence: new(0.8), Tier: model.TierHuman, At: time.Now().AddDate(0, 0, -180), Evergreen: true})
	m, err := n.Get(ctx, aged.ID)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.ConfidenceNow-0.4) > 0.01 {
		t.Errorf("confidence after one half-life = %.3f, want 0.4", m.ConfidenceNow)
	}
	if m.Reads != 1 || m.Maturity != api.MaturityCandidate {
		t.Errorf("after one read: %d reads, %s", m.Reads, m.Maturity)
	}
	for range aging.ProvenReads {
		if m, err = n.Get(ctx, kept.ID); err != nil {
			t.Fatal(err)
		}
	}
	if m.ConfidenceNow != 0.8 || m.Maturity != api.MaturityProven {
		t.Errorf("evergreen, read %d times: confidence %.2f, %s", m.Reads, m.ConfidenceNow, m.Maturity)
	}
	if _, err := n.RunLifecycle(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := n.Search(ctx, api.SearchRequest{Query: "retry", Explain: true})
	if err != nil || len(res.Results) != 2 {
		t.Fatalf("search: %+v %v", res, err)
	}
	top, second := res.Results[0], res.Results[1]
	if top.ID != kept.ID || top.Explain.Maturity != aging.Weight(api.MaturityProven) || second.Explain.Maturity != 1 {
		t.Errorf("the proven memory should rank first by maturity: %s %+v, %s %+v", top.ID, *top.Explain, second.ID, *second.Explain)
	}
	if second.Explain.Confidence >= top.Explain.Confidence {
		t.Errorf("decayed confidence multiplier %.3f, not below the evergreen one's %.3f", second.Explain.Confidence, top.Explain.Confidence)
	}
	// Both are 180 days old and linked to nothing: stale, and ranked so,
	// except the evergreen one.
	if second.Explain.Status != 0.6 || top.Explain.Status != 1 {
		t.Errorf("status multipliers %.2f and %.2f, want 0.6 for the derived-stale memory and 1", second.Explain.Status, top.Explain.Status)
	}
	// Updating it makes it current: the pass's verdict no longer applies.
	note := "confirmed in the last outage"
	if _, err := n.Update(ctx, aged.ID, api.UpdateRequest{Title: &note}); err != nil {
		t.Fatal(err)
	}
	res, err = n.Search(ctx, api.SearchRequest{Query: "uploads", Explain: true})
	if err != nil || len(res.Results) != 1 || res.Results[0].Explain.Status != 1 {
		t.Fatalf("after the update: %+v %v", res.Results, err)
	}

	// Read counts are this machine's and outlive a restart.
	n.Close()
	n = testNode(t, home)
	if m, err = n.Get(ctx, kept.ID); err != nil || m.Reads != aging.ProvenReads+1 {
		t.Errorf("after restart: %d reads, %v; want %d", m.Reads, err, aging.ProvenReads+1)
	}
}

// TestLifecycleRunsOnSchedule: the daemon runs a lifecycle pass a minute
// after start, then one every LifecycleInterval, on the node's clock
// (a fake one here: the hours pass without waiting).
func TestLifecycleRunsOnSchedule(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	started := clk.Now()
	n, err := New(Config{Home: t.TempDir(), Logger: testLogger(t), Clock: clk, LifecycleInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	remember(t, n, api.RememberRequest{Content: "Stored before the node starts its passes", Tier: model.TierHuman, At: clk.Now().AddDate(0, 0, -100)})
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	passAfter := func(what string, after time.Time, step time.Duration) api.LifecycleReport {
		t.Helper()
		waitUntil(t, what, func() bool {
			if n.LastLifecycle().At.After(after) {
				return true
			}
			clk.Advance(step)
			return false
		})
		return n.LastLifecycle()
	}
	first := passAfter("the first scheduled pass", time.Time{}, 10*time.Second)
	if first.Live != 1 || first.Stale != 1 {
		t.Errorf("first pass: %+v", first)
	}
	if first.At.Before(started.Add(lifecycleStartDelay)) {
		t.Errorf("first pass at %s, before the start delay (%s) since the start at %s", first.At, lifecycleStartDelay, started)
	}
	later := passAfter("a later pass", first.At, 10*time.Minute)
	if later.At.Before(first.At.Add(time.Hour)) {
		t.Errorf("a pass at %s, within the interval (1h) of the one at %s", later.At, first.At)
	}
}

// TestLearnedMemoryPromotedWhenRecalled: a learned memory read twice is
// promoted to tier agent by the next lifecycle pass; one never read stays
// auto.
func TestLearnedMemoryPromotedWhenRecalled(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	ctx := context.Background()
	read := remember(t, n, api.RememberRequest{Namespace: "app", Content: "Always run the race detector on the cache package", Tier: "auto"})
	unread := remember(t, n, api.RememberRequest{Namespace: "app", Content: "The staging database is reset every Monday", Tier: "auto"})
	for range promoteReads {
		if _, err := n.Get(ctx, read.ID); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := n.RunLifecycle(ctx)
	if err != nil || rep.Promoted != 1 {
		t.Fatalf("lifecycle: promoted %d, %v; want 1", rep.Promoted, err)
	}
	for id, want := range map[string]string{read.ID: "agent", unread.ID: "auto"} {
		m, err := n.Get(ctx, id)
		if err != nil || string(m.Tier) != want {
			t.Errorf("%s: tier %s, %v; want %s", id, m.Tier, err, want)
		}
	}
}
