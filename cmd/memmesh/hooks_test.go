package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hooksEnv gives a test a home and a git project of its own, the working
// directory set in a subdirectory of the project.
func hooksEnv(t *testing.T) (home, project string) {
	t.Helper()
	home, project = t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, dir := range []string{filepath.Join(project, ".git"), filepath.Join(project, "src", "api")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(filepath.Join(project, "src", "api"))
	return home, project
}

// mmRun runs the CLI in the test's process with the memmesh home in the
// test's home.
func mmRun(t *testing.T, home string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errs bytes.Buffer
	code = run(context.Background(), append([]string{"--home", filepath.Join(home, ".memmesh")}, args...), strings.NewReader(""), &out, &errs)
	return out.String(), errs.String(), code
}

// TestHooksInstallUninstall: install writes the client's file in the
// project's root (or the home with --user) and says what it did, twice is
// once, status sees it, and uninstall gives back the file as it was.
func TestHooksInstallUninstall(t *testing.T) {
	home, project := hooksEnv(t)
	settings := filepath.Join(project, ".claude", "settings.json")
	original := "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"say done\"\n          }\n        ]\n      }\n    ]\n  }\n}\n"
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(original), 0o640)

	out, errs, code := mmRun(t, home, "hooks", "install", "--client", "claude-code", "--json")
	if code != exitOK {
		t.Fatalf("install: exit %d, stderr %q", code, errs)
	}
	var rep struct {
		Client string `json:"client"`
		Scope  string `json:"scope"`
		Files  []struct {
			Path    string   `json:"path"`
			Changed bool     `json:"changed"`
			Backup  string   `json:"backup"`
			Events  []string `json:"events"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Client != "claude-code" || rep.Scope != "project" || len(rep.Files) != 1 || rep.Files[0].Path != settings ||
		!rep.Files[0].Changed || len(rep.Files[0].Events) != 4 || rep.Files[0].Backup == "" {
		t.Fatalf("report %+v", rep)
	}
	if b, err := os.ReadFile(rep.Files[0].Backup); err != nil || string(b) != original {
		t.Fatalf("backup %q, %v", b, err)
	}
	installed, _ := os.ReadFile(settings)
	if !bytes.Contains(installed, []byte(`"command": "say done"`)) || !bytes.Contains(installed, []byte(`"command": "memmesh sessions ingest --hook --client claude-code"`)) {
		t.Fatalf("installed:\n%s", installed)
	}

	out, _, code = mmRun(t, home, "hooks", "install", "--client", "claude-code", "--format", "human")
	if again, _ := os.ReadFile(settings); code != exitOK || !bytes.Equal(again, installed) || !strings.Contains(out, "already installed in "+settings) {
		t.Fatalf("second install: exit %d, %q", code, out)
	}

	var status struct {
		Hooks []hookStatus `json:"hooks"`
	}
	out, _, _ = mmRun(t, home, "hooks", "status", "--json")
	if err := json.Unmarshal([]byte(out), &status); err != nil || len(status.Hooks) != 6 {
		t.Fatalf("status %v: %s", err, out)
	}
	for _, s := range status.Hooks {
		want := 0
		if s.Client == "claude-code" && s.Scope == "project" {
			want = 4
		}
		if len(s.Events) != want || s.Error != "" {
			t.Errorf("status %+v: want %d events", s, want)
		}
		if s.Client == "codex" && s.Feature != "no file" {
			t.Errorf("codex feature %q without a config.toml", s.Feature)
		}
	}

	if _, errs, code := mmRun(t, home, "hooks", "uninstall", "--client", "claude-code"); code != exitOK {
		t.Fatalf("uninstall: exit %d, %s", code, errs)
	}
	if got, _ := os.ReadFile(settings); string(got) != original {
		t.Fatalf("uninstalled:\n%s\nwant:\n%s", got, original)
	}
	if fi, _ := os.Stat(settings); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

// TestHooksCodexUser: --user writes ~/.codex/hooks.json and turns hooks on
// in ~/.codex/config.toml, the user's comments kept.
func TestHooksCodexUser(t *testing.T) {
	home, project := hooksEnv(t)
	config := filepath.Join(home, ".codex", "config.toml")
	os.MkdirAll(filepath.Dir(config), 0o755)
	os.WriteFile(config, []byte("# mine\nmodel = \"gpt-5\"\n"), 0o600)
	if _, errs, code := mmRun(t, home, "hooks", "install", "--client", "codex", "--user"); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got, _ := os.ReadFile(config); string(got) != "# mine\nmodel = \"gpt-5\"\n\n[features]\ncodex_hooks = true\n" {
		t.Fatalf("config.toml:\n%s", got)
	}
	hooks, err := os.ReadFile(filepath.Join(home, ".codex", "hooks.json"))
	if err != nil || !bytes.Contains(hooks, []byte(`"Stop"`)) || !bytes.Contains(hooks, []byte("--client codex")) {
		t.Fatalf("hooks.json %v:\n%s", err, hooks)
	}
	if _, err := os.Stat(filepath.Join(project, ".codex")); !os.IsNotExist(err) {
		t.Fatalf("--user touched the project: %v", err)
	}
	out, _, _ := mmRun(t, home, "hooks", "status", "--client", "codex", "--format", "human")
	if !strings.Contains(out, filepath.Join(home, ".codex", "hooks.json")+": installed") || strings.Contains(out, "config.toml") {
		t.Fatalf("status:\n%s", out)
	}
	// Turned off by the user afterwards: status says so; install does
	// not overrule it.
	os.WriteFile(config, []byte("[features]\nhooks = false\n"), 0o600)
	if out, _, _ := mmRun(t, home, "hooks", "status", "--client", "codex", "--format", "human"); !strings.Contains(out, "turns Codex's hooks off") {
		t.Fatalf("status:\n%s", out)
	}
	if _, errs, code := mmRun(t, home, "hooks", "install", "--client", "codex", "--user"); code != exitError || !strings.Contains(errs, "hooks = false") {
		t.Fatalf("install over hooks = false: exit %d, %s", code, errs)
	}
}

// TestHooksRefused: bad calls are usage errors (exit 2); a settings file
// that is not JSON fails the install (exit 1), unchanged.
func TestHooksRefused(t *testing.T) {
	home, project := hooksEnv(t)
	for _, args := range [][]string{
		{"hooks", "install"},
		{"hooks", "install", "--client", "cursor"},
		{"hooks", "install", "--client", "gemini", "--user", "--project"},
		{"hooks", "status", "--client", "cursor"},
	} {
		if _, errs, code := mmRun(t, home, args...); code != exitUsage {
			t.Errorf("%q: exit %d (%s), want %d", args, code, errs, exitUsage)
		}
	}
	settings := filepath.Join(project, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	broken := "{\"theme\": \"dark\",,}"
	os.WriteFile(settings, []byte(broken), 0o644)
	_, errs, code := mmRun(t, home, "hooks", "install", "--client", "gemini")
	if code != exitError || !strings.Contains(errs, "not valid JSON") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if got, _ := os.ReadFile(settings); string(got) != broken {
		t.Fatalf("broken file changed: %s", got)
	}
}
