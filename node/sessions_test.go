package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/transcript"
)

const sessionSecret = "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"

// sampleSession is a short Claude Code session: a prompt, a failing
// test run that prints a secret, an edit, a passing run, a decision.
func sampleSession() transcript.Session {
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	exit1 := 1
	return transcript.Session{
		Client: "claude-code", ID: "5f1c2b7e-0d4a-4f7e-9a51-3c2d1e0f9a8b", Path: "/home/u/.claude/projects/app/5f1c.jsonl",
		Project: "/home/u/src/app",
		Turns: []transcript.Turn{
			{Index: 0, Time: at, Role: transcript.RoleUser, Text: "The login test fails, fix it please"},
			{Index: 1, Time: at.Add(time.Minute), Role: transcript.RoleAssistant, Tool: "Bash", Command: "go test ./auth/..."},
			{Index: 2, Time: at.Add(2 * time.Minute), Role: transcript.RoleTool, Tool: "Bash", Failed: true, ExitCode: &exit1,
				Text: "--- FAIL: TestLogin\n    token " + sessionSecret + " rejected: clock skew"},
			{Index: 3, Time: at.Add(3 * time.Minute), Role: transcript.RoleAssistant, Tool: "Edit", Files: []string{"auth/token.go"}, Changed: true},
			{Index: 4, Time: at.Add(4 * time.Minute), Role: transcript.RoleAssistant, Tool: "Bash", Command: "go test ./auth/..."},
			{Index: 5, Time: at.Add(5 * time.Minute), Role: transcript.RoleTool, Tool: "Bash", Text: "ok  app/auth 0.2s"},
			{Index: 6, Time: at.Add(6 * time.Minute), Role: transcript.RoleAssistant, Text: "Fixed: we decided to allow 30 s of clock skew in token validation."},
		},
	}
}

func sessionByID(t *testing.T, n *Node, id string) api.Session {
	t.Helper()
	var got api.Session
	waitUntil(t, "the session is listed", func() bool {
		all, err := n.Sessions(context.Background(), api.SessionsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			if s.ID == id {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

func TestIngestSessionListsShowsAndScrubs(t *testing.T) {
	n := testNode(t, "")
	ctx := context.Background()
	s := sampleSession()
	meta, err := n.IngestSession(ctx, s, "app")
	if err != nil {
		t.Fatal(err)
	}
	if meta.Turns != 7 || meta.Failures != 1 || !slices.Equal(meta.FilesChanged, []string{"auth/token.go"}) ||
		!slices.Equal(meta.Commands, []string{"go test ./auth/..."}) {
		t.Fatalf("ingested session = %+v", meta)
	}
	got := sessionByID(t, n, s.ID)
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
		if strings.Contains(turn.Text, sessionSecret) {
			t.Fatalf("turn %d kept the secret: %q", turn.Index, turn.Text)
		}
	}
	handoff := remember(t, n, api.RememberRequest{Namespace: "app", Kind: "summary", Title: "Handoff: login test fixed",
		Content: "Done: clock skew allowed. Open: nothing.", Tags: []string{api.SessionTag(s.ID)}})
	waitUntil(t, "the handoff is listed with its session", func() bool {
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
	n := testNode(t, "")
	ctx := context.Background()
	s := sampleSession()
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
	n := testNode(t, "")
	ctx := context.Background()
	if _, err := n.IngestSession(ctx, sampleSession(), "app"); err != nil {
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
	n := testNode(t, "")
	ctx := context.Background()
	bad := sampleSession()
	bad.Client = "Claude Code\x1b[31m"
	if _, err := n.IngestSession(ctx, bad, "app"); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("client with spaces and an escape: %v", err)
	}
	noID := sampleSession()
	noID.ID = ""
	if _, err := n.IngestSession(ctx, noID, "app"); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("session without an id: %v", err)
	}
	odd := sampleSession()
	odd.ID = strings.Repeat("x/", 300)
	got, err := n.IngestSession(ctx, odd, "app")
	if err != nil || strings.Contains(got.ID, "/") || len(got.ID) > maxSessionIDLen {
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

// TestMeshSessionSummaryReachesPeers ingests a session on one machine:
// the other lists it (from its summary) without its turns.
func TestMeshSessionSummaryReachesPeers(t *testing.T) {
	nodes := cluster(t, 2, nil)
	s := sampleSession()
	if _, err := nodes[0].IngestSession(context.Background(), s, "app"); err != nil {
		t.Fatal(err)
	}
	got := sessionByID(t, nodes[1], s.ID)
	if got.Local || got.Device != nodes[0].DeviceID() || got.Turns != 7 || got.Client != "claude-code" ||
		!slices.Equal(got.FilesChanged, []string{"auth/token.go"}) {
		t.Fatalf("the peer lists %+v", got)
	}
	d, err := nodes[1].Session(context.Background(), s.ID)
	if err != nil || len(d.Transcript) != 0 {
		t.Fatalf("the peer shows %d turns, %v: turns stay on their machine", len(d.Transcript), err)
	}
	b, err := nodes[1].Context(context.Background(), api.ContextRequest{Namespace: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(b.FromPeers, func(it api.BriefItem) bool { return it.ID == got.SummaryID }) {
		t.Errorf("the peer's brief does not list the session under what other machines learned: %+v", b.FromPeers)
	}
}

// TestSessionsWithTheSameTurns: two sessions that said the same things
// (a script run twice) keep a summary each.
func TestSessionsWithTheSameTurns(t *testing.T) {
	n := testNode(t, "")
	ctx := context.Background()
	a, b := sampleSession(), sampleSession()
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
	sessionByID(t, n, a.ID)
	sessionByID(t, n, b.ID)
}

// TestOldSessionIsListed: a session that ran months ago, read today, is
// listed with its own times; its summary lives from today, not from then.
func TestOldSessionIsListed(t *testing.T) {
	n := testNode(t, "")
	s := sampleSession()
	for i := range s.Turns {
		s.Turns[i].Time = s.Turns[i].Time.AddDate(-1, 0, 0)
	}
	if _, err := n.IngestSession(context.Background(), s, "app"); err != nil {
		t.Fatal(err)
	}
	got := sessionByID(t, n, s.ID)
	if !got.Start.Equal(s.Turns[0].Time) || !got.End.Equal(s.Turns[6].Time) {
		t.Fatalf("an old session is listed from %v to %v, want %v to %v", got.Start, got.End, s.Turns[0].Time, s.Turns[6].Time)
	}
}
