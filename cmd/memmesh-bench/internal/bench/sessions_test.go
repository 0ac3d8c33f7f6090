package bench

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestSessions(t *testing.T) {
	bin := memmeshBinary(t)
	dir, err := os.MkdirTemp("", "mmb") // short: the daemon's socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r, err := Sessions(context.Background(), SessionsOptions{MB: 1, Hooks: 3, Binary: bin, Corpus: labelledCorpus, Common: Common{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes < 1e6 || r.Turns < 100 || r.MBPerS <= 0 || r.RereadMS <= 0 || r.Hook.P50 <= 0 || r.Hook.P99 < r.Hook.P50 {
		t.Errorf("report = %+v", r)
	}
	if e := r.Extraction; e == nil || e.Sessions < 40 || len(e.ByClient) < 7 || e.Overall.Labels == 0 {
		t.Errorf("extraction = %+v", e)
	}
	if _, err := Sessions(context.Background(), SessionsOptions{MB: 0, Hooks: 1}); err == nil {
		t.Error("a transcript of 0 MB was accepted")
	}
}

// labelledCorpus is the source's labelled corpus of sessions.
const labelledCorpus = "../../../../extract/testdata/corpus"

// TestSessionsCorpus: the figures of the labelled corpus are in the
// report's rows, overall, per client and per kind; a directory that is not
// a labelled corpus is an error before anything runs.
func TestSessionsCorpus(t *testing.T) {
	e, err := measureCorpus(labelledCorpus)
	if err != nil {
		t.Fatal(err)
	}
	rows := SessionsReport{Extraction: e}.Rows()
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	all := strings.Join(names, "\n")
	for _, want := range []string{"corpus, overall (40 sessions)", "corpus, client gemini", "corpus, client aider", "corpus, kind bug", "corpus, kind decision"} {
		if !strings.Contains(all, want) {
			t.Errorf("rows lack %q:\n%s", want, all)
		}
	}
	if len(rows) != 6+1+len(e.ByClient)+len(e.ByKind) {
		t.Errorf("%d rows", len(rows))
	}
	if _, err := Sessions(context.Background(), SessionsOptions{MB: 1, Hooks: 1, Corpus: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "labelled") {
		t.Errorf("an empty directory as the corpus: %v", err)
	}
}
