package symbols

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/memmesh/memmesh/internal/gittest"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/storage"
)

// countingStore is the real store, counting the file entries written.
type countingStore struct {
	*storage.Store
	fileWrites int
}

func (s *countingStore) WriteLocal(set map[string][]byte, del []string) error {
	for k := range set {
		if strings.HasPrefix(k, keyFile) {
			s.fileWrites++
		}
	}
	return s.Store.WriteLocal(set, del)
}

func newTestIndex(t *testing.T, limits Limits) (*Index, *countingStore) {
	t.Helper()
	st, err := storage.Open("db", storage.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countingStore{Store: st}
	return NewIndex(cs, limits), cs
}

// writeFile writes a file under dir, making its directories.
func writeFile(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyFixtures copies testdata's fixture files into a new tree.
func copyFixtures(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata", p)
		writeFile(t, dir, filepath.ToSlash(rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// wheres renders locations as kind, qualified name and file.
func wheres(locs []Location) []string {
	out := make([]string, len(locs))
	for i, l := range locs {
		out[i] = l.Kind + " " + l.Qualified() + " " + l.File
	}
	return out
}

func TestIndexFindsFixtures(t *testing.T) {
	ctx := context.Background()
	dir := copyFixtures(t)
	ix, _ := newTestIndex(t, Limits{})
	rep, err := ix.Update(ctx, dir, "app", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 7 || rep.Parsed != 7 || rep.Symbols != 50 {
		t.Errorf("report: %d files, %d parsed, %d symbols; want 7, 7, 50", rep.Files, rep.Parsed, rep.Symbols)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		// Any case; one name's definitions in file order.
		{"validatetoken", []string{
			"function ValidateToken go/auth.go",
			"function validateToken javascript/auth.js",
			"function validateToken typescript/auth.ts",
		}},
		// A qualified name's prefix finds the methods of a type.
		{"token.", []string{"method Token.new rust/lib.rs", "method Token.Refresh go/auth.go", "method Token.validate rust/lib.rs"}},
		// Exact names first, then names and qualified names by the prefix.
		{"tokens", []string{
			"function tokens javascript/auth.js",
			"class TokenService typescript/auth.ts",
			"method TokenService.refresh typescript/auth.ts",
			"method TokenService.validate typescript/auth.ts",
			"class TokenStore python/auth.py",
			"method TokenStore.__init__ python/auth.py",
			"method TokenStore.lookup python/auth.py",
		}},
		{"nothing", nil},
	} {
		got, err := ix.Find(tc.query, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		if g := wheres(got); !slices.Equal(g, tc.want) {
			t.Errorf("Find(%q):\n got %q\nwant %q", tc.query, g, tc.want)
		}
	}
	if got, err := ix.Find("validate", "other", 50); err != nil || len(got) != 0 {
		t.Errorf("Find in another namespace: %v, %v; want nothing", got, err)
	}
	got, err := ix.Where("ValidateToken", "app")
	if err != nil || len(got) != 1 || got[0].File != "go/auth.go" || got[0].Line != 20 || got[0].Root != dir || got[0].Namespace != "app" {
		t.Errorf("Where(ValidateToken) = %+v, %v", got, err)
	}
}

func TestIndexIncremental(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gittest.Run(t, dir, time.Time{}, "init", "-q", "-b", "main")
	writeFile(t, dir, "src/auth.ts", "export function validateToken() {}\n")
	writeFile(t, dir, "src/store.py", "class Store:\n    def get(self):\n        pass\n")
	writeFile(t, dir, "main.go", "package main\n\nfunc main() {}\n")
	writeFile(t, dir, "lib.rs", "fn helper() {}\n")
	writeFile(t, dir, "vendor/dep/dep.go", "package dep\n\nfunc Vendored() {}\n")
	writeFile(t, dir, "ignored/gen.go", "package gen\n\nfunc Ignored() {}\n")
	writeFile(t, dir, ".gitignore", "ignored/\n")
	gittest.Run(t, dir, time.Time{}, "add", ".")
	gittest.Run(t, dir, time.Time{}, "commit", "-qm", "first")
	ix, st := newTestIndex(t, Limits{})

	rep, err := ix.Update(ctx, filepath.Join(dir, "src"), "app", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Root != dir || rep.Files != 4 || rep.Parsed != 4 || st.fileWrites != 4 {
		t.Fatalf("first update: root %s, %d files, %d parsed, %d written; want %s, 4, 4, 4", rep.Root, rep.Files, rep.Parsed, st.fileWrites, dir)
	}
	for _, name := range []string{"Vendored", "Ignored"} {
		if got, _ := ix.Find(name, "", 10); len(got) != 0 {
			t.Errorf("%s indexed: %v", name, got)
		}
	}

	// Nothing changed: nothing parsed, nothing written.
	st.fileWrites = 0
	rep, err = ix.Update(ctx, dir, "app", nil)
	if err != nil || rep.Parsed != 0 || rep.Files != 4 || st.fileWrites != 0 {
		t.Fatalf("update of an unchanged tree: %+v, %v; %d written", rep, err, st.fileWrites)
	}

	// One file changed, one renamed (a new file, a file gone), one
	// untracked added.
	writeFile(t, dir, "src/auth.ts", "export function checkToken() {}\n")
	gittest.Run(t, dir, time.Time{}, "mv", "lib.rs", "util.rs")
	writeFile(t, dir, "src/new.py", "def fresh():\n    pass\n")
	rep, err = ix.Update(ctx, dir, "app", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Parsed != 3 || rep.Removed != 1 || rep.Files != 5 || st.fileWrites != 3 {
		t.Errorf("update after changes: %d parsed, %d removed, %d files, %d written; want 3, 1, 5, 3", rep.Parsed, rep.Removed, rep.Files, st.fileWrites)
	}
	for name, want := range map[string]string{"validateToken": "", "checkToken": "src/auth.ts", "helper": "util.rs", "fresh": "src/new.py"} {
		got, err := ix.Where(name, "app")
		if err != nil {
			t.Fatal(err)
		}
		if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0].File != want) {
			t.Errorf("Where(%s) = %v, want %q", name, got, want)
		}
	}

	// Same content, new time: hashed, not parsed.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "main.go"), future, future); err != nil {
		t.Fatal(err)
	}
	if rep, err = ix.Update(ctx, dir, "app", nil); err != nil || rep.Parsed != 0 {
		t.Errorf("update after a touch: %d parsed, %v; want 0", rep.Parsed, err)
	}

	if err := ix.Drop(dir); err != nil {
		t.Fatal(err)
	}
	var left []string
	st.ScanLocal("sym/", func(k string, _ []byte) error { left = append(left, k); return nil })
	if len(left) != 0 {
		t.Errorf("keys left after Drop: %q", left)
	}
}

func TestIndexBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() // no git: walked
	writeFile(t, dir, "ok.py", "def fine():\n    pass\n")
	writeFile(t, dir, "latin1.py", "def caf\xe9():\n    pass\n")
	writeFile(t, dir, "nul.js", "function a() {}\x00\x01")
	writeFile(t, dir, "broken.ts", "export function kept() {}\nexport class {{{ ]]] \n")
	writeFile(t, dir, ".hidden/x.go", "package x\n\nfunc Hidden() {}\n")
	writeFile(t, dir, "node_modules/m/index.js", "function dep() {}\n")
	// A 1 GB file, sparse: its size alone skips it, so it is never read.
	big, err := os.Create(filepath.Join(dir, "huge.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	big.Close()
	// A symlink loop and a link to a file: not followed.
	if err := os.Symlink(dir, filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "ok.py"), filepath.Join(dir, "link.py")); err != nil {
		t.Fatal(err)
	}
	// Directories deeper than the limit.
	writeFile(t, dir, strings.Repeat("d/", 10)+"deep.go", "package d\n\nfunc Deep() {}\n")

	ix, _ := newTestIndex(t, Limits{Depth: 5})
	rep, err := ix.Update(ctx, dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Skipped{Large: 1, Binary: 2, Special: 1}
	if rep.Files != 2 || rep.Skipped != want {
		t.Errorf("report: %d files, skipped %+v; want 2, %+v", rep.Files, rep.Skipped, want)
	}
	var names []string
	for _, q := range []string{"fine", "kept", "caf", "a", "hidden", "dep", "deep"} {
		got, _ := ix.Find(q, "", 10)
		for _, l := range got {
			names = append(names, l.Name+" "+l.File)
		}
	}
	if w := []string{"fine ok.py", "kept broken.ts"}; !slices.Equal(names, w) {
		t.Errorf("indexed %q, want %q", names, w)
	}
}

func TestIndexCaps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := range 5 {
		writeFile(t, dir, "f"+strconv.Itoa(i)+".py", "def a():\n    pass\ndef b():\n    pass\n")
	}
	ix, _ := newTestIndex(t, Limits{Files: 3})
	rep, err := ix.Update(ctx, dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 3 || rep.Skipped.OverCap != 2 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "has 5 source files; indexed the first 3") {
		t.Errorf("file cap: %d files, %d over, warnings %q", rep.Files, rep.Skipped.OverCap, rep.Warnings)
	}
	ix, _ = newTestIndex(t, Limits{Symbols: 5})
	rep, err = ix.Update(ctx, dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Symbols != 4 || rep.Skipped.OverCap != 3 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "more than 5 symbols") {
		t.Errorf("symbol cap: %d symbols, %d over, warnings %q", rep.Symbols, rep.Skipped.OverCap, rep.Warnings)
	}
}

// TestIndexFIFO: a FIFO named like a source file is left out, not read
// (a read would wait for a writer for ever).
func TestIndexFIFO(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ok.go", "package ok\n\nfunc Fine() {}\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.go"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, _ := newTestIndex(t, Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	rep, err := ix.Update(ctx, dir, "", nil)
	if err != nil || rep.Files != 1 || rep.Skipped.Special != 1 {
		t.Errorf("update: %+v, %v; want 1 file and the FIFO left out", rep, err)
	}
}

// TestIndexWalkBound: a walk outside git stops after a bounded number of
// entries, whatever the directory holds, and says so.
func TestIndexWalkBound(t *testing.T) {
	dir := t.TempDir()
	for i := range 30 {
		writeFile(t, dir, "notes/n"+strconv.Itoa(i)+".txt", "not code\n")
	}
	writeFile(t, dir, "zz/code.py", "def late():\n    pass\n")
	ix, _ := newTestIndex(t, Limits{Files: 1}) // 20 entries
	rep, err := ix.Update(context.Background(), dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 0 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "more than 20 files and directories") {
		t.Errorf("report %+v, want the walk stopped with a warning", rep)
	}
}
