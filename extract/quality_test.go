package extract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/transcript"
)

// The labelled set: testdata/sessions holds realistic sessions of several
// clients, projects and languages (some with nothing worth keeping, some
// long and noisy), and testdata/labels, for each, the memories a careful
// person would keep: a kind and key phrases that a matching candidate must
// contain. The labels were written and committed before the rules; the
// rules were tuned on the sessions labelled "tuning" only, and the
// "heldout" third measures them on sessions they were not tuned on.

// label is one memory a session should yield.
type label struct {
	Kind    string   `json:"kind"`
	Phrases []string `json:"phrases"`
}

type labels struct {
	Set      string  `json:"set"` // "tuning" or "heldout"
	Note     string  `json:"note"`
	Memories []label `json:"memories"`
}

// score counts candidates and labels, and how many of each matched.
type score struct {
	candidates, labels, right, found int
}

func (s score) precision() float64 { return ratio(s.right, s.candidates) }
func (s score) recall() float64    { return ratio(s.found, s.labels) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// matches reports whether c has l's kind and contains each of its phrases.
func matches(c Candidate, l label) bool {
	if c.Kind != l.Kind {
		return false
	}
	text := strings.ToLower(c.Title + "\n" + c.Content + "\n" + strings.Join(c.Touches, "\n"))
	for _, p := range l.Phrases {
		if !strings.Contains(text, strings.ToLower(p)) {
			return false
		}
	}
	return true
}

// judge matches candidates to labels one to one, in order, and logs
// what is extra and what is missing.
func judge(t *testing.T, name string, cands []Candidate, want []label) score {
	t.Helper()
	s := score{candidates: len(cands), labels: len(want)}
	used := make([]bool, len(cands))
	for _, l := range want {
		hit := false
		for i, c := range cands {
			if !used[i] && matches(c, l) {
				used[i], hit = true, true
				break
			}
		}
		if hit {
			s.found++
		} else {
			t.Logf("%s: missed %s %q", name, l.Kind, l.Phrases)
		}
	}
	for i, c := range cands {
		if used[i] {
			s.right++
		} else {
			t.Logf("%s: extra %s (%s) %q", name, c.Kind, c.Rule, c.Content)
		}
	}
	return s
}

func loadSession(t testing.TB, path string) transcript.Session {
	t.Helper()
	var s transcript.Session
	readJSON(t, path, &s)
	return s
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestExtractionQuality measures precision and recall over the labelled
// set and holds the tuning part's precision at 0.8 or more.
func TestExtractionQuality(t *testing.T) {
	files, err := filepath.Glob("testdata/sessions/*.json")
	if err != nil || len(files) < 20 {
		t.Fatalf("want at least 20 labelled sessions, have %d (%v)", len(files), err)
	}
	scores := map[string]*score{"tuning": {}, "heldout": {}}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		var want labels
		readJSON(t, filepath.Join("testdata/labels", name+".json"), &want)
		sc, ok := scores[want.Set]
		if !ok {
			t.Fatalf("%s: set %q is neither tuning nor heldout", name, want.Set)
		}
		got := judge(t, name, Candidates(loadSession(t, f)), want.Memories)
		sc.candidates += got.candidates
		sc.labels += got.labels
		sc.right += got.right
		sc.found += got.found
	}
	for _, set := range []string{"tuning", "heldout"} {
		s := scores[set]
		t.Logf("extraction %s: precision %.2f (%d/%d candidates), recall %.2f (%d/%d labels)",
			set, s.precision(), s.right, s.candidates, s.recall(), s.found, s.labels)
	}
	if p := scores["tuning"].precision(); p < 0.8 {
		t.Errorf("precision on the tuning set is %.2f, want 0.8 or more", p)
	}
}
