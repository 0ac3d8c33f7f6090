package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentFiles drives the binary and its daemon through a repository's
// CLAUDE.md: imported into the namespace its directory is mapped to,
// imported again after an edit (one memory updated), exported into
// AGENTS.md's managed block, checked (--check) before and after a
// change, refused over a hand edit and a read-only file, and bad files
// refused with the file untouched.
func TestAgentFiles(t *testing.T) {
	home := newHome(t)
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	fixture, err := os.ReadFile("../agentfiles/testdata/CLAUDE.md")
	if err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(repo, "CLAUDE.md")
	os.WriteFile(claude, fixture, 0o644)
	ok(t, home, "map", repo, "acme")

	type imported struct {
		File      string `json:"file"`
		Namespace string `json:"namespace"`
		Created   int    `json:"created"`
		Updated   int    `json:"updated"`
		Unchanged int    `json:"unchanged"`
		Removed   int    `json:"removed"`
	}
	var imp imported
	okJSON(t, home, &imp, "import", "--from", "claude-md", claude, "--json")
	if imp.File != "CLAUDE.md" || imp.Namespace != "acme" || imp.Created != 16 {
		t.Fatalf("import: %+v: want 16 created in acme from CLAUDE.md", imp)
	}
	os.WriteFile(claude, []byte(strings.Replace(string(fixture), "- Lint with `golangci-lint run`", "- Lint with `golangci-lint run --fix`", 1)), 0o644)
	okJSON(t, home, &imp, "import", "--from", "claude-md", claude, "--json")
	if imp.Created != 0 || imp.Updated != 1 || imp.Unchanged != 15 {
		t.Fatalf("import after one edit: %+v: want 1 updated, 15 unchanged", imp)
	}
	var list struct {
		Memories []struct {
			Tier    string `json:"tier"`
			Content string `json:"content"`
		} `json:"memories"`
	}
	okJSON(t, home, &list, "list", "--ns", "acme", "--json", "--limit", "100")
	if len(list.Memories) != 16 || list.Memories[0].Tier != "human" {
		t.Fatalf("%d memories listed (first %+v), want 16 of tier human", len(list.Memories), list.Memories)
	}

	agents := filepath.Join(repo, "AGENTS.md")
	mine := "# AGENTS.md\n\nHand-written, and kept as it is.\n"
	os.WriteFile(agents, []byte(mine), 0o644)
	if r := mm(t, home, "", "export", "--to", "agents-md", agents, "--check"); r.code != 1 || !strings.Contains(r.stderr, "no managed block") {
		t.Fatalf("check before an export: exit %d\n%s", r.code, r.stderr)
	}
	ok(t, home, "export", "--to", "agents-md", agents)
	written, _ := os.ReadFile(agents)
	if !strings.HasPrefix(string(written), mine+"\n<!-- memmesh:begin sha256=") || !strings.Contains(string(written), "golangci-lint run --fix") {
		t.Fatalf("AGENTS.md after the export:\n%s", written)
	}
	backups, _ := filepath.Glob(filepath.Join(home, "backups", "AGENTS.md.memmesh-backup-*"))
	if len(backups) != 1 {
		t.Fatalf("backups %v: want the file as it was", backups)
	}
	ok(t, home, "export", "--to", "agents-md", agents, "--check")
	// The file's own items are not written back into it.
	ok(t, home, "export", "--to", "claude-md", claude)
	if data, _ := os.ReadFile(claude); strings.Count(string(data), "Wrap errors with") != 1 {
		t.Fatalf("CLAUDE.md repeats its own items:\n%s", data)
	}

	ok(t, home, "capture", "--ns", "acme", "--kind", "convention", "Benchmarks run with -count 5")
	if r := mm(t, home, "", "export", "--to", "agents-md", agents, "--check"); r.code != 1 || !strings.Contains(r.stderr, "+- Benchmarks run with -count 5") {
		t.Fatalf("check after a new convention: exit %d\n%s", r.code, r.stderr)
	}
	ok(t, home, "export", "--to", "agents-md", agents)

	edited := strings.Replace(mustRead(t, agents), "Benchmarks run with -count 5", "Benchmarks run with -count 10", 1)
	os.WriteFile(agents, []byte(edited), 0o644)
	ok(t, home, "capture", "--ns", "acme", "--kind", "decision", "Releases are cut on Tuesdays")
	if r := mm(t, home, "", "export", "--to", "agents-md", agents); r.code != 1 || !strings.Contains(r.stderr, "edited by hand") || !strings.Contains(r.stderr, "-- Benchmarks run with -count 10") {
		t.Fatalf("export over a hand edit: exit %d\n%s", r.code, r.stderr)
	}
	if mustRead(t, agents) != edited {
		t.Fatal("a hand-edited block was written over")
	}
	ok(t, home, "export", "--to", "agents-md", agents, "--force")
	if got := mustRead(t, agents); !strings.Contains(got, "Releases are cut on Tuesdays") || strings.Contains(got, "-count 10") {
		t.Fatalf("forced export:\n%s", got)
	}

	os.Chmod(agents, 0o444)
	ok(t, home, "capture", "--ns", "acme", "--kind", "convention", "Keep commits small")
	before := mustRead(t, agents)
	if r := mm(t, home, "", "export", "--to", "agents-md", agents); r.code != 1 || !strings.Contains(r.stderr, "read-only") {
		t.Fatalf("export into a read-only file: exit %d\n%s", r.code, r.stderr)
	}
	if mustRead(t, agents) != before {
		t.Fatal("a read-only file changed")
	}

	for name, content := range map[string]string{
		"latin1.md": "# Caf\xe9\n\n- ok\n",
		"huge.md":   strings.Repeat("- a line of a file far too large\n", 40000),
		"binary.md": "\x7fELF\x02\x01\x01\x00",
	} {
		path := filepath.Join(repo, name)
		os.WriteFile(path, []byte(content), 0o644)
		if r := mm(t, home, "", "import", "--from", "claude-md", path); r.code != 1 || !strings.Contains(r.stderr, "memmesh:") {
			t.Fatalf("import of %s: exit %d\n%s", name, r.code, r.stderr)
		}
		if mustRead(t, path) != content {
			t.Fatalf("%s changed", name)
		}
	}
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("- not for the repository\n"), 0o600)
	os.Symlink(outside, filepath.Join(repo, "LINK.md"))
	if r := mm(t, home, "", "import", "--from", "claude-md", filepath.Join(repo, "LINK.md")); r.code != 1 || !strings.Contains(r.stderr, "outside the repository") {
		t.Fatalf("import through a symlink out of the repository: exit %d\n%s", r.code, r.stderr)
	}
	okJSON(t, home, &list, "list", "--ns", "acme", "--json", "--limit", "100")
	for _, m := range list.Memories {
		if strings.Contains(m.Content, "far too large") || strings.Contains(m.Content, "not for the repository") {
			t.Fatalf("a refused file was imported: %q", m.Content)
		}
	}
	for _, argv := range [][]string{
		{"export", "--to", "cursorrules", agents},
		{"import", "--from", "claude-md", "-"},
		{"export", "--check"},
		{"import", "--dry-run", claude},
	} {
		if r := mm(t, home, "", argv...); r.code != 2 {
			t.Fatalf("memmesh %s: exit %d, want 2 (usage)\n%s", strings.Join(argv, " "), r.code, r.stderr)
		}
	}
	var dry imported
	okJSON(t, home, &dry, "import", "--from", "claude-md", claude, "--dry-run", "--json")
	if dry.Unchanged != 16 {
		t.Fatalf("dry run of the file as imported: %+v", dry)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
