package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinkAndGraph: link memories and an artefact on the CLI, walk the
// graph, refuse a cycle of supersedes (exit 1, nothing changed) and a bad
// date (exit 2), run a lifecycle pass that finds the superseded memory,
// then invalidate an edge so that the walk no longer follows it.
func TestLinkAndGraph(t *testing.T) {
	home := newHome(t)
	var a, b captureOut
	okJSON(t, home, &a, "capture", "Use pgx v5 for Postgres access")
	okJSON(t, home, &b, "capture", "Use lib/pq for Postgres access")
	ok(t, home, "link", a.ID, "supersedes", b.ID, "--note", "pgx is maintained")
	ok(t, home, "link", a.ID, "touches", "file:internal/db/pool.go:10-40")

	type graphOut struct {
		Nodes []struct {
			ID    string `json:"id"`
			Depth int    `json:"depth"`
		} `json:"nodes"`
		Edges []struct {
			Rel   string `json:"rel"`
			Notes string `json:"notes"`
		} `json:"edges"`
	}
	var g graphOut
	okJSON(t, home, &g, "graph", a.ID)
	if len(g.Nodes) != 3 || len(g.Edges) != 2 {
		t.Fatalf("graph of a = %+v, want a, b and the file with 2 edges", g)
	}

	r := mm(t, home, "", "link", b.ID, "supersedes", a.ID)
	if r.code != 1 || !strings.Contains(r.stderr, "cycle") {
		t.Fatalf("closing a cycle: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := mm(t, home, "", "link", a.ID, "related_to", b.ID, "--valid-to", "2026-02-30"); r.code != 2 {
		t.Fatalf("an impossible date: exit %d, stderr %q", r.code, r.stderr)
	}
	okJSON(t, home, &g, "graph", b.ID)
	if len(g.Nodes) != 2 {
		t.Fatalf("graph of b = %+v, want b and a (no cycle edge stored)", g)
	}

	var rep struct {
		Cycles    []any `json:"cycles"`
		Conflicts []any `json:"conflicts"`
	}
	okJSON(t, home, &rep, "doctor")
	if len(rep.Cycles) != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("doctor on a consistent home = %+v", rep)
	}

	var life struct {
		Live        int            `json:"live"`
		Stale       int            `json:"stale"`
		StaleByRule map[string]int `json:"stale_by_rule"`
	}
	okJSON(t, home, &life, "lifecycle")
	if life.Live != 2 || life.Stale != 1 || life.StaleByRule["superseded"] != 1 {
		t.Fatalf("lifecycle = %+v, want 2 live, b stale as superseded", life)
	}

	ok(t, home, "invalidate", a.ID, "supersedes", b.ID)
	okJSON(t, home, &g, "graph", b.ID)
	if len(g.Nodes) != 1 {
		t.Fatalf("graph of b after invalidating = %+v, want b alone", g)
	}
}

// TestCompact: three related memories marked stale form a cluster that
// --dry-run lists without changing anything and compact folds into a
// digest; the members stay, compacted into it.
func TestCompact(t *testing.T) {
	home := newHome(t)
	var ids []string
	for _, text := range []string{
		"The release checklist starts with the changelog",
		"The release checklist ends with the changelog tag",
		"Release checklist: bump the version, then the changelog",
	} {
		var c captureOut
		okJSON(t, home, &c, "capture", text)
		ok(t, home, "update", c.ID, "--status", "stale")
		ids = append(ids, c.ID)
	}
	var plan struct {
		Clusters []struct {
			Members []any `json:"members"`
		} `json:"clusters"`
	}
	okJSON(t, home, &plan, "compact", "--dry-run")
	if len(plan.Clusters) != 1 || len(plan.Clusters[0].Members) != 3 {
		t.Fatalf("compact --dry-run = %+v, want one cluster of three", plan)
	}
	var m struct {
		Status        string `json:"status"`
		CompactedInto string `json:"compacted_into"`
	}
	okJSON(t, home, &m, "show", ids[0])
	if m.Status != "stale" {
		t.Fatalf("after --dry-run: status %q", m.Status)
	}
	if out := ok(t, home, "compact", "--format", "human"); !strings.Contains(out, "Compacted 3 memories into m-") {
		t.Fatalf("compact printed %q", out)
	}
	okJSON(t, home, &m, "show", ids[2])
	if m.Status != "compacted" || m.CompactedInto == "" {
		t.Fatalf("member after compact: %+v", m)
	}
	if out := ok(t, home, "compact", "--dry-run", "--format", "human"); !strings.Contains(out, "No cluster") {
		t.Fatalf("compact --dry-run after compacting printed %q", out)
	}
	if r := mm(t, home, "", "compact", "apply", ids[0]); r.code != 2 {
		t.Fatalf("compact apply with one id: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestContextBrief: the brief of a namespace in Markdown and JSON, within
// its budget; a budget below the minimum is refused.
func TestContextBrief(t *testing.T) {
	home := newHome(t)
	ok(t, home, "capture", "--ns", "shop", "--kind", "decision", "Payments go through the Stripe adapter in billing/stripe.go")
	ok(t, home, "capture", "--ns", "other", "Unrelated note about the garden")
	md := ok(t, home, "context", "--ns", "shop", "--format", "markdown")
	if !strings.Contains(md, "# memmesh: what is known about shop") || !strings.Contains(md, "> Payments go through the Stripe adapter") ||
		strings.Contains(md, "garden") {
		t.Fatalf("markdown brief:\n%s", md)
	}
	var b struct {
		Namespace string `json:"namespace"`
		Budget    int    `json:"budget"`
		Tokens    int    `json:"tokens"`
		Decisions []struct {
			Kind string `json:"kind"`
		} `json:"recent_decisions"`
	}
	okJSON(t, home, &b, "context", "--ns", "shop", "--budget", "200")
	if b.Namespace != "shop" || len(b.Decisions) != 1 || b.Decisions[0].Kind != "decision" || b.Tokens > b.Budget || b.Budget != 200 {
		t.Fatalf("json brief = %+v", b)
	}
	if r := mm(t, home, "", "context", "--budget", "5"); r.code == 0 || !strings.Contains(r.stderr, "budget") {
		t.Fatalf("a budget of 5: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestContextHook: `memmesh context --hook` prints a SessionStart hook's
// JSON with the brief, and a UserPromptSubmit hook's with the memories
// that match the prompt; when the daemon cannot be reached it still exits
// 0 with empty context, so that it never blocks an agent's session.
func TestContextHook(t *testing.T) {
	home := newHome(t)
	ok(t, home, "capture", "Releases are tagged from main after the smoke tests pass")
	var out struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	okJSON(t, home, &out, "context", "--hook")
	if out.HookSpecificOutput.HookEventName != "SessionStart" || !strings.Contains(out.HookSpecificOutput.AdditionalContext, "> Releases are tagged from main") {
		t.Fatalf("hook output = %+v", out)
	}

	// A UserPromptSubmit hook, with the JSON Claude Code writes on stdin,
	// and Gemini CLI's BeforeAgent: the memories that match the prompt,
	// or nothing.
	ok(t, home, "capture", "--kind", "decision", "Use pgx, not lib/pq, for every Postgres connection: lib/pq is in maintenance mode")
	prompt := func(event, text string) string {
		in, _ := json.Marshal(map[string]string{"session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": home,
			"hook_event_name": event, "prompt": text})
		return string(in)
	}
	for _, event := range []string{"UserPromptSubmit", "BeforeAgent"} {
		for _, tc := range []struct {
			prompt, want string
		}{
			{"Switch the reports service to the lib/pq Postgres driver", "> Use pgx, not lib/pq"},
			{"Bake a chocolate cake for the birthday party", ""},
		} {
			r := mm(t, home, prompt(event, tc.prompt), "context", "--hook")
			out.HookSpecificOutput.AdditionalContext = ""
			if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil || out.HookSpecificOutput.HookEventName != event {
				t.Fatalf("%s %q: exit %d, stdout %q, stderr %q", event, tc.prompt, r.code, r.stdout, r.stderr)
			}
			got := out.HookSpecificOutput.AdditionalContext
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) || strings.Contains(got, "Releases are tagged") {
				t.Errorf("%s %q: additional context %q, want %q only", event, tc.prompt, got, tc.want)
			}
		}
	}
	if r := mm(t, home, `{"hook_event_name":"SessionStart","source":"startup"}`, "context", "--hook"); !strings.Contains(r.stdout, `"hookEventName":"SessionStart"`) ||
		!strings.Contains(r.stdout, "Releases are tagged") {
		t.Errorf("SessionStart on stdin: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// A home whose data directory is a file: the daemon cannot start.
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := mm(t, broken, "", "context", "--hook")
	if r.code != 0 || !strings.Contains(r.stdout, `"additionalContext":""`) || !strings.Contains(r.stderr, "no brief") {
		t.Fatalf("hook without a daemon: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
