package sessions_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/nodetest"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/sessions"
)

func TestIngestSessionListsShowsAndScrubs(t *testing.T) {
	n := testNode(t)
	ctx := context.Background()
	s := nodetest.SampleSession()
	meta, err := n.IngestSession(ctx, s, "app")
	if err != nil {
		t.Fatal(err)
	}
	if meta.Turns != 7 || meta.Failures != 1 || !slices.Equal(meta.FilesChanged, []string{"auth/token.go"}) ||
		!slices.Equal(meta.Commands, []string{"go test ./auth/..."}) {
		t.Fatalf("ingested session = %+v", meta)
	}
	got := nodetest.SessionByID(t, n, s.ID)
	if got.Client != "claude-code" || got.Namespace != "app" || got.Project != "/home/u/src/app" || got.Turns != 7 ||
		!got.Local || got.Device != n.DeviceID() || !got.Start.Equal(s.Turns[0].Time) || !got.End.Equal(s.Turns[6].Time) {
		t.Fatalf("listed session = %+v", got)
	}
	mem, err := n.Get(ctx, got.SummaryID)
	if err != nil {
		t.Fatal(err)
	}
	if mem.Kind != api.KindSession || mem.Tier != "auto" || mem.Provenance.Session != s.ID || !strings.Contains(mem.Content, "Asked: The login test fails") {
		t.Fatalf("summary memory = %+v", mem.Memory)
	}
	d, err := n.Session(ctx, s.ID[:8])
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Transcript) != 7 || d.Transcript[2].Role != "tool" || !d.Transcript[2].Failed {
		t.Fatalf("transcript = %+v", d.Transcript)
	}
	for _, turn := range d.Transcript {
		if strings.Contains(turn.Text, nodetest.SessionSecret) {
			t.Fatalf("turn %d kept the secret: %q", turn.Index, turn.Text)
		}
	}
	handoff := nodetest.Remember(t, n, api.RememberRequest{Namespace: "app", Kind: "summary", Title: "Handoff: login test fixed",
		Content: "Done: clock skew allowed. Open: nothing.", Tags: []string{api.SessionTag(s.ID)}})
	testwait.Until(t, "the handoff is listed with its session", func() bool {
		d, err = n.Session(ctx, s.ID)
		return err == nil && len(d.Handoffs) == 1 && d.Handoffs[0].ID == handoff.ID
	})
	if !strings.Contains(d.Transcript[2].Text, "clock skew") {
		t.Fatalf("scrubbing took more than the secret: %q", d.Transcript[2].Text)
	}
}

// TestIngestSessionIncremental ingests a session, then the same session
// read again after it grew: only the new turn is added, and the summary
// is revised, not duplicated.
func TestIngestSessionIncremental(t *testing.T) {
	n := testNode(t)
	ctx := context.Background()
	s := nodetest.SampleSession()
	first := s
	first.Turns = s.Turns[:4]
	a, err := n.IngestSession(ctx, first, "app")
	if err != nil {
		t.Fatal(err)
	}
	again, err := n.IngestSession(ctx, first, "app") // the same turns read twice
	if err != nil || again.Turns != 4 || again.SummaryID != a.SummaryID {
		t.Fatalf("ingest of the same turns again = %+v, %v", again, err)
	}
	grown := s
	grown.Turns = s.Turns[4:] // a reader returns only the new turns
	b, err := n.IngestSession(ctx, grown, "app")
	if err != nil {
		t.Fatal(err)
	}
	if b.Turns != 7 || b.SummaryID != a.SummaryID || b.Failures != 1 {
		t.Fatalf("after growth = %+v (first %+v)", b, a)
	}
	mem, err := n.Get(ctx, a.SummaryID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mem.Content, "Turns: 7") || len(mem.Revisions) != 2 {
		t.Fatalf("summary after growth: %d revisions, %q", len(mem.Revisions), mem.Content)
	}
	d, err := n.Session(ctx, s.ID)
	if err != nil || len(d.Transcript) != 7 {
		t.Fatalf("transcript after growth: %d turns, %v", len(d.Transcript), err)
	}
}

func TestSearchSessionsScopes(t *testing.T) {
	n := testNode(t)
	ctx := context.Background()
	if _, err := n.IngestSession(ctx, nodetest.SampleSession(), "app"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, scope string
		want         []int // turn indexes, latest first
	}{
		{"clock skew", "", []int{6, 2}},
		{"clock skew", api.ScopeErrors, []int{2}},
		{"", api.ScopeErrors, []int{2}},
		{"auth", api.ScopeCommands, []int{4, 1}},
		{"token", api.ScopeFiles, []int{3}},
		{"login", api.ScopePrompts, []int{0}},
		{"skew", api.ScopeDecisions, []int{6}},
		{"kubernetes", "", nil},
	} {
		hits, err := n.SearchSessions(ctx, api.SessionSearchRequest{Query: tc.query, Scope: tc.scope})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, h := range hits {
			got = append(got, h.Turn.Index)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("search %q scope %q: turns %v, want %v", tc.query, tc.scope, got, tc.want)
		}
	}
	if hits, _ := n.SearchSessions(ctx, api.SessionSearchRequest{Query: "skew", Namespace: "other"}); len(hits) != 0 {
		t.Errorf("namespace filter: %d hits in another namespace", len(hits))
	}
}

func TestSessionsBadInput(t *testing.T) {
	n := testNode(t)
	ctx := context.Background()
	bad := nodetest.SampleSession()
	bad.Client = "Claude Code\x1b[31m"
	if _, err := n.IngestSession(ctx, bad, "app"); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("client with spaces and an escape: %v", err)
	}
	noID := nodetest.SampleSession()
	noID.ID = ""
	if _, err := n.IngestSession(ctx, noID, "app"); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("session without an id: %v", err)
	}
	odd := nodetest.SampleSession()
	odd.ID = strings.Repeat("x/", 300)
	got, err := n.IngestSession(ctx, odd, "app")
	if err != nil || strings.Contains(got.ID, "/") || len(got.ID) > sessions.MaxSessionIDLen {
		t.Errorf("a long id with slashes is kept as %q, %v", got.ID, err)
	}
	for _, req := range []api.SessionSearchRequest{
		{Query: "x", Scope: "everything"},
		{Query: "x", Limit: api.MaxSessionHits + 1},
		{Query: strings.Repeat("x", api.MaxSessionQuery+1)},
		{},
	} {
		if _, err := n.SearchSessions(ctx, req); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("search %+v: %v, want invalid", req, err)
		}
	}
	if _, err := n.Sessions(ctx, api.SessionsRequest{Limit: -1}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("list with limit -1: %v", err)
	}
	if _, err := n.Session(ctx, "nosuch"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("show of an unknown session: %v", err)
	}
}

// TestSessionsWithTheSameTurns: two sessions that said the same things
// (a script run twice) keep a summary each.
func TestSessionsWithTheSameTurns(t *testing.T) {
	n := testNode(t)
	ctx := context.Background()
	a, b := nodetest.SampleSession(), nodetest.SampleSession()
	b.ID = "0d6f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	ra, err := n.IngestSession(ctx, a, "app")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := n.IngestSession(ctx, b, "app")
	if err != nil {
		t.Fatal(err)
	}
	if ra.SummaryID == rb.SummaryID {
		t.Fatalf("both sessions share the summary %s", ra.SummaryID)
	}
	nodetest.SessionByID(t, n, a.ID)
	nodetest.SessionByID(t, n, b.ID)
}

// TestOldSessionIsListed: a session that ran months ago, read today, is
// listed with its own times; its summary lives from today, not from then.
func TestOldSessionIsListed(t *testing.T) {
	n := testNode(t)
	s := nodetest.SampleSession()
	for i := range s.Turns {
		s.Turns[i].Time = s.Turns[i].Time.AddDate(-1, 0, 0)
	}
	if _, err := n.IngestSession(context.Background(), s, "app"); err != nil {
		t.Fatal(err)
	}
	got := nodetest.SessionByID(t, n, s.ID)
	if !got.Start.Equal(s.Turns[0].Time) || !got.End.Equal(s.Turns[6].Time) {
		t.Fatalf("an old session is listed from %v to %v, want %v to %v", got.Start, got.End, s.Turns[0].Time, s.Turns[6].Time)
	}
}
