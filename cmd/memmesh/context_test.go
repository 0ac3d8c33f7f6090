package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/testwait"
)

// TestHookAlwaysSucceeds: `memmesh context --hook` exits 0 with a hook
// answer holding no context, and says why on stderr, whatever is wrong:
// flags, config, home, or a config whose read never ends.
func TestHookAlwaysSucceeds(t *testing.T) {
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, "config.toml"), []byte("log_level = [broken\n"), 0o600)
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, []byte("x"), 0o600)
	stuck := t.TempDir()
	fifo := filepath.Join(stuck, "config.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Release the reader left blocked in open: a writer comes and goes.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	for _, tc := range []struct {
		name  string
		args  []string
		why   string // part of stderr
		stdin string // the hook's input
	}{
		{"broken config", []string{"--home", broken, "context", "--hook"}, "config.toml", ""},
		{"bad flag value", []string{"--home", broken, "context", "--hook", "--budget", "lots"}, "budget", ""},
		{"unknown flag", []string{"context", "--hook", "--colour"}, "unknown flag", ""},
		{"home is a file", []string{"--home", notDir, "context", "--hook"}, "not a directory", ""},
		{"config never read", []string{"--home", stuck, "context", "--hook"}, "none came within", ""},
		{"prompt, broken config", []string{"--home", broken, "context", "--hook"}, "config.toml", `{"hook_event_name":"UserPromptSubmit","prompt":"deploy"}`},
		{"prompt, config never read", []string{"--home", stuck, "context", "--hook"}, "none came within", `{"hook_event_name":"UserPromptSubmit","prompt":"deploy"}`},
		{"Gemini prompt, broken config", []string{"--home", broken, "context", "--hook"}, "config.toml", `{"hook_event_name":"BeforeAgent","prompt":"deploy"}`},
		{"Gemini prompt, config never read", []string{"--home", stuck, "context", "--hook"}, "none came within", `{"hook_event_name":"BeforeAgent","prompt":"deploy"}`},
		{"input not JSON", []string{"--home", broken, "context", "--hook"}, "config.toml", `{"hook_event_name":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := make(chan int, 1)
			go func() { code <- run(context.Background(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr) }()
			select {
			case c := <-code:
				if c != exitOK {
					t.Fatalf("exit %d, want 0; stderr %q", c, stderr.String())
				}
			case <-time.After(testwait.Limit):
				t.Fatalf("no exit after %v", testwait.Limit)
			}
			var out struct {
				HookSpecificOutput struct {
					HookEventName     string `json:"hookEventName"`
					AdditionalContext string `json:"additionalContext"`
				} `json:"hookSpecificOutput"`
			}
			event := "SessionStart"
			for _, prompt := range []string{"UserPromptSubmit", "BeforeAgent"} {
				if strings.Contains(tc.stdin, prompt) {
					event = prompt
				}
			}
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.HookSpecificOutput.HookEventName != event || out.HookSpecificOutput.AdditionalContext != "" {
				t.Errorf("stdout %q (%v), want an empty %s answer", stdout.String(), err, event)
			}
			if !strings.Contains(stderr.String(), tc.why) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.why)
			}
		})
	}
}

func TestHookCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"context", "--hook"}, hookContext},
		{[]string{"--home", "/x", "context", "--hook=true", "--ns", "a"}, hookContext},
		{[]string{"--format", "json", "context", "--hook"}, hookContext},
		{[]string{"context"}, ""},
		{[]string{"context", "--hook=false"}, ""},
		{[]string{"capture", "context", "--hook"}, ""},
		{[]string{"--home", "context", "stats", "--hook"}, ""},
		{[]string{"sessions", "ingest", "--hook", "--client", "codex"}, hookIngest},
		{[]string{"--home", "/x", "sessions", "ingest", "--client", "sessions", "--hook"}, hookIngest},
		{[]string{"sessions", "ingest"}, ""},
		{[]string{"sessions", "search", "--hook"}, ""},
	} {
		if got := hookCommand(tc.args); got != tc.want {
			t.Errorf("hookCommand(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
