package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/testwait"
)

// clientTimeout is the client timeout of the commands these tests run
// (MEMMESH_CLIENT_TIMEOUT), short so that the tests do not wait 10 s per
// command.
const clientTimeout = "2s"

// daemonPID returns the pid of home's running daemon, from its lock file.
func daemonPID(t *testing.T, home string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(home, "memmesh.lock"))
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || perr != nil || pid <= 0 {
		t.Fatalf("daemon pid: %q, %v", data, err)
	}
	return pid
}

// hookAnswer decodes a SessionStart hook's answer.
func hookAnswer(t *testing.T, out string) string {
	t.Helper()
	var a struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.HookSpecificOutput.HookEventName != "SessionStart" {
		t.Fatalf("not a SessionStart hook answer: %q (%v)", out, err)
	}
	return a.HookSpecificOutput.AdditionalContext
}

// TestStoppedDaemon: with the daemon stopped by SIGSTOP, every client
// command returns with an error that names the daemon, its pid and log,
// `context --hook` exits 0 with no context, and `memmesh mcp` answers tool
// calls with an error result and keeps serving; once the daemon runs
// again, so do they.
func TestStoppedDaemon(t *testing.T) {
	home := newHome(t)
	env := []string{"MEMMESH_CLIENT_TIMEOUT=" + clientTimeout}
	var c captureOut
	okJSON(t, home, &c, "capture", "--ns", "proj", "Stopped daemons must not hang their clients")
	backup := filepath.Join(home, "backup.jsonl")
	os.WriteFile(backup, []byte(ok(t, home, "export")), 0o600)
	mcp := startStdio(t, home, env...)
	mcp.send(mcpInitialize)
	if m := mcp.next("initialize"); m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	mcp.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	pid := daemonPID(t, home)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})

	want := fmt.Sprintf("the daemon at %s did not answer in %s; pid %d; see %s", home, clientTimeout, pid, filepath.Join(home, "memmesh.log"))
	for _, args := range [][]string{
		{"list"}, {"search", "daemons"}, {"show", c.ID}, {"capture", "written while stopped"},
		{"update", c.ID, "--title", "x"}, {"forget", c.ID}, {"context"}, {"stats"}, {"peers"},
		{"status"}, {"id"}, {"devices"}, {"graph", c.ID}, {"stale"}, {"lifecycle"}, {"doctor"},
		{"analyze"}, {"export"}, {"import", backup}, {"stop"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := mmEnv(t, home, env, "", args...)
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, stderr %q; want exit 1 saying %q", r.code, r.stderr, want)
			}
		})
	}
	t.Run("context --hook", func(t *testing.T) {
		r := mmEnv(t, home, nil, "", "context", "--hook")
		if r.code != 0 || hookAnswer(t, r.stdout) != "" || !strings.Contains(r.stderr, "no brief for this session") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 0, no context and why", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		mcp.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall","arguments":{"query":"daemons"}}}`)
		if m := mcp.next("recall"); m.Error != nil || !bytes.Contains(m.Result, []byte(`"isError":true`)) || !bytes.Contains(m.Result, []byte("did not answer in "+clientTimeout)) {
			t.Fatalf("recall of a stopped daemon: %+v %s", m.Error, m.Result)
		}
		mcp.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
		if m := mcp.next("tools/list"); m.Error != nil || !bytes.Contains(m.Result, []byte(`"recall"`)) {
			t.Fatalf("tools/list: %+v %s", m.Error, m.Result)
		}
	})
	t.Run("new mcp", func(t *testing.T) {
		s := startStdio(t, home, env...)
		s.send(mcpInitialize)
		if m := s.next("initialize"); m.Error != nil {
			t.Fatalf("initialize with a stopped daemon: %+v", m.Error)
		}
		s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`)
		if m := s.next("status"); m.Error != nil || !bytes.Contains(m.Result, []byte(`"isError":true`)) {
			t.Fatalf("status of a stopped daemon: %+v %s", m.Error, m.Result)
		}
	})

	// Resumed, the daemon reads what waits on its socket; the stop, read
	// after its deadline, lapses (see TestStopSaysWhatHappens).
	syscall.Kill(pid, syscall.SIGCONT)
	resumed = true
	var list struct{ Memories []json.RawMessage }
	deadline := time.Now().Add(testwait.Limit)
	for r := mmEnv(t, home, env, "", "list", "--all-ns"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil; r = mmEnv(t, home, env, "", "list", "--all-ns") {
		if time.Now().After(deadline) {
			t.Fatalf("no list %s after SIGCONT: exit %d, stderr %q", testwait.Limit, r.code, r.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(list.Memories) != 1 {
		t.Fatalf("after SIGCONT: %d memories, want the one captured before (none written while stopped)", len(list.Memories))
	}
	mcp.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"recall","arguments":{"query":"daemons","namespace":"*"}}}`)
	if m := mcp.next("recall"); m.Error != nil || bytes.Contains(m.Result, []byte(`"isError":true`)) {
		t.Fatalf("recall after SIGCONT: %+v %s", m.Error, m.Result)
	}
}

// TestHookWithoutDaemon: `memmesh context --hook` on a home whose daemon
// has to be started answers at once, with no context when the brief is
// not there yet, and starts the daemon for the next session.
func TestHookWithoutDaemon(t *testing.T) {
	home := newHome(t)
	r := mmEnv(t, home, nil, "", "context", "--hook")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	hookAnswer(t, r.stdout)
	deadline := time.Now().Add(testwait.Limit)
	for {
		r := mmEnv(t, home, nil, "", "context", "--hook")
		if r.code == 0 && strings.Contains(hookAnswer(t, r.stdout), "what is known about") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no brief %s after the first hook: stdout %q, stderr %q", testwait.Limit, r.stdout, r.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
