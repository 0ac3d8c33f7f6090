package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/internal/tokens"
)

// recallOut is what `memmesh recall --json` says about its results.
type recallOut struct {
	Total   int `json:"total"`
	Tokens  int `json:"tokens"`
	Results []struct {
		ID      string   `json:"id"`
		ShortID string   `json:"short_id"`
		Related string   `json:"related"`
		Labels  []string `json:"labels"`
	} `json:"results"`
}

func TestRecallCountsMatchesAndLabelsResults(t *testing.T) {
	home := newHome(t)
	capture := func(text string) captureOut {
		var c captureOut
		okJSON(t, home, &c, "capture", "--ns", "pay", text)
		return c
	}
	old := capture("Webhooks are retried, webhooks back off, webhooks time out")
	successor := capture("Webhooks now go through the event bus")
	small := capture("The payments service runs a pool of 10 workers for its outgoing webhook calls")
	large := capture("The payments service runs a pool of 50 workers for its outgoing webhook calls")
	linked := capture("Verify the signature header of every event")
	ok(t, home, "link", old.ShortID, "depends_on", linked.ShortID)
	ok(t, home, "link", successor.ShortID, "supersedes", old.ShortID)
	ok(t, home, "link", small.ShortID, "contradicts", large.ShortID)

	var r recallOut
	okJSON(t, home, &r, "recall", "--ns", "pay", "webhooks")
	if r.Total != 4 || len(r.Results) != 5 {
		t.Fatalf("recall: total %d, %d results; want 4 matches and 1 related: %+v", r.Total, len(r.Results), r)
	}
	last := r.Results[4]
	if last.ID != linked.ID || last.Related != "linked from "+old.ShortID+" by depends_on" {
		t.Errorf("last result %s related %q: want the linked memory, marked related", last.ShortID, last.Related)
	}
	labels := map[string][]string{}
	at := map[string]int{}
	for i, h := range r.Results {
		labels[h.ID] = h.Labels
		at[h.ID] = i
	}
	if at[old.ID] < at[successor.ID] {
		t.Errorf("the superseded memory ranks above its successor: %+v", r.Results)
	}
	for id, want := range map[string]string{
		old.ID:   "superseded by " + successor.ShortID,
		small.ID: "contradicted by " + large.ShortID,
		large.ID: "contradicted by " + small.ShortID,
	} {
		if got := labels[id]; len(got) != 1 || got[0] != want {
			t.Errorf("%s: labels %q, want %q", id, got, want)
		}
	}

	out := ok(t, home, "recall", "--ns", "pay", "--format", "human", "webhooks")
	for _, want := range []string{
		`4 of 4 matches for "webhooks" in namespace pay, and 1 related`,
		"[superseded by " + successor.ShortID + "]",
		"[contradicted by " + large.ShortID + "]",
		"Related:",
		"linked from " + old.ShortID + " by depends_on",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("recall output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "Related:") > strings.Index(out, linked.ShortID) {
		t.Errorf("the related memory is listed before the related section:\n%s", out)
	}

	// The budget holds on the result as the API answers it: compact JSON.
	raw := ok(t, home, "recall", "--ns", "pay", "--budget", "700", "webhooks")
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	r = recallOut{}
	if err := json.Unmarshal(compact.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if got := tokens.Count(compact.String()); got > 700 || r.Tokens != got || len(r.Results) == 0 || r.Total != 4 {
		t.Errorf("budget 700: %d tokens printed, %d said, %d results, total %d", got, r.Tokens, len(r.Results), r.Total)
	}
}
