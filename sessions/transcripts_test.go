package sessions_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memmesh/memmesh/internal/nodetest"
	"github.com/memmesh/memmesh/sessions"
	"github.com/memmesh/memmesh/transcript"
)

// TestIngestEveryClientsTranscripts reads the transcript fixture of every
// client, as it is discovered in a home, in reads of a few turns each,
// and ingests each read into a real node: every turn is kept once, under
// the session's client and project.
func TestIngestEveryClientsTranscripts(t *testing.T) {
	n := testNode(t)
	ctx := context.Background()
	home, err := filepath.Abs("../transcript/testdata/home")
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{filepath.Join(home, "src"), "/home/dev/src/weatherbot"}
	for _, a := range transcript.Adapters(transcript.Config{Roots: roots}) {
		paths, err := a.Discover(home)
		if err != nil || len(paths) != 1 {
			t.Fatalf("%s discovered %q, %v", a.Client(), paths, err)
		}
		var cur transcript.Cursor
		var stored, turns, reads int
		var id, project string
		for more := true; more; reads++ {
			b, err := a.Read(paths[0], cur, transcript.Limits{Turns: 4})
			if err != nil {
				t.Fatal(err)
			}
			meta, err := n.IngestSession(ctx, b.Session, "fixtures")
			if err != nil {
				t.Fatalf("%s: ingest %+v: %v", a.Client(), b.Session, err)
			}
			cur, more, stored, turns = b.Cursor, b.More, meta.Turns, turns+len(b.Session.Turns)
			id, project = b.Session.ID, b.Session.Project
		}
		if reads < 2 || stored != turns || turns == 0 {
			t.Errorf("%s: %d turns read in %d reads, %d stored", a.Client(), turns, reads, stored)
		}
		if got := nodetest.SessionByID(t, n, mustSessionID(t, id)); got.Client != a.Client() || got.Project != project || got.Turns != turns {
			t.Errorf("%s: listed as %+v", a.Client(), got)
		}
	}
}

func mustSessionID(t *testing.T, id string) string {
	t.Helper()
	kept, err := sessions.SessionID(id)
	if err != nil {
		t.Fatal(err)
	}
	return kept
}
