package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/internal/inert"
)

// Sequences a memory may hold to take over the terminal that shows it.
const (
	clearScreen = "\x1b[2J"
	setTitle    = "\x1b]0;pwned\x07"
	csi8        = "\u009b2J" // the 8-bit CSI, as UTF-8
	override    = "\u202e"   // right-to-left override
	isolate     = "\u2066"   // left-to-right isolate
)

// hostile holds every trick once: clear screen, retitle, 8-bit CSI, a
// carriage return that would overwrite the line, DEL and bidi overrides.
// (A NUL makes content binary: it is refused, never stored.)
const hostile = clearScreen + setTitle + csi8 + " safe\roverwritten " + override + "gpj.exe" + isolate + "\x7f"

// activeIn describes the first character of out that could act on a
// terminal or reorder text (see package inert), or returns "".
func activeIn(out string) string {
	if i := inert.Index(out); i >= 0 {
		return fmt.Sprintf("an active character at byte %d of %q", i, out[max(0, i-40):min(len(out), i+40)])
	}
	return ""
}

// TestHostileTerminal stores memories whose title, content and edge notes
// hold terminal escapes, carriage returns and bidi overrides, then
// runs every command that prints them, in every format: no such character
// reaches standard output or standard error. JSON stays valid and gives
// the stored values exactly; the hook's Markdown is inert once decoded.
func TestHostileTerminal(t *testing.T) {
	home := newHome(t)
	capture := func(title, content string, args ...string) string {
		t.Helper()
		r := mm(t, home, content, append([]string{"capture", "--ns", "inert", "--json", "--title", title, "--file", "-"}, args...)...)
		var c captureOut
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &c) != nil {
			t.Fatalf("capture: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		return c.ID
	}
	title := "Pool sizing " + strings.ReplaceAll(hostile, "\r", "") // a title is one line
	content := "The pool in internal/db/pool.go holds 20 connections. " + hostile + "\nSecond line " + clearScreen
	first := capture(title, content, "--tag", "db")
	second := capture("Pool limits "+setTitle, "The pool in internal/db/pool.go holds 20 connections at most. "+override)
	var stale []string
	for i := range 3 {
		stale = append(stale, capture(fmt.Sprintf("Old pool note %d %s", i, clearScreen), fmt.Sprintf("old pool note about sizing connections %d %s", i, hostile)))
	}
	for _, id := range stale {
		ok(t, home, "update", id, "--status", "stale")
	}
	ok(t, home, "link", first, "contradicts", second, "--note", "notes "+hostile)
	ok(t, home, "link", first, "touches", "file:internal/db/pool.go", "--note", "see "+setTitle)

	commands := [][]string{
		{"show", first}, {"list", "--ns", "inert"}, {"search", "pool connections", "--ns", "inert", "--explain"},
		{"context", "--ns", "inert"}, {"graph", first, "--depth", "2"}, {"stale", "--ns", "inert"},
		{"analyze", "--ns", "inert"}, {"reflect", "--ns", "inert"}, {"doctor"}, {"impact", "internal/db/pool.go"},
		{"compact", "--dry-run", "--ns", "inert"}, {"stats"},
		{"capture", "--ns", "inert", "--title", "Again " + setTitle, "The pool in internal/db/pool.go holds 20 connections, really. " + clearScreen},
		{"show", "m-" + clearScreen + setTitle},
		{"link", first, "related_to", "file:" + clearScreen},
	}
	for _, cmd := range commands {
		for _, format := range []string{"human", "brief", "json"} {
			r := mm(t, home, "", append(cmd, "--format", format)...)
			for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
				if msg := activeIn(out); msg != "" {
					t.Errorf("memmesh %q --format %s: %s has %s", cmd, format, name, msg)
				}
			}
			if format == "json" && r.code == 0 && !json.Valid([]byte(r.stdout)) {
				t.Errorf("memmesh %q --json: not valid JSON:\n%s", cmd, r.stdout)
			}
		}
	}

	var m struct{ Title, Content string }
	okJSON(t, home, &m, "show", first, "--json")
	if m.Title != strings.TrimSpace(title) || m.Content != strings.TrimSpace(content) {
		t.Errorf("--json changed the stored values:\n got %q %q\nwant %q %q", m.Title, m.Content, title, content)
	}
	var hook struct {
		Out struct {
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	okJSON(t, home, &hook, "context", "--ns", "inert", "--hook")
	if !strings.Contains(hook.Out.Context, "Pool sizing") {
		t.Fatalf("the hook's brief lacks the memory:\n%s", hook.Out.Context)
	}
	if msg := activeIn(hook.Out.Context); msg != "" {
		t.Errorf("the hook's additionalContext has %s", msg)
	}
}
