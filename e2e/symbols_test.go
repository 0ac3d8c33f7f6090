package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/gittest"
)

// symbolsOut is the JSON of 'memmesh symbols'.
type symbolsOut struct {
	Symbols []struct {
		Name      string `json:"name"`
		Qual      string `json:"qual"`
		Kind      string `json:"kind"`
		Line      int    `json:"line"`
		File      string `json:"file"`
		Root      string `json:"root"`
		Namespace string `json:"namespace"`
	} `json:"symbols"`
}

// indexOut is the JSON of 'memmesh symbols index'.
type indexOut struct {
	Root    string `json:"root"`
	Files   int    `json:"files"`
	Symbols int    `json:"symbols"`
	Parsed  int    `json:"parsed"`
	Removed int    `json:"removed"`
}

// gitRepo makes a git repository with files and commits them.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	gittest.Run(t, dir, time.Time{}, "init", "-q", "-b", "main")
	gittest.Run(t, dir, time.Time{}, "add", ".")
	gittest.Run(t, dir, time.Time{}, "commit", "-qm", "first")
	return dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSymbolsCommands: index a git repository of four languages through
// the binary, find symbols by name and prefix, ask the impact of a symbol
// and its graph, then move a function to another file and index again:
// only the changed files are parsed, and the symbol is found where it went.
func TestSymbolsCommands(t *testing.T) {
	home := newHome(t)
	repo := gitRepo(t, map[string]string{
		"src/auth.ts":    "export function validateToken(t: string): boolean {\n  return t !== \"\";\n}\n",
		"src/token.ts":   "export class TokenCache {\n  get(k: string) { return k; }\n}\n",
		"store/store.go": "package store\n\ntype Store struct{}\n\nfunc (s *Store) Commit() error { return nil }\n",
		"tools/gen.py":   "class Generator:\n    def run(self):\n        pass\n",
		"core/lib.rs":    "pub struct Ring;\n\nimpl Ring {\n    pub fn push(&mut self) {}\n}\n",
	})
	var idx indexOut
	okJSON(t, home, &idx, "symbols", "index", filepath.Join(repo, "src"), "--ns", "app")
	if idx.Root != repo || idx.Files != 5 || idx.Parsed != 5 || idx.Symbols != 9 {
		t.Fatalf("first index = %+v, want the repository's 5 files and 9 symbols", idx)
	}

	var found symbolsOut
	okJSON(t, home, &found, "symbols", "VALIDATE")
	if len(found.Symbols) != 1 || found.Symbols[0].File != "src/auth.ts" || found.Symbols[0].Line != 1 || found.Symbols[0].Namespace != "app" {
		t.Fatalf("symbols VALIDATE = %+v", found)
	}
	for query, want := range map[string]string{"Store.": "method Store.Commit store/store.go:5", "Generator.r": "method Generator.run tools/gen.py:2", "ring.push": "method Ring.push core/lib.rs:4"} {
		okJSON(t, home, &found, "symbols", query)
		if len(found.Symbols) != 1 {
			t.Fatalf("symbols %s = %+v, want %s", query, found, want)
		}
		s := found.Symbols[0]
		if got := s.Kind + " " + s.Qual + " " + s.File + ":" + strconv.Itoa(s.Line); got != want {
			t.Errorf("symbols %s = %s, want %s", query, got, want)
		}
	}
	human := ok(t, home, "symbols", "validateToken", "--format", "human")
	if !strings.Contains(human, "validateToken") || !strings.Contains(human, "src/auth.ts:1") {
		t.Errorf("human output:\n%s", human)
	}

	var mention, ofFile, other captureOut
	okJSON(t, home, &mention, "capture", "--ns", "app", "Call `validateToken()` before every write")
	okJSON(t, home, &ofFile, "capture", "--ns", "app", "src/auth.ts belongs to the platform team")
	okJSON(t, home, &other, "capture", "--ns", "app", "The cache in src/token.ts is per request")
	var impact []struct {
		Memory struct {
			ID string `json:"id"`
		} `json:"memory"`
		Via string `json:"via"`
	}
	okJSON(t, home, &impact, "impact", "validateToken")
	vias := map[string]string{}
	for _, im := range impact {
		vias[im.Memory.ID] = im.Via
	}
	if len(vias) != 2 || vias[mention.ID] != "mentions code:validateToken" || vias[ofFile.ID] != "mentions file:src/auth.ts, which defines validateToken" {
		t.Errorf("impact validateToken = %v", vias)
	}
	var g struct {
		Nodes []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	}
	okJSON(t, home, &g, "graph", "code:validateToken", "--depth", "2")
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	if len(ids) != 4 || ids[0] != "code:validateToken" || !strings.Contains(strings.Join(ids, " "), "file:src/auth.ts") {
		t.Errorf("graph code:validateToken reached %v", ids)
	}

	// validateToken moves to src/token.ts.
	writeFiles(t, repo, map[string]string{
		"src/auth.ts":  "export const unused = 1;\n",
		"src/token.ts": "export class TokenCache {\n  get(k: string) { return k; }\n}\n\nexport function validateToken(t: string): boolean {\n  return t !== \"\";\n}\n",
	})
	gittest.Run(t, repo, time.Time{}, "commit", "-qam", "move validateToken")
	okJSON(t, home, &idx, "symbols", "index", repo)
	if idx.Parsed != 2 || idx.Files != 5 {
		t.Errorf("index after the move = %+v, want 2 files parsed of 5", idx)
	}
	okJSON(t, home, &found, "symbols", "validateToken")
	if len(found.Symbols) != 1 || found.Symbols[0].File != "src/token.ts" || found.Symbols[0].Line != 5 {
		t.Errorf("symbols validateToken after the move = %+v", found)
	}
	okJSON(t, home, &impact, "impact", "validateToken")
	vias = map[string]string{}
	for _, im := range impact {
		vias[im.Memory.ID] = im.Via
	}
	if len(vias) != 2 || vias[other.ID] != "mentions file:src/token.ts, which defines validateToken" {
		t.Errorf("impact validateToken after the move = %v", vias)
	}

	var trees struct {
		Trees []struct {
			Root string `json:"root"`
		} `json:"trees"`
	}
	okJSON(t, home, &trees, "symbols", "trees")
	if len(trees.Trees) != 1 || trees.Trees[0].Root != repo {
		t.Errorf("symbols trees = %+v", trees)
	}

	// Bad input: clear messages, exit 1 (refused by the daemon) or 2 (usage).
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"symbols", "index", filepath.Join(repo, "missing")}, 1, "no such file"},
		{[]string{"symbols", "index", filepath.Join(repo, "src/auth.ts")}, 1, "not a directory"},
		{[]string{"symbols", " "}, 1, "give a name"},
		{[]string{"symbols", "a", "--limit", "0"}, 2, "limit"},
	} {
		r := mm(t, home, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("memmesh %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.msg)
		}
	}
}

// TestSymbolsNamedLikeSubcommands: a symbol called index is found when
// written in another case, since subcommand names are matched exactly.
func TestSymbolsNamedLikeSubcommands(t *testing.T) {
	home := newHome(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.py": "def index():\n    pass\n"})
	ok(t, home, "symbols", "index", dir)
	var found symbolsOut
	okJSON(t, home, &found, "symbols", "Index")
	if len(found.Symbols) != 1 || found.Symbols[0].Name != "index" {
		t.Errorf("symbols Index = %+v", found)
	}
}
