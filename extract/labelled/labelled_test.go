package labelled

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const corpus = "../testdata/corpus"

// TestCorpus reads every session of the corpus with its client's adapter,
// extracts and judges its candidates, and logs the precision and recall
// per client, per kind and overall, with each miss and each extra
// candidate. It checks the corpus, not the figures: they measure the
// rules as they are.
func TestCorpus(t *testing.T) {
	sessions, err := Load(corpus)
	if err != nil {
		t.Fatal(err)
	}
	perClient := map[string]int{}
	for _, s := range sessions {
		perClient[s.Labels.Client]++
	}
	if len(sessions) < 40 || len(perClient) < 7 {
		t.Errorf("%d sessions of %d clients, want 40 or more of 7 or more", len(sessions), len(perClient))
	}
	for c, n := range perClient {
		if n < 5 {
			t.Errorf("%d sessions of %s, want 5 or more", n, c)
		}
	}
	r := Measure(sessions)
	for _, res := range r.Results {
		for _, l := range res.Missed {
			t.Logf("%s: missed %s %q", res.Name, l.Kind, l.Phrases)
		}
		for _, c := range res.Extra {
			t.Logf("%s: extra %s (%s) %q", res.Name, c.Kind, c.Rule, c.Content)
		}
	}
	for _, row := range r.Rows() {
		t.Logf("%-24s %s", row.Name, row.Figures)
	}
}

// TestCorpusSize holds the corpus small enough to keep in the repository.
func TestCorpusSize(t *testing.T) {
	var size int64
	err := filepath.WalkDir(corpus, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		size += fi.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if size >= 1_500_000 {
		t.Errorf("the corpus holds %d bytes, want less than 1.5 MB", size)
	}
}

// smallCorpus copies one labelled session of the corpus, of Codex, into a
// corpus of its own and returns its directory and the label's path.
func smallCorpus(t *testing.T) (dir, label string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "codex"), os.DirFS(filepath.Join(corpus, "codex"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "labels"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cx01-rust-cli-errors", "cx02-go-grpc-staging", "cx03-py-django-settings", "cx04-ts-react-questions", "cx05-go-sqlite-cgo", "cx06-rust-wasm-keepinmind"} {
		b, err := os.ReadFile(filepath.Join(corpus, "labels", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "labels", name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "labels", "cx04-ts-react-questions.json")
}

// TestLoadRejects checks that a fault of a corpus fails its load, naming
// the fault: a label naming no transcript or an unknown kind, a transcript
// without a label or one its adapter does not read cleanly, a stray
// directory.
func TestLoadRejects(t *testing.T) {
	dir, _ := smallCorpus(t)
	if s, err := Load(dir); err != nil || len(s) != 6 {
		t.Fatalf("the copy of Codex's sessions: %d sessions, %v", len(s), err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir, label string)
		want  string
	}{
		{"a label naming no transcript", func(t *testing.T, dir, label string) {
			rewrite(t, label, `"path": "codex/`, `"path": "codex/missing/`)
		}, "which is no transcript"},
		{"a label of the wrong client", func(t *testing.T, dir, label string) {
			rewrite(t, label, `"client": "codex"`, `"client": "gemini"`)
		}, "which is no transcript"},
		{"an unknown kind", func(t *testing.T, dir, label string) {
			rewrite(t, label, `"memories": []`, `"memories": [{"kind": "lesson", "phrases": ["x"]}]`)
		}, `kind "lesson"`},
		{"an unknown field", func(t *testing.T, dir, label string) {
			rewrite(t, label, `"memories": []`, `"memories": [], "set": "tuning"`)
		}, "not a label file"},
		{"a transcript without a label", func(t *testing.T, dir, label string) {
			if err := os.Remove(label); err != nil {
				t.Fatal(err)
			}
		}, "has no label file"},
		{"a transcript its adapter warns of", func(t *testing.T, dir, label string) {
			var l Labels
			b, _ := os.ReadFile(label)
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(filepath.Join(dir, l.Path), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("{not json\n"); err != nil {
				t.Fatal(err)
			}
		}, "reads with warnings"},
		{"a stray directory", func(t *testing.T, dir, label string) {
			if err := os.Mkdir(filepath.Join(dir, "cursor"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "cursor is neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, label := smallCorpus(t)
			tc.spoil(t, dir, label)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s holds no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
