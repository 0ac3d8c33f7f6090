package hookconf

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)

func claude(t *testing.T) Client {
	t.Helper()
	c, err := Lookup("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// backups lists the backups beside path.
func backups(t *testing.T, path string) []string {
	t.Helper()
	found, err := filepath.Glob(path + ".memmesh-backup-*")
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// TestInstallNewFile: a missing settings file is created with memmesh's
// hooks in the shape the clients read, and nothing else.
func TestInstallNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude", "settings.json")
	res, err := Install(path, claude(t).Hooks, now)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Backup != "" {
		t.Fatalf("result %+v: want changed, no backup", res)
	}
	want := `{
  "hooks": {
    "SessionStart": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "memmesh context --hook"
          }
        ]
      }
    ],
    "UserPromptSubmit": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "memmesh context --hook"
          }
        ]
      }
    ],
    "PreCompact": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "memmesh sessions ingest --hook --client claude-code"
          }
        ]
      }
    ],
    "SessionEnd": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "memmesh sessions ingest --hook --client claude-code"
          }
        ]
      }
    ]
  }
}
`
	if got := read(t, path); got != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	events, err := Installed(path)
	if err != nil || !slices.Equal(events, []string{"SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"}) {
		t.Fatalf("installed %v, %v", events, err)
	}
	// An empty file, or one of blank lines, is taken as no file.
	blank := filepath.Join(t.TempDir(), "settings.json")
	write(t, blank, "\n\n", 0o644)
	if _, err := Install(blank, claude(t).Hooks, now); err != nil {
		t.Fatal(err)
	}
	if got := read(t, blank); got != want {
		t.Fatalf("installed in a blank file:\n%s", got)
	}
	// Uninstalled, the file memmesh made is gone, its backup kept.
	res, err = Uninstall(path, now)
	if err != nil || !res.Removed {
		t.Fatalf("uninstall %+v, %v: want the file removed", res, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file still there: %v", err)
	}
	if got := backups(t, path); len(got) != 1 || read(t, got[0]) != want {
		t.Fatalf("backups %v: want the removed file's", got)
	}
}

// userSettings is a Claude Code settings file as a user has it: other
// keys around "hooks", hooks of their own, on events memmesh uses too.
const userSettings = `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": [
      "Bash(npm run lint)",
      "Bash(go test ./...)"
    ],
    "deny": []
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/check <cmd> && echo ok",
            "timeout": 30
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "echo \"héllo\" > /tmp/start"
          }
        ]
      }
    ]
  },
  "cleanupPeriodDays": 1.50,
  "env": {},
  "model": "opus"
}
`

// TestInstallKeepsTheRest: installing into a user's settings keeps every
// other key, hook, number and the key order; the file is backed up first;
// installing again changes nothing; uninstalling gives back the very bytes
// of the file.
func TestInstallKeepsTheRest(t *testing.T) {
	for _, c := range Clients {
		t.Run(c.Name, func(t *testing.T) {
			path := c.Path(t.TempDir())
			write(t, path, userSettings, 0o600)
			res, err := Install(path, c.Hooks, now)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || len(res.Events) != 4 {
				t.Fatalf("result %+v: want 4 events added", res)
			}
			if got := backups(t, path); len(got) != 1 || got[0] != res.Backup || read(t, got[0]) != userSettings {
				t.Fatalf("backups %v (result's %q): want one, with the original", got, res.Backup)
			}
			installed := read(t, path)
			for _, keep := range []string{`"$schema"`, `"Bash(npm run lint)"`, `"~/bin/check <cmd> && echo ok"`, `"timeout": 30`, `"echo \"héllo\" > /tmp/start"`, `"cleanupPeriodDays": 1.50`, `"env": {}`, `"deny": []`} {
				if !strings.Contains(installed, keep) {
					t.Errorf("installed file lost %s:\n%s", keep, installed)
				}
			}
			if i, j := strings.Index(installed, `"permissions"`), strings.Index(installed, `"model"`); i > j {
				t.Errorf("keys reordered:\n%s", installed)
			}
			info, err := os.Stat(path)
			if err != nil || info.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v, %v: want 0600 kept", info.Mode(), err)
			}

			res, err = Install(path, c.Hooks, now.Add(time.Second))
			if err != nil || res.Changed {
				t.Fatalf("second install %+v, %v: want no change", res, err)
			}
			if read(t, path) != installed || len(backups(t, path)) != 1 {
				t.Fatal("second install wrote the file")
			}

			res, err = Uninstall(path, now.Add(2*time.Second))
			if err != nil || !res.Changed || res.Removed {
				t.Fatalf("uninstall %+v, %v", res, err)
			}
			if got := read(t, path); got != userSettings {
				t.Fatalf("uninstalled file:\n%s\nwant the original:\n%s", got, userSettings)
			}
			if len(backups(t, path)) != 2 {
				t.Fatalf("backups %v: want one per change", backups(t, path))
			}
			res, err = Uninstall(path, now.Add(3*time.Second))
			if err != nil || res.Changed {
				t.Fatalf("second uninstall %+v, %v: want no change", res, err)
			}
		})
	}
}

// TestRoundTripLayouts: files indented with tabs or four spaces, on one
// line, or without a final newline come back byte for byte.
func TestRoundTripLayouts(t *testing.T) {
	for name, content := range map[string]string{
		"tabs":        "{\n\t\"model\": \"opus\",\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\n\t\t\t\t\"hooks\": [\n\t\t\t\t\t{\n\t\t\t\t\t\t\"type\": \"command\",\n\t\t\t\t\t\t\"command\": \"say done\"\n\t\t\t\t\t}\n\t\t\t\t]\n\t\t\t}\n\t\t]\n\t}\n}\n",
		"four spaces": "{\n    \"model\": \"opus\",\n    \"n\": 1e3\n}",
		"one line":    `{"model":"opus","env":{}}`,
		"empty":       "{}\n",
		"windows":     "{\r\n  \"model\": \"opus\",\r\n  \"env\": {\r\n    \"A\": \"b\"\r\n  }\r\n}\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			write(t, path, content, 0o644)
			if _, err := Install(path, claude(t).Hooks, now); err != nil {
				t.Fatal(err)
			}
			res, err := Uninstall(path, now)
			if err != nil {
				t.Fatal(err)
			}
			if res.Removed {
				if content != "{}\n" {
					t.Fatalf("removed a file that held settings")
				}
				return
			}
			if got := read(t, path); got != content {
				t.Fatalf("got:\n%q\nwant:\n%q", got, content)
			}
		})
	}
}

// TestRefused: a file that is not JSON, not an object, with "hooks" of
// another shape, too large or not a file is left alone, with an error
// that says so, and no backup.
func TestRefused(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":          `{"hooks": {"SessionStart": [}`,
		"trailing data":     `{} {}`,
		"comments":          "{\n  // mine\n  \"model\": \"opus\"\n}\n",
		"not an object":     `["hooks"]`,
		"hooks not object":  `{"hooks": []}`,
		"event not a list":  `{"hooks": {"SessionStart": {"command": "x"}}}`,
		"too large":         `{"k": "` + strings.Repeat("x", MaxFile) + `"}`,
		"deeply nested":     strings.Repeat("[", maxDepth+10) + strings.Repeat("]", maxDepth+10),
		"byte order marked": "\ufeff{}",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			write(t, path, content, 0o644)
			_, err := Install(path, claude(t).Hooks, now)
			if err == nil || !strings.Contains(err.Error(), "left alone") {
				t.Fatalf("error %v: want one saying the file is left alone", err)
			}
			if read(t, path) != content || len(backups(t, path)) != 0 {
				t.Fatal("refused file changed or backed up")
			}
			// Uninstall has nothing to remove from an event of another
			// shape, and leaves it.
			if _, err := Uninstall(path, now); err == nil && name != "event not a list" {
				t.Fatal("uninstall took it")
			}
			if read(t, path) != content {
				t.Fatal("uninstall changed a refused file")
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "settings.json")
		os.Mkdir(path, 0o755)
		if _, err := Install(path, claude(t).Hooks, now); err == nil {
			t.Fatal("a directory was taken for settings")
		}
	})
}

// TestExistingMemmeshHooks: memmesh's hooks written by hand (as the README
// once said, with other flags or a full path) are not added again, and
// uninstall takes them out of a group without the user's own handlers.
func TestExistingMemmeshHooks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	write(t, path, `{
  "hooks": {
    "SessionStart": [
      {
        "hooks": [
          {"type": "command", "command": "/usr/local/bin/memmesh --home /srv/mm context --hook --budget 800"},
          {"type": "command", "command": "date >> ~/sessions.log"}
        ]
      }
    ],
    "UserPromptSubmit": [
      {"hooks": [{"type": "command", "command": "memmesh context --hook"}]}
    ]
  }
}
`, 0o644)
	res, err := Install(path, claude(t).Hooks, now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Events, []string{"PreCompact", "SessionEnd"}) {
		t.Fatalf("added %v: want only the events without memmesh", res.Events)
	}
	if n := strings.Count(read(t, path), "context --hook"); n != 2 {
		t.Fatalf("%d context hooks: want the 2 there were", n)
	}
	if _, err := Uninstall(path, now); err != nil {
		t.Fatal(err)
	}
	got := read(t, path)
	want := `{
  "hooks": {
    "SessionStart": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "date >> ~/sessions.log"
          }
        ]
      }
    ]
  }
}
`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestDuplicateKeys: of two "hooks" members the clients read the last;
// memmesh's hooks go there, and the first is left as it was.
func TestDuplicateKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	content := `{"hooks":{"Stop":[]},"model":"opus","hooks":{}}`
	write(t, path, content, 0o644)
	if _, err := Install(path, claude(t).Hooks, now); err != nil {
		t.Fatal(err)
	}
	got := read(t, path)
	if !strings.HasPrefix(got, `{"hooks":{"Stop":[]},"model":"opus","hooks":{"SessionStart":`) {
		t.Fatalf("got %s", got)
	}
	if _, err := Uninstall(path, now); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != `{"hooks":{"Stop":[]},"model":"opus"}` {
		t.Fatalf("uninstalled: %s", got)
	}
}

// TestSymlinkFollowed: a settings file that is a symlink (a dotfile
// manager's) stays a symlink; the file it names is edited.
func TestSymlinkFollowed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "settings.json")
	write(t, target, "{}\n", 0o644)
	link := filepath.Join(dir, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(link, claude(t).Hooks, now); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi.Mode(), err)
	}
	if !strings.Contains(read(t, target), "memmesh context --hook") {
		t.Fatal("the linked file was not edited")
	}
}

// TestGeminiHandlersNamed: Gemini CLI's handlers carry a name, first.
func TestGeminiHandlersNamed(t *testing.T) {
	c, err := Lookup("gemini")
	if err != nil {
		t.Fatal(err)
	}
	path := c.Path(t.TempDir())
	if _, err := Install(path, c.Hooks, now); err != nil {
		t.Fatal(err)
	}
	got := read(t, path)
	for _, want := range []string{`"BeforeAgent"`, `"PreCompress"`, "\"name\": \"memmesh-context\",\n            \"type\": \"command\",\n            \"command\": \"memmesh context --hook\"", `"memmesh sessions ingest --hook --client gemini"`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in:\n%s", want, got)
		}
	}
	if _, err := Lookup("cursor"); err == nil || !strings.Contains(err.Error(), "claude-code, codex, gemini") {
		t.Fatalf("unknown client: %v", err)
	}
}

func TestMemmeshCommand(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"memmesh context --hook", "context"},
		{"/opt/bin/memmesh --home /x context --budget 900 --hook", "context"},
		{`"/Users/me/bin/memmesh" context --hook`, "context"},
		{"memmesh sessions ingest --hook --client codex", "ingest"},
		{"memmesh --format json sessions ingest --hook=true", "ingest"},
		{"memmesh context", ""},
		{"memmesh sessions list --hook", ""},
		{"notmemmesh context --hook", ""},
		{"echo memmesh context --hook", ""},
		{"memmesh --home context --hook", ""},
		{"", ""},
	} {
		if got := memmeshCommand(tc.line); got != tc.want {
			t.Errorf("memmeshCommand(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// BenchmarkInstallUninstall installs into and uninstalls from a large
// user settings file (3,000 permission rules, 200 hooks: 127 KB), fsyncs
// and backups included.
func BenchmarkInstallUninstall(b *testing.B) {
	var s strings.Builder
	s.WriteString("{\n  \"permissions\": {\n    \"allow\": [\n")
	for i := range 3000 {
		if i > 0 {
			s.WriteString(",\n")
		}
		fmt.Fprintf(&s, "      \"Bash(npm run task%d)\"", i)
	}
	s.WriteString("\n    ]\n  },\n  \"hooks\": {\n    \"PreToolUse\": [\n")
	for i := range 200 {
		if i > 0 {
			s.WriteString(",\n")
		}
		fmt.Fprintf(&s, "      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"check%d\"\n          }\n        ]\n      }", i)
	}
	s.WriteString("\n    ]\n  },\n  \"model\": \"opus\"\n}\n")
	original := s.String()
	path := filepath.Join(b.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(original), 0o644); err != nil {
		b.Fatal(err)
	}
	hooks := Clients[0].Hooks
	b.SetBytes(int64(len(original)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at := now.Add(time.Duration(i) * time.Second)
		if _, err := Install(path, hooks, at); err != nil {
			b.Fatal(err)
		}
		if _, err := Uninstall(path, at); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if data, _ := os.ReadFile(path); string(data) != original {
		b.Fatal("the file did not come back as it was")
	}
}
