package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput checks that every kind of bad input gets a one-line error
// and a non-zero exit, and changes nothing.
func TestBadInput(t *testing.T) {
	home := newHome(t)
	var c captureOut
	okJSON(t, home, &c, "capture", "--ns", "proj", "A memory that must survive every bad request")
	before := ok(t, home, "export")

	huge := filepath.Join(home, "huge.txt")
	os.WriteFile(huge, []byte(strings.Repeat("x", 1<<20+1)), 0o600)
	elevenMB := filepath.Join(home, "eleven.txt")
	os.WriteFile(elevenMB, []byte(strings.Repeat("x", 11<<20)), 0o600)
	elf := filepath.Join(home, "tool")
	os.WriteFile(elf, []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00>\x00"), 0o700)
	latin1 := filepath.Join(home, "latin1.txt")
	os.WriteFile(latin1, []byte("Notes\n\nCaf\xe9 au lait\n"), 0o600)
	badImport := filepath.Join(home, "bad.jsonl")
	os.WriteFile(badImport, []byte(before+"{\"type\":\"memory\",\"id\":\"m-nope\"\n"), 0o600)
	goodThenBad := filepath.Join(home, "goodbad.jsonl")
	os.WriteFile(goodThenBad, []byte(`{"type":"memory","id":"m-aaaaaaaaaaaaaaaaaaaaaaaaaa","namespace":"x","content":"fine","kind":"note","tier":"human","confidence":1,"status":"active","provenance":{"device":"D","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}}`+"\nnot json\n"), 0o600)

	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string // part of the error message
	}{
		{"empty content", "", []string{"capture", "   "}, 1, "content is empty"},
		{"empty stdin", "", []string{"capture"}, 1, "content is empty"},
		{"oversized content", "", []string{"capture", "--file", huge}, 1, "is 1.0 MiB (1048577 bytes): a memory holds at most 1 MiB (1048576 bytes)"},
		{"11 MB file", "", []string{"capture", "--file", elevenMB}, 1, elevenMB + " is 11.0 MiB (11534336 bytes): a memory holds at most 1 MiB"},
		{"11 MB on stdin", strings.Repeat("y", 11<<20), []string{"capture"}, 1, "standard input is 11.0 MiB (11534336 bytes)"},
		{"binary file", "", []string{"capture", "--file", elf}, 1, elf + " is binary, not text (an ELF executable): a NUL byte at offset 7 (line 1)"},
		{"binary file as an edit", "", []string{"update", c.ID, "--file", elf}, 1, "binary, not text (an ELF executable)"},
		{"latin-1 file", "", []string{"capture", "--file", latin1}, 1, "is not UTF-8 text: invalid byte 0xe9 at offset 10 (line 3)"},
		{"latin-1 on stdin", "Caf\xe9", []string{"capture"}, 1, "standard input is not UTF-8 text: invalid byte 0xe9 at offset 3"},
		{"latin-1 argument", "", []string{"capture", "Caf\xe9"}, 1, "the text given is not UTF-8 text: invalid byte 0xe9 at offset 3"},
		{"unknown id", "", []string{"show", "m-zzzzzzzz"}, 1, "no memory has id"},
		{"not an id", "", []string{"show", "hello!"}, 1, "not a memory id"},
		{"id with digits ids never hold", "", []string{"show", "m-7fq2aa01"}, 1, "digits 2-7"},
		{"empty id", "", []string{"show", ""}, 1, "no memory id given"},
		{"unknown id update", "", []string{"update", "m-zzzzzzzz", "--title", "x"}, 1, "no memory has id"},
		{"unknown id forget", "", []string{"forget", "m-zzzzzzzz"}, 1, "no memory has id"},
		{"unknown id delete", "", []string{"delete", "m-zzzzzzzz"}, 1, "no memory has id"},
		{"invalid namespace", "", []string{"capture", "--ns", "bad ns!", "text"}, 1, "namespace"},
		{"invalid tag", "", []string{"capture", "--tag", "no spaces allowed", "text"}, 1, "tag"},
		{"invalid kind", "", []string{"capture", "--kind", "9lives", "text"}, 1, "kind"},
		{"invalid tier", "", []string{"capture", "--tier", "god", "text"}, 1, "tier"},
		{"invalid ttl", "", []string{"capture", "--ttl", "soon", "text"}, 2, "ttl"},
		{"zero ttl", "", []string{"capture", "--ttl", "0", "text"}, 2, "ttl"},
		{"invalid confidence", "", []string{"update", c.ID, "--confidence", "7"}, 2, "confidence"},
		{"NaN confidence", "", []string{"capture", "--confidence", "NaN", "text"}, 2, "confidence"},
		{"NaN strength", "", []string{"link", c.ID, "related_to", "file:a.go", "--strength", "NaN"}, 2, "strength"},
		{"zero budget", "", []string{"context", "--budget", "0"}, 2, "budget"},
		{"zero limit", "", []string{"list", "--limit", "0"}, 2, "limit"},
		{"word limit", "", []string{"search", "x", "--limit", "abc"}, 2, "limit"},
		{"invalid status", "", []string{"update", c.ID, "--status", "deleted"}, 1, "status"},
		{"empty update", "", []string{"update", c.ID}, 1, "nothing to update"},
		{"malformed import line", "", []string{"import", badImport}, 1, "line 3"},
		{"import stops before writing", "", []string{"import", goodThenBad}, 1, "line 2"},
		{"missing import file", "", []string{"import", filepath.Join(home, "nope.jsonl")}, 1, "no such file"},
		{"unknown flag", "", []string{"capture", "--colour", "x"}, 2, "unknown flag"},
		{"missing argument", "", []string{"show"}, 2, "accepts 1 arg"},
		{"unknown command", "", []string{"remember-this"}, 2, "unknown command"},
		{"bad format", "", []string{"stats", "--format", "xml"}, 2, "--format"},
		{"bad limit", "", []string{"search", "x", "--limit", "-3"}, 2, "limit"},
		{"bad depth", "", []string{"graph", c.ID, "--depth", "9"}, 2, "depth"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := mm(t, home, tc.stdin, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", r.code, tc.code, r.stderr)
			}
			msg := strings.TrimRight(r.stderr, "\n")
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "memmesh: ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("want one line 'memmesh: ...%s...', got %q", tc.want, r.stderr)
			}
		})
	}
	// An error quotes a 100 KB argument as a short excerpt, without the
	// secret it starts with.
	const secret = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"
	for _, args := range [][]string{
		{"show", "m-" + secret + strings.Repeat("!x", 50_000)},
		{"capture", "--ttl", secret + strings.Repeat("!x", 50_000), "text"},
		{"link", c.ID, "related_to", secret + strings.Repeat("!x", 50_000)},
		{"list", "--" + secret + strings.Repeat("!x", 50_000)},
	} {
		r := mm(t, home, "", args...)
		if r.code == 0 || len(r.stderr) > 1024 || strings.Contains(r.stderr, secret) || !strings.Contains(r.stderr, " bytes)") {
			t.Errorf("%s of 100 KB: exit %d, %d bytes on stderr: %.300q", args[0], r.code, len(r.stderr), r.stderr)
		}
	}
	if after := ok(t, home, "export"); exportBody(after) != exportBody(before) {
		t.Fatalf("bad input changed the store:\nbefore: %s\nafter:  %s", before, after)
	}
}

func TestCorruptConfig(t *testing.T) {
	home := newHome(t)
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("namespace = \"x\"\nlog_level = [broken\n"), 0o600)
	r := mm(t, home, "", "stats")
	if r.code != 1 || !strings.Contains(r.stderr, "config.toml") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("corrupt config: exit %d, stderr %q", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("namespce = \"x\"\n"), 0o600)
	r = mm(t, home, "", "stats")
	if r.code != 1 || !strings.Contains(r.stderr, "unknown key namespce") {
		t.Fatalf("misspelt key: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "data")); !os.IsNotExist(err) {
		t.Fatal("a daemon started despite the corrupt config")
	}
}

func TestProjectConfigNamespace(t *testing.T) {
	home := newHome(t)
	proj := filepath.Join(home, "proj", "sub")
	os.MkdirAll(proj, 0o700)
	os.WriteFile(filepath.Join(home, "proj", ".memmesh.toml"), []byte("namespace = \"webshop\"\n"), 0o600)
	cmd := exec.Command(binary, "--home", home, "capture", "Prices are integers in cents")
	cmd.Env, cmd.Dir = testEnv(home), proj
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("capture in project: %v: %s", err, out)
	}
	var s searchOut
	okJSON(t, home, &s, "search", "--ns", "webshop", "cents")
	if len(s.Results) != 1 {
		t.Fatalf("the project's namespace was not used: %+v", s)
	}
}

func TestSecondServeRefused(t *testing.T) {
	home := newHome(t)
	ok(t, home, "stats") // starts the daemon in the background
	r := mm(t, home, "", "serve")
	if r.code != 1 || !strings.Contains(r.stderr, "already running") {
		t.Fatalf("second serve: exit %d, stderr %q", r.code, r.stderr)
	}
	var s statsOut
	okJSON(t, home, &s, "stats") // the first daemon still answers
}

// TestEmptyNamespaceSaysSo: commands that look at the default namespace
// say, when it holds nothing, which namespaces do.
func TestEmptyNamespaceSaysSo(t *testing.T) {
	home := newHome(t)
	ok(t, home, "capture", "--ns", "backend", "Use pgx for Postgres")
	for _, args := range [][]string{{"stale"}, {"analyze"}, {"reflect"}, {"compact", "--dry-run"}, {"list"}, {"search", "pgx"}, {"context"}} {
		out := ok(t, home, append(args, "--format", "human")...)
		if !strings.Contains(out, "Namespace default holds no memories; these do: backend (1)") {
			t.Errorf("%v on the empty default namespace says:\n%s", args, out)
		}
		if out := ok(t, home, append(args, "--format", "human", "--ns", "backend")...); strings.Contains(out, "holds no memories") {
			t.Errorf("%v --ns backend says the namespace is empty:\n%s", args, out)
		}
	}
}
