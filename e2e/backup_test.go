package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/homescan"
	"github.com/memmesh/memmesh/internal/syncbuf"
)

// exportBody is an export without its header line, which names the
// device and the time of the export.
func exportBody(export string) string {
	if strings.HasPrefix(export, `{"type":"header"`) {
		_, rest, _ := strings.Cut(export, "\n")
		return rest
	}
	return export
}

// TestExportImportRoundTrip backs up a home with revisions, statuses,
// edges (with notes, strength, validity, an unlinked one), namespace
// settings and a purge, restores it into a new home through the CLI, and
// compares the exports and what graph and impact answer.
func TestExportImportRoundTrip(t *testing.T) {
	src := newHome(t)
	var a, b, c, d captureOut
	okJSON(t, src, &a, "capture", "--ns", "web", "--tag", "css", "Prefer CSS grid over flexbox, see web/layout.css")
	okJSON(t, src, &b, "capture", "--ns", "web", "--kind", "bug", "--tier", "agent", "Safari needs -webkit-backdrop-filter in web/layout.css")
	okJSON(t, src, &c, "capture", "--ns", "api", "--evergreen", "Every endpoint returns RFC 7807 problem details")
	okJSON(t, src, &d, "capture", "--ns", "api", "A note that is purged")
	ok(t, src, "update", a.ID, "--content", "Prefer CSS grid for page layout, flexbox inside components; see web/layout.css")
	ok(t, src, "link", b.ID, "depends_on", a.ID, "--note", "grid first", "--strength", "0.6")
	ok(t, src, "link", a.ID, "touches", "file:web/layout.css:1-20", "--valid-from", "2026-01-01")
	ok(t, src, "link", c.ID, "contradicts", a.ID)
	ok(t, src, "link", c.ID, "related_to", b.ID)
	ok(t, src, "link", d.ID, "related_to", c.ID)
	ok(t, src, "unlink", c.ID, "related_to", b.ID)
	ok(t, src, "invalidate", c.ID, "contradicts", a.ID)
	ok(t, src, "ns", "set", "api", "--stale-after", "30d")
	ok(t, src, "forget", b.ID)
	ok(t, src, "delete", c.ID)
	ok(t, src, "purge", "--yes", d.ID)
	first := filepath.Join(src, "first.jsonl")
	ok(t, src, "export", "--out", first)

	dst := newHome(t)
	var res struct {
		Imported, Skipped, Edges, Namespaces, Purged int
		EdgesSkipped                                 int `json:"edges_skipped"`
	}
	okJSON(t, dst, &res, "import", first)
	if res.Imported != 3 || res.Edges != 4 || res.Namespaces != 1 || res.Purged != 1 {
		t.Fatalf("import = %+v, want 3 memories, 4 edges, 1 namespace, 1 purge", res)
	}
	second := filepath.Join(dst, "second.jsonl")
	ok(t, dst, "export", "--out", second)
	want, _ := os.ReadFile(first)
	got, _ := os.ReadFile(second)
	if exportBody(string(got)) != exportBody(string(want)) {
		t.Fatalf("export after import differs:\nfirst:  %s\nsecond: %s", want, got)
	}
	for _, args := range [][]string{
		{"graph", a.ID, "--depth", "3"}, {"graph", b.ID}, {"graph", c.ID, "--as-of", "2026-06-01"},
		{"impact", "web/layout.css"}, {"stale", "--ns", "web"},
	} {
		if before, after := withoutHeads(t, ok(t, src, args...)), withoutHeads(t, ok(t, dst, args...)); before != after {
			t.Errorf("%v answers differently after the import:\nbefore %s\nafter  %s", args, before, after)
		}
	}
	if r := mm(t, dst, "", "show", d.ID); r.code != 1 || !strings.Contains(r.stderr, "purged") {
		t.Fatalf("show of the purged memory in the new home: exit %d, %q", r.code, r.stderr)
	}
	// Importing again skips what is there.
	okJSON(t, dst, &res, "import", first)
	if res.Imported != 0 || res.Skipped != 3 || res.Edges != 0 || res.EdgesSkipped != 4 {
		t.Fatalf("second import: %+v", res)
	}
}

// TestImportProgressAndInterruption imports a large file on a terminal
// (progress shown), interrupts it with Ctrl-C (it says how far it got),
// and completes it by running the same command again.
func TestImportProgressAndInterruption(t *testing.T) {
	src := newHome(t)
	var file bytes.Buffer
	fmt.Fprintln(&file, `{"type":"header","format":"memmesh-export","version":2}`)
	const total = 40000
	for i := range total {
		fmt.Fprintf(&file, `{"type":"memory","id":"m-%s","namespace":"bulk","content":"bulk note %d about the build cache %s","kind":"note","tier":"agent","confidence":0.5,"status":"active","provenance":{"device":"D","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}}`+"\n",
			fakeID(i), i, strings.Repeat("padding ", 20))
	}
	path := filepath.Join(src, "bulk.jsonl")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ok(t, src, "stats") // the daemon is up before the clock starts

	// On a terminal (script gives the command one), with Ctrl-C a moment in.
	cmd := exec.Command("script", "-qefc", binary+" import --home "+src+" "+path, "/dev/null")
	cmd.Env = testEnv(src)
	var out syncbuf.Buffer // written by the command while the test reads it
	cmd.Stdout, cmd.Stderr = &out, &out
	keys, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Ctrl-C once the progress shows a memory sent (the header is line 1):
	// what was sent before it is imported
	progress := regexp.MustCompile(`line (\d+) of`)
	sentSome := func() bool {
		for _, m := range progress.FindAllStringSubmatch(out.String(), -1) {
			if n, _ := strconv.Atoi(m[1]); n >= 2 {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(60 * time.Second); !sentSome() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	keys.Write([]byte{3}) // Ctrl-C, typed on the terminal
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the import did not stop after Ctrl-C:\n%s", out.String())
	}
	text := out.String()
	if !strings.Contains(text, "Importing "+path+": line") {
		t.Fatalf("no progress shown on the terminal:\n%s", text)
	}
	if strings.Contains(text, "Imported 40000 memories") {
		t.Skipf("the import of %d lines finished before the interrupt arrived:\n%s", total, text)
	}
	if !strings.Contains(text, "interrupted after line") || !strings.Contains(text, fmt.Sprintf("of %d", total+1)) ||
		!strings.Contains(text, "run the same command again") {
		t.Fatalf("the interrupted import does not say how far it got:\n%s", text)
	}
	var res struct{ Imported, Skipped int }
	okJSON(t, src, &res, "import", path)
	if res.Imported+res.Skipped != total || res.Skipped == 0 || res.Imported == 0 {
		t.Fatalf("the second run = %+v, want the rest of %d imported and the first part skipped", res, total)
	}
	var stats struct {
		ByNamespace map[string]int `json:"by_namespace"`
	}
	okJSON(t, src, &stats, "stats")
	if stats.ByNamespace["bulk"] != total {
		t.Fatalf("%d memories in bulk after completing the import, want %d", stats.ByNamespace["bulk"], total)
	}
}

// withoutHeads returns a JSON answer without the Automerge heads of the
// memories and edges in it, which differ between homes by nature (an
// import makes new documents with the same content), and this machine's
// read counts.
func withoutHeads(t *testing.T, answer string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(answer), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, answer)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "heads")
			delete(v, "reads")
			for _, x := range v {
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(v)
	out, _ := json.Marshal(v)
	return string(out)
}

// fakeID makes the i-th of distinct memory ids (26 base32 characters).
func fakeID(i int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := []byte(strings.Repeat("a", 26))
	for k := 25; i > 0; k-- {
		b[k] = alphabet[i%32]
		i /= 32
	}
	return string(b)
}

// TestPurgeOnThreeDaemons purges a memory on one of three real daemons
// and checks every home's files.
func TestPurgeOnThreeDaemons(t *testing.T) {
	machines := []*machine{startMachine(t, 1, "a"), startMachine(t, 2, "b"), startMachine(t, 3, "c")}
	var homes []string
	for i, m := range machines {
		homes = append(homes, m.home)
		if i > 0 {
			var inv invitation
			okJSON(t, homes[0], &inv, "invite")
			ok(t, m.home, "join", inv.Token)
		}
	}
	const word = "qzcanary7e2e"
	var m captureOut
	okJSON(t, homes[0], &m, "capture", "--ns", "ops", "--title", "Token for "+word, "--tag", word,
		"The "+word+" rotates in ops/"+word+".yaml")
	ok(t, homes[0], "update", m.ID, "--content", "Now the "+word+" rotates weekly")
	var other captureOut
	okJSON(t, homes[0], &other, "capture", "--ns", "ops", "Ops runbooks live in the wiki")
	ok(t, homes[0], "link", other.ID, "related_to", m.ID, "--note", "about "+word)
	for _, h := range homes[1:] {
		eventually(t, 60*time.Second, "the memory on every daemon", func() bool { return mm(t, h, "", "show", m.ID).code == 0 })
	}
	r := mm(t, homes[0], "", "purge", m.ID)
	if r.code != 2 || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("purge off a terminal without --yes: exit %d, %q", r.code, r.stderr)
	}
	ok(t, homes[1], "purge", "--yes", m.ID)
	for _, h := range homes {
		eventually(t, 60*time.Second, "the purge on every daemon", func() bool {
			r := mm(t, h, "", "show", m.ID)
			return r.code == 1 && strings.Contains(r.stderr, "was purged on")
		})
	}
	for _, h := range homes {
		stopHome(t, h)
		if holding := homescan.Holding(t, h, word); len(holding) > 0 {
			t.Errorf("after the purge these files still hold the canary: %v", holding)
		}
	}
}
