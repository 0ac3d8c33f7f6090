// Package nodetest holds what the tests of node and of the packages it
// composes (sessions, gitstale) share: a logger into the test's log, a
// wait bounded by progress, and the start of a node closed when the test
// ends, and a session. It imports no package that imports node, so that
// node's own tests use it.
package nodetest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/transcript"
)

// Logger logs to the test's log at info level; a fuzz target's logs are
// discarded (a fuzz function may not log through its *testing.F).
func Logger(tb testing.TB) *slog.Logger {
	if _, fuzz := tb.(*testing.F); fuzz {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(testWriter{tb}, nil))
}

// testWriter routes logs to the test's log.
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Node is what Start needs of a node.
type Node interface {
	Start(ctx context.Context) error
	Close() error
}

// Start starts n, as its constructor returned it with err, and closes it
// when the test ends.
func Start[N Node](tb testing.TB, n N, err error) N {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

// Rememberer is a node that remembers.
type Rememberer interface {
	Remember(ctx context.Context, req api.RememberRequest) (api.RememberResult, error)
}

// Remember remembers req on n, or fails the test.
func Remember(tb testing.TB, n Rememberer, req api.RememberRequest) api.RememberResult {
	tb.Helper()
	res, err := n.Remember(context.Background(), req)
	if err != nil {
		tb.Fatalf("remember %q: %v", req.Content, err)
	}
	return res
}

// SessionSecret is the secret SampleSession's failed run prints.
const SessionSecret = "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"

// SampleSession is a short Claude Code session: a prompt, a failing
// test run that prints a secret, an edit, a passing run, a decision.
func SampleSession() transcript.Session {
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	exit1 := 1
	return transcript.Session{
		Client: "claude-code", ID: "5f1c2b7e-0d4a-4f7e-9a51-3c2d1e0f9a8b", Path: "/home/u/.claude/projects/app/5f1c.jsonl",
		Project: "/home/u/src/app",
		Turns: []transcript.Turn{
			{Index: 0, Time: at, Role: transcript.RoleUser, Text: "The login test fails, fix it please"},
			{Index: 1, Time: at.Add(time.Minute), Role: transcript.RoleAssistant, Tool: "Bash", Command: "go test ./auth/..."},
			{Index: 2, Time: at.Add(2 * time.Minute), Role: transcript.RoleTool, Tool: "Bash", Failed: true, ExitCode: &exit1,
				Text: "--- FAIL: TestLogin\n    token " + SessionSecret + " rejected: clock skew"},
			{Index: 3, Time: at.Add(3 * time.Minute), Role: transcript.RoleAssistant, Tool: "Edit", Files: []string{"auth/token.go"}, Changed: true},
			{Index: 4, Time: at.Add(4 * time.Minute), Role: transcript.RoleAssistant, Tool: "Bash", Command: "go test ./auth/..."},
			{Index: 5, Time: at.Add(5 * time.Minute), Role: transcript.RoleTool, Tool: "Bash", Text: "ok  app/auth 0.2s"},
			{Index: 6, Time: at.Add(6 * time.Minute), Role: transcript.RoleAssistant, Text: "Fixed: we decided to allow 30 s of clock skew in token validation."},
		},
	}
}

// SessionLister is a node that lists sessions.
type SessionLister interface {
	Sessions(ctx context.Context, req api.SessionsRequest) ([]api.Session, error)
}

// SessionByID waits until n lists the session id, and returns it.
func SessionByID(tb testing.TB, n SessionLister, id string) api.Session {
	tb.Helper()
	var got api.Session
	testwait.Until(tb, "the session is listed", func() bool {
		all, err := n.Sessions(context.Background(), api.SessionsRequest{})
		if err != nil {
			tb.Fatal(err)
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
