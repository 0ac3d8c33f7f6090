package sessions_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/nodetest"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/sessions"
	"github.com/memmesh/memmesh/transcript"
)

// claudeFixture is a Claude Code transcript of the transcript package's
// tests: 13 turns, two of them failed tool calls.
const (
	claudeFixture = "../transcript/testdata/home/.claude/projects/-home-dev-src-fetchkit/7f3c9a2e-5b1d-4e8a-9c47-2d6f0b8e1a53.jsonl"
	claudeSession = "7f3c9a2e-5b1d-4e8a-9c47-2d6f0b8e1a53"
)

// sessionsNode starts a node that reads Claude Code transcripts under a
// temporary home, and returns the transcript's path there (a copy of the
// fixture).
func sessionsNode(t *testing.T, interval time.Duration) (*node.Node, string) {
	t.Helper()
	home := t.TempDir()
	path := filepath.Join(home, ".claude", "projects", "-home-dev-src-fetchkit", claudeSession+".jsonl")
	data, err := os.ReadFile(claudeFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{Home: t.TempDir(), IndexFlushDelay: -1, Logger: nodetest.Logger(t), Sessions: &sessions.Config{
		Readers:  []transcript.Adapter{transcript.ClaudeCode{}},
		Home:     home,
		Interval: interval,
		Namespace: func(project string) string {
			return filepath.Base(project)
		},
	}})
	return nodetest.Start(t, n, err), path
}

// TestIngestTranscriptIncremental reads a transcript, then the turn
// appended to it, then the file rewritten shorter.
func TestIngestTranscriptIncremental(t *testing.T) {
	n, path := sessionsNode(t, -1)
	ctx := context.Background()
	rep, err := n.IngestTranscript(ctx, "claude-code", path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Session != claudeSession || rep.Turns != 13 || rep.Warnings != 2 {
		t.Fatalf("first read: %+v", rep)
	}
	s := nodetest.SessionByID(t, n, claudeSession)
	if s.Namespace != "fetchkit" || s.Project != "/home/dev/src/fetchkit" || s.Turns != 13 || s.Failures != 2 ||
		len(s.Commands) != 1 || !strings.HasPrefix(s.Commands[0], "go test ./client") {
		t.Fatalf("listed: %+v", s)
	}
	if rep, err := n.IngestTranscript(ctx, "claude-code", path); err != nil || rep.Turns != 0 {
		t.Fatalf("a read with nothing new: %+v, %v", rep, err)
	}

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"user","sessionId":"` + claudeSession + `","cwd":"/home/dev/src/fetchkit","message":{"role":"user","content":"always run the race detector on this package"},"uuid":"9f9f9f9f-0000-4000-8000-000000000001","timestamp":"2026-11-20T09:20:00Z"}` + "\n")
	f.Close()
	rep, err = n.IngestTranscript(ctx, "claude-code", path)
	if err != nil || rep.Turns != 1 || rep.Restarted {
		t.Fatalf("after one appended turn: %+v, %v", rep, err)
	}
	d, err := n.Session(ctx, claudeSession)
	if err != nil || len(d.Transcript) != 14 || !strings.Contains(d.Transcript[13].Text, "race detector") {
		t.Fatalf("after one appended turn: %d turns, %v", len(d.Transcript), err)
	}

	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(path+".new", []byte(strings.Join(lines[:4], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	rep, err = n.IngestTranscript(ctx, "claude-code", path)
	if err != nil || !rep.Restarted {
		t.Fatalf("after a rewrite: %+v, %v", rep, err)
	}
	d, err = n.Session(ctx, claudeSession)
	if err != nil || len(d.Transcript) != rep.Turns || d.Turns != rep.Turns {
		t.Fatalf("after a rewrite: %d turns listed, %d shown, %d read; %v", d.Turns, len(d.Transcript), rep.Turns, err)
	}
}

// TestIngestScheduled lets the node find and read the transcript on its
// own schedule. The session is listed once its summary is written, and
// local once the read that wrote it has stored the session's record too.
func TestIngestScheduled(t *testing.T) {
	n, _ := sessionsNode(t, 50*time.Millisecond)
	var s api.Session
	testwait.Until(t, "the session read on the node's schedule is local", func() bool {
		s = nodetest.SessionByID(t, n, claudeSession)
		return s.Local
	})
	if s.Turns != 13 {
		t.Fatalf("read on the node's schedule: %+v", s)
	}
}

func TestIngestTranscriptBadInput(t *testing.T) {
	n, path := sessionsNode(t, -1)
	ctx := context.Background()
	for _, tc := range []struct{ client, path string }{
		{"codex", path},                                  // no such reader
		{"claude-code", "relative.jsonl"},                // not absolute
		{"claude-code", filepath.Dir(path)},              // a directory
		{"claude-code", path + ".missing"},               // absent
		{"claude-code", "/" + strings.Repeat("x", 5000)}, // too long
	} {
		if _, err := n.IngestTranscript(ctx, tc.client, tc.path); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("ingest %s %q: %v, want invalid", tc.client, tc.path, err)
		}
	}
	junk := filepath.Join(filepath.Dir(path), "junk.jsonl")
	os.WriteFile(junk, []byte("\x00\x01binary junk\n{\"type\":\"from-the-future\"}\n{not json\n"), 0o600)
	rep, err := n.IngestTranscript(ctx, "claude-code", junk)
	if err != nil || rep.Turns != 0 || rep.Warnings == 0 {
		t.Fatalf("junk transcript: %+v, %v; want warnings and no turns", rep, err)
	}
	if _, err := n.IngestAll(ctx); err != nil {
		t.Fatalf("a junk transcript beside a good one: %v", err)
	}
	if s := nodetest.SessionByID(t, n, claudeSession); s.Turns != 13 {
		t.Fatalf("the good transcript beside the junk: %+v", s)
	}
}

// learnedMemories lists the memories a node learned from sessions.
func learnedMemories(t *testing.T, n *node.Node) []api.Memory {
	t.Helper()
	mems, err := n.List(context.Background(), api.ListRequest{Tags: []string{"learned"}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return mems
}

// TestLearnFromTranscript: a session's correction and bug fix become
// memories at tier auto in its thread; reading the session again adds
// nothing; the same instruction in another session strengthens the
// memory instead of adding a copy.
func TestLearnFromTranscript(t *testing.T) {
	n, path := sessionsNode(t, -1)
	ctx := context.Background()
	if _, err := n.IngestTranscript(ctx, "claude-code", path); err != nil {
		t.Fatal(err)
	}
	var correction api.Memory
	testwait.Until(t, "the correction is learned", func() bool {
		for _, m := range learnedMemories(t, n) {
			if strings.Contains(m.Content, "fake clock") {
				correction = m
				return true
			}
		}
		return false
	})
	if correction.Tier != "auto" || correction.Provenance.Session != claudeSession || correction.Namespace != "fetchkit" ||
		correction.Provenance.Agent != "claude-code" {
		t.Fatalf("the learned correction: %+v", correction.Memory)
	}
	kinds := map[string]bool{}
	for _, m := range learnedMemories(t, n) {
		kinds[m.Kind] = true
	}
	if !kinds["bug"] {
		t.Errorf("no bug fix learned from a failed test, an edit and a passing run: kinds %v", kinds)
	}
	before := len(learnedMemories(t, n))
	d, err := n.Session(ctx, claudeSession)
	if err != nil || len(d.Lessons) != before || len(d.Lessons[0].Turns) == 0 || d.Lessons[0].Rule == "" {
		t.Fatalf("sessions show lists lessons %+v (%d learned), %v", d.Lessons, before, err)
	}
	if d.Learned != before {
		t.Fatalf("the session says it taught %d, %d are listed", d.Learned, before)
	}

	// The same transcript under another session id: the same lessons.
	data, _ := os.ReadFile(path)
	other := strings.ReplaceAll(string(data), claudeSession, "0d6f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
	otherPath := filepath.Join(filepath.Dir(path), "0d6f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b.jsonl")
	os.WriteFile(otherPath, []byte(other), 0o600)
	rep, err := n.IngestTranscript(ctx, "claude-code", otherPath)
	if err != nil || rep.Turns != 13 {
		t.Fatalf("the second session: %+v, %v", rep, err)
	}
	if after := len(learnedMemories(t, n)); after != before {
		t.Errorf("a session repeating another's lessons added memories: %d, then %d", before, after)
	}
	again, err := n.Get(ctx, correction.ID)
	if err != nil || again.Confidence <= correction.Confidence {
		t.Errorf("the repeated correction's confidence: %.2f, then %.2f (%v)", correction.Confidence, again.Confidence, err)
	}
}
