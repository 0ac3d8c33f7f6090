package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	claudeFixture = "../transcript/testdata/home/.claude/projects/-home-dev-src-fetchkit/7f3c9a2e-5b1d-4e8a-9c47-2d6f0b8e1a53.jsonl"
	claudeSession = "7f3c9a2e-5b1d-4e8a-9c47-2d6f0b8e1a53"
)

type sessionsOut struct {
	Sessions []struct {
		ID        string   `json:"id"`
		Client    string   `json:"client"`
		Namespace string   `json:"namespace"`
		Turns     int      `json:"turns"`
		Local     bool     `json:"local"`
		Commands  []string `json:"commands"`
	} `json:"sessions"`
}

// copyTranscript puts the Claude Code fixture where Claude Code keeps its
// transcripts under home (the daemons' HOME), under the session id id.
func copyTranscript(t *testing.T, home, id string) string {
	t.Helper()
	data, err := os.ReadFile(claudeFixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, ".claude", "projects", "-home-dev-src-fetchkit", id+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), claudeSession, id)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSessionsFromTranscripts: a daemon reads a Claude Code transcript on
// its own schedule and when a hook asks; the sessions are listed, shown
// and searched, and their summaries reach the other machine.
func TestSessionsFromTranscripts(t *testing.T) {
	a, b := startMachine(t, 1, "laptop"), startMachine(t, 2, "desktop")
	var inv invitation
	okJSON(t, a.home, &inv, "invite")
	ok(t, b.home, "join", inv.Token)
	ok(t, a.home, "map", "/home/dev/src/fetchkit", "fetchkit")

	copyTranscript(t, a.home, claudeSession)
	ok(t, a.home, "sessions", "ingest") // the daemon's own scan runs each minute
	var list sessionsOut
	okJSON(t, a.home, &list, "sessions")
	if len(list.Sessions) != 1 || list.Sessions[0].ID != claudeSession || list.Sessions[0].Turns != 13 ||
		list.Sessions[0].Namespace != "fetchkit" || !list.Sessions[0].Local {
		t.Fatalf("sessions on the laptop: %+v", list.Sessions)
	}
	show := ok(t, a.home, "sessions", "show", claudeSession[:8], "--format", "human")
	for _, want := range []string{"fetchkit", "go test ./client", "FAILED", "don't add a fake clock"} {
		if !strings.Contains(show, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, show)
		}
	}
	found := ok(t, a.home, "sessions", "search", "TestRetryBackoff", "--scope", "errors", "--format", "human")
	if !strings.Contains(found, claudeSession[:8]) || !strings.Contains(found, "FAIL") {
		t.Errorf("sessions search --scope errors:\n%s", found)
	}

	// A hook names a new transcript: it returns at once, the daemon reads it.
	second := "0d6f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	path := copyTranscript(t, a.home, second)
	hook := mm(t, a.home, `{"session_id":"`+second+`","transcript_path":"`+path+`","hook_event_name":"SessionEnd","cwd":"/home/dev/src/fetchkit"}`,
		"sessions", "ingest", "--hook", "--client", "claude-code")
	if hook.code != 0 || hook.stdout != "" {
		t.Fatalf("the hook: exit %d, stdout %q, stderr %q", hook.code, hook.stdout, hook.stderr)
	}
	eventually(t, 30*time.Second, "the hook's transcript is not read (hook stderr: "+hook.stderr+")", func() bool {
		okJSON(t, a.home, &list, "sessions")
		return len(list.Sessions) == 2
	})

	// The summaries travel; the turns stay.
	eventually(t, 30*time.Second, "the desktop does not list the laptop's sessions", func() bool {
		okJSON(t, b.home, &list, "sessions")
		return len(list.Sessions) == 2
	})
	for _, s := range list.Sessions {
		if s.Local || s.Turns != 13 || s.Client != "claude-code" {
			t.Errorf("the desktop lists %+v", s)
		}
	}
	if show := ok(t, b.home, "sessions", "show", claudeSession, "--format", "human"); !strings.Contains(show, "Its turns are on laptop") {
		t.Errorf("sessions show on the desktop:\n%s", show)
	}
}

// TestSessionsHookNeverFails: with no daemon, bad input or no client, the
// ingest hook still exits 0 and says why on standard error.
func TestSessionsHookNeverFails(t *testing.T) {
	home := newHome(t)
	for _, tc := range []struct{ stdin, client string }{
		{`{"transcript_path":"/nowhere.jsonl"}`, "claude-code"},
		{`not json`, "claude-code"},
		{`{"transcript_path":"/nowhere.jsonl"}`, ""},
	} {
		args := []string{"sessions", "ingest", "--hook"}
		if tc.client != "" {
			args = append(args, "--client", tc.client)
		}
		r := mm(t, home, tc.stdin, args...)
		if r.code != 0 || r.stdout != "" || r.stderr == "" {
			t.Errorf("hook with %q, client %q: exit %d, stdout %q, stderr %q", tc.stdin, tc.client, r.code, r.stdout, r.stderr)
		}
	}
}
