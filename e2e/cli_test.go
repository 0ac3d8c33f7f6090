package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memmesh/memmesh/api"
)

type captureOut struct {
	ID          string `json:"id"`
	ShortID     string `json:"short_id"`
	DuplicateOf string `json:"duplicate_of"`
	Similar     []struct {
		ID string `json:"id"`
	} `json:"similar"`
}

type searchOut struct {
	Results []struct {
		ID        string  `json:"id"`
		Title     string  `json:"title"`
		Content   string  `json:"content"`
		Namespace string  `json:"namespace"`
		Score     float64 `json:"score"`
	} `json:"results"`
}

type statsOut struct {
	Memories int `json:"memories"`
}

func TestCaptureSearchRestart(t *testing.T) {
	home := newHome(t)
	var c captureOut
	okJSON(t, home, &c, "capture", "--ns", "backend", "--tag", "db", "--kind", "decision",
		"Use pgx instead of lib/pq for Postgres: lib/pq is in maintenance mode")
	if !strings.HasPrefix(c.ID, "m-") || c.DuplicateOf != "" {
		t.Fatalf("capture answered %+v", c)
	}

	var s searchOut
	okJSON(t, home, &s, "search", "--ns", "backend", "postgres driver pgx")
	if len(s.Results) == 0 || s.Results[0].ID != c.ID || s.Results[0].Namespace != "backend" || !strings.Contains(s.Results[0].Content, "lib/pq") {
		t.Fatalf("search did not find the capture first: %+v", s)
	}

	// The same text again is a duplicate, not a second memory.
	var dup captureOut
	okJSON(t, home, &dup, "capture", "--ns", "backend", "Use pgx instead of lib/pq for Postgres: lib/pq is in maintenance mode")
	if dup.DuplicateOf != c.ID || dup.ID != c.ID {
		t.Fatalf("duplicate capture answered %+v, want duplicate_of %s", dup, c.ID)
	}

	ok(t, home, "stop")
	if _, err := os.Stat(filepath.Join(home, "memmesh.sock")); !os.IsNotExist(err) {
		t.Fatalf("socket still there after stop: %v", err)
	}
	// The next command starts the daemon again; the memory is still there.
	okJSON(t, home, &s, "search", "--ns", "backend", "pgx")
	if len(s.Results) != 1 || s.Results[0].ID != c.ID {
		t.Fatalf("after restart search found %+v", s)
	}
	if out := ok(t, home, "show", c.ShortID, "--format", "brief"); !strings.Contains(out, "maintenance mode") {
		t.Fatalf("show after restart: %q", out)
	}
}

func TestUpdateForgetDelete(t *testing.T) {
	home := newHome(t)
	var c captureOut
	okJSON(t, home, &c, "capture", "--title", "Deploys", "Deploy with make release; never push tags by hand")
	ok(t, home, "update", c.ID, "--tag-add", "ops", "--content", "Deploy with make release, which tags and pushes")

	var m struct {
		Content   string   `json:"content"`
		Tags      []string `json:"tags"`
		Revisions []any    `json:"revisions"`
		Status    string   `json:"status"`
	}
	okJSON(t, home, &m, "show", c.ID)
	if m.Content != "Deploy with make release, which tags and pushes" || len(m.Revisions) != 2 || len(m.Tags) != 1 || m.Tags[0] != "ops" {
		t.Fatalf("after update: %+v", m)
	}

	ok(t, home, "forget", c.ID)
	var s searchOut
	okJSON(t, home, &s, "search", "deploy")
	if len(s.Results) != 0 {
		t.Fatalf("a forgotten memory is still found: %+v", s)
	}
	okJSON(t, home, &s, "search", "deploy", "--status", "archived")
	if len(s.Results) != 1 {
		t.Fatalf("an archived memory is not found with --status archived: %+v", s)
	}
	ok(t, home, "update", c.ID, "--status", "active")
	okJSON(t, home, &s, "search", "deploy")
	if len(s.Results) != 1 {
		t.Fatalf("a restored memory is not found: %+v", s)
	}

	ok(t, home, "delete", c.ID)
	okJSON(t, home, &m, "show", c.ID)
	if m.Status != "deleted" {
		t.Fatalf("status after delete = %q", m.Status)
	}
	if r := mm(t, home, "", "update", c.ID, "--title", "x"); r.code != 1 {
		t.Fatalf("updating a deleted memory: exit %d", r.code)
	}
}

func TestCaptureFromStdinAndFile(t *testing.T) {
	home := newHome(t)
	r := mm(t, home, "Flaky test TestSync: the fake clock must be advanced after Start\n", "capture", "--kind", "bug")
	if r.code != 0 {
		t.Fatalf("capture from stdin: exit %d: %s", r.code, r.stderr)
	}
	file := filepath.Join(home, "note.md")
	os.WriteFile(file, []byte("# Logging\nUse log/slog with a component attribute in every package."), 0o600)
	ok(t, home, "capture", "--file", file)
	var s searchOut
	okJSON(t, home, &s, "search", "slog")
	if len(s.Results) != 1 || s.Results[0].Title != "Logging" {
		t.Fatalf("search for a captured file: %+v", s)
	}
	okJSON(t, home, &s, "search", "fake clock")
	if len(s.Results) != 1 {
		t.Fatalf("search for stdin capture: %+v", s)
	}
}

func TestSecretsAreScrubbed(t *testing.T) {
	home := newHome(t)
	secret := "ghp_" + strings.Repeat("a1B2c3D4e5", 4)[:36]
	var c captureOut
	okJSON(t, home, &c, "capture", "The CI token is "+secret+" and lives in the vault")
	out := ok(t, home, "export")
	if strings.Contains(out, secret) {
		t.Fatal("a GitHub token was stored")
	}
	if !strings.Contains(out, "REDACTED") {
		t.Fatalf("export shows no redaction marker: %s", out)
	}
}

func TestSearchAndListFilters(t *testing.T) {
	home := newHome(t)
	var human, agent captureOut
	okJSON(t, home, &human, "capture", "--ns", "ops", "--tag", "k8s", "Drain nodes before upgrading the kubernetes cluster")
	okJSON(t, home, &agent, "capture", "--ns", "ops", "--tier", "agent", "--kind", "bug", "Kubernetes upgrade failed while pods were not drained")

	var s searchOut
	okJSON(t, home, &s, "search", "--ns", "ops", "kubernetes", "--tier", "agent")
	if len(s.Results) != 1 || s.Results[0].ID != agent.ID {
		t.Fatalf("--tier agent: %+v", s)
	}
	okJSON(t, home, &s, "search", "--ns", "ops", "kubernetes", "--tag", "k8s")
	if len(s.Results) != 1 || s.Results[0].ID != human.ID {
		t.Fatalf("--tag k8s: %+v", s)
	}
	okJSON(t, home, &s, "search", "--all-ns", "kubernetes", "--kind", "bug")
	if len(s.Results) != 1 || s.Results[0].ID != agent.ID {
		t.Fatalf("--kind bug: %+v", s)
	}
	okJSON(t, home, &s, "search", "--ns", "ops", "\"upgrading the kubernetes\"")
	if len(s.Results) != 1 || s.Results[0].ID != human.ID {
		t.Fatalf("phrase: %+v", s)
	}
	okJSON(t, home, &s, "search", "--ns", "ops", "kubernets")
	if len(s.Results) != 2 {
		t.Fatalf("misspelt query: %+v", s)
	}

	var l struct {
		Memories []struct{ ID string } `json:"memories"`
	}
	okJSON(t, home, &l, "list", "--ns", "ops", "--since", "1d")
	if len(l.Memories) != 2 || l.Memories[0].ID != agent.ID {
		t.Fatalf("list --since 1d (newest first): %+v", l)
	}
	okJSON(t, home, &l, "list", "--ns", "ops", "--until", "2020-01-01")
	if len(l.Memories) != 0 {
		t.Fatalf("list --until 2020-01-01: %+v", l)
	}
	if r := mm(t, home, "", "list", "--since", "last tuesday"); r.code != 2 || !strings.Contains(r.stderr, "--since") {
		t.Fatalf("bad --since: exit %d, %q", r.code, r.stderr)
	}
}

func TestServeStopsCleanlyOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			home := newHome(t)
			cmd, c := startServe(t, home)
			if _, err := c.Remember(context.Background(), api.RememberRequest{Content: "written just before " + sig.String()}); err != nil {
				t.Fatal(err)
			}
			cmd.Process.Signal(sig)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("serve exited with %v on %s", err, sig)
			}
			if _, err := os.Stat(filepath.Join(home, "memmesh.sock")); !os.IsNotExist(err) {
				t.Fatalf("socket left behind after %s", sig)
			}
			if log, _ := os.ReadFile(filepath.Join(home, "serve.log")); !strings.Contains(string(log), "msg=stopped") {
				t.Fatalf("no clean stop in the log:\n%s", log)
			}
			var s searchOut
			okJSON(t, home, &s, "search", "written just before")
			if len(s.Results) != 1 {
				t.Fatalf("memory written before %s is gone: %+v", sig, s)
			}
		})
	}
}

func TestShellCompletion(t *testing.T) {
	home := newHome(t)
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if out := ok(t, home, "completion", shell); !strings.Contains(out, "memmesh") {
			t.Errorf("%s completion does not mention memmesh", shell)
		}
	}
	// Shells ask the binary itself for candidates.
	if out := ok(t, home, "__complete", "ca"); !strings.Contains(out, "capture") {
		t.Errorf("completing 'ca' does not offer capture: %q", out)
	}
}
