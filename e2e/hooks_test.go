package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHooksInstall: the binary's `hooks install` writes, in the home the
// clients read (HOME, a directory of the test's own), each client's hooks in the shape it reads, keeps a
// user's settings, turns Codex's hooks on, and `hooks uninstall` gives the
// files back as they were. The hook written runs: fed a SessionStart
// input, its command answers with the brief.
func TestHooksInstall(t *testing.T) {
	home := newHome(t)
	clientHome := t.TempDir() // the clients' HOME, the test's own
	memmesh := func(stdin string, args ...string) result {
		t.Helper()
		r := mmEnv(t, home, []string{"HOME=" + clientHome}, stdin, args...)
		if r.code != 0 {
			t.Fatalf("memmesh %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r
	}
	type handler struct {
		Name    string `json:"name"`
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	type settings struct {
		Model string `json:"model"`
		Hooks map[string][]struct {
			Matcher string    `json:"matcher"`
			Hooks   []handler `json:"hooks"`
		} `json:"hooks"`
	}
	userSettings := "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"SessionStart\": [\n      {\n        \"matcher\": \"startup\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"echo hi\"\n          }\n        ]\n      }\n    ]\n  }\n}\n"
	for _, tc := range []struct {
		client, file string
		events       map[string]string // event: the memmesh command it runs
	}{
		{"claude-code", ".claude/settings.json", map[string]string{
			"SessionStart": "memmesh context --hook", "UserPromptSubmit": "memmesh context --hook",
			"PreCompact": "memmesh sessions ingest --hook --client claude-code", "SessionEnd": "memmesh sessions ingest --hook --client claude-code"}},
		{"codex", ".codex/hooks.json", map[string]string{
			"SessionStart": "memmesh context --hook", "UserPromptSubmit": "memmesh context --hook",
			"PreCompact": "memmesh sessions ingest --hook --client codex", "Stop": "memmesh sessions ingest --hook --client codex"}},
		{"gemini", ".gemini/settings.json", map[string]string{
			"SessionStart": "memmesh context --hook", "BeforeAgent": "memmesh context --hook",
			"PreCompress": "memmesh sessions ingest --hook --client gemini", "SessionEnd": "memmesh sessions ingest --hook --client gemini"}},
	} {
		t.Run(tc.client, func(t *testing.T) {
			path := filepath.Join(clientHome, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(userSettings), 0o600); err != nil {
				t.Fatal(err)
			}
			memmesh("", "hooks", "install", "--client", tc.client, "--user")
			memmesh("", "hooks", "install", "--client", tc.client, "--user")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var s settings
			if err := json.Unmarshal(data, &s); err != nil {
				t.Fatalf("%v:\n%s", err, data)
			}
			if s.Model != "opus" || len(s.Hooks["SessionStart"]) != 2 || s.Hooks["SessionStart"][0].Hooks[0].Command != "echo hi" {
				t.Fatalf("the user's settings were not kept:\n%s", data)
			}
			for event, command := range tc.events {
				var found int
				for _, g := range s.Hooks[event] {
					for _, h := range g.Hooks {
						if h.Command == command && h.Type == "command" {
							found++
						}
					}
				}
				if found != 1 {
					t.Errorf("%s runs %q %d times, want once:\n%s", event, command, found, data)
				}
			}
			if len(s.Hooks) != len(tc.events) {
				t.Errorf("events %d, want %d:\n%s", len(s.Hooks), len(tc.events), data)
			}

			var status struct {
				Hooks []struct {
					Client, Scope, Feature string
					Events                 []string
				}
			}
			if err := json.Unmarshal([]byte(memmesh("", "hooks", "status", "--client", tc.client).stdout), &status); err != nil {
				t.Fatal(err)
			}
			if len(status.Hooks) != 2 || status.Hooks[0].Scope != "user" || len(status.Hooks[0].Events) != 4 {
				t.Fatalf("status %+v", status)
			}
			if tc.client == "codex" {
				config, err := os.ReadFile(filepath.Join(clientHome, ".codex", "config.toml"))
				if err != nil || !strings.Contains(string(config), "[features]\ncodex_hooks = true\n") || status.Hooks[0].Feature != "on" {
					t.Fatalf("codex_hooks not on (%v, status %q):\n%s", err, status.Hooks[0].Feature, config)
				}
			}

			// The hook as the client runs it: its command, the input on
			// standard input.
			fields := strings.Fields(tc.events["SessionStart"])
			r := memmesh(`{"session_id":"s1","hook_event_name":"SessionStart","source":"startup"}`, fields[1:]...)
			if !strings.Contains(r.stdout, `"hookEventName":"SessionStart"`) {
				t.Fatalf("the installed SessionStart hook: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}

			memmesh("", "hooks", "uninstall", "--client", tc.client, "--user")
			if got, _ := os.ReadFile(path); string(got) != userSettings {
				t.Fatalf("uninstalled:\n%s\nwant:\n%s", got, userSettings)
			}
			backups, _ := filepath.Glob(path + ".memmesh-backup-*")
			if len(backups) == 0 {
				t.Fatal("no backup written")
			}
		})
	}
}
