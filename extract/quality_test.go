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

type labels struct {
	Set      string  `json:"set"` // "tuning" or "heldout"
	Note     string  `json:"note"`
	Memories []Label `json:"memories"`
}

// judge judges a session's candidates against its labels and logs what
// is extra and what is missing.
func judge(t *testing.T, name string, cands []Candidate, want []Label) Score {
	t.Helper()
	j := Judge(cands, want)
	for _, l := range j.Missed {
		t.Logf("%s: missed %s %q", name, l.Kind, l.Phrases)
	}
	for _, c := range j.Extra {
		t.Logf("%s: extra %s (%s) %q", name, c.Kind, c.Rule, c.Content)
	}
	return j.Score()
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
	scores := map[string]Score{"tuning": {}, "heldout": {}}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		var want labels
		readJSON(t, filepath.Join("testdata/labels", name+".json"), &want)
		sc, ok := scores[want.Set]
		if !ok {
			t.Fatalf("%s: set %q is neither tuning nor heldout", name, want.Set)
		}
		scores[want.Set] = sc.Add(judge(t, name, Candidates(loadSession(t, f)), want.Memories))
	}
	for _, set := range []string{"tuning", "heldout"} {
		s := scores[set]
		t.Logf("extraction %s: precision %.2f (%d/%d candidates), recall %.2f (%d/%d labels)",
			set, s.Precision(), s.Matched, s.Candidates, s.Recall(), s.Matched, s.Labels)
	}
	if p := scores["tuning"].Precision(); p < 0.8 {
		t.Errorf("precision on the tuning set is %.2f, want 0.8 or more", p)
	}
}
