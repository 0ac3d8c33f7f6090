package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed/model2vec"
	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/node"
)

func TestRecallSaysWhatItFound(t *testing.T) {
	n := testNode(t)
	c := connect(t, n)
	ctx := context.Background()
	save := func(content string) api.RememberResult {
		t.Helper()
		res, err := n.Remember(ctx, api.RememberRequest{Namespace: testNamespace, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	old := save("Webhooks are retried with exponential backoff; webhooks time out after ten seconds")
	successor := save("Webhooks now go through the event bus")
	linked := save("Verify the signature header of every event")
	for _, l := range []api.LinkRequest{
		{From: old.ID, Rel: "depends_on", To: linked.ID},
		{From: successor.ID, Rel: "supersedes", To: old.ID},
	} {
		if _, err := n.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}

	var out recallData
	text := call(t, c, "recall", map[string]any{"query": "webhooks"}, &out)
	if out.Total != 2 || len(out.Results) != 3 {
		t.Fatalf("recall: total %d, %d results; want 2 matches and the linked memory", out.Total, len(out.Results))
	}
	if out.Results[0].ID != successor.ID || out.Results[1].ID != old.ID || out.Results[2].ID != linked.ID {
		t.Errorf("results %s, %s, %s: want the successor, the superseded memory, then the related one", out.Results[0].ShortID, out.Results[1].ShortID, out.Results[2].ShortID)
	}
	if got := out.Results[1].Labels; len(got) != 1 || got[0] != "superseded by "+successor.ShortID {
		t.Errorf("superseded memory's labels = %q", got)
	}
	if got, want := out.Results[2].Related, "linked from "+old.ShortID+" by depends_on"; got != want {
		t.Errorf("related = %q, want %q", got, want)
	}
	for _, want := range []string{
		`2 of 2 matches for "webhooks"`, "and 1 related:",
		`labels="superseded by ` + successor.ShortID + `"`,
		`related="linked from ` + old.ShortID + ` by depends_on"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("recall text lacks %q:\n%s", want, text)
		}
	}

	for _, tc := range []struct {
		budget int
		want   string
	}{
		{100, "2 memories match \"webhooks\" in namespace \"proj\", and none fits in 100 tokens: raise budget."},
		{1000, "matches for \"webhooks\""},
	} {
		res := callTool(t, c, "recall", map[string]any{"query": "webhooks", "budget": tc.budget})
		out = recallData{}
		if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil {
			t.Fatal(err)
		}
		text := resultText(res)
		if got := tokens.Count(text); got > tc.budget || !strings.Contains(text, tc.want) || (tc.budget == 1000) != (len(out.Results) > 0) {
			t.Errorf("budget %d: the text is %d tokens, with %d results:\n%s", tc.budget, got, len(out.Results), text)
		}
		// Some clients show the model the structured content instead.
		if got := tokens.Count(string(res.RawStructuredContent)); got > tc.budget {
			t.Errorf("budget %d: the structured content is %d tokens", tc.budget, got)
		}
	}
}

// TestRecallLooseQuote: quoted words that no memory holds as written are
// searched loose, and the text says so.
func TestRecallLooseQuote(t *testing.T) {
	n := testNode(t)
	c := connect(t, n)
	res, err := n.Remember(context.Background(), api.RememberRequest{Namespace: testNamespace, Content: "We read Designing Data-Intensive Applications for the storage layer"})
	if err != nil {
		t.Fatal(err)
	}
	var out recallData
	text := call(t, c, "recall", map[string]any{"query": `"designing data applications"`}, &out)
	if len(out.Results) != 1 || out.Results[0].ID != res.ID {
		t.Fatalf("recall: %d results, want the memory:\n%s", len(out.Results), text)
	}
	if want := "(no memory holds the quoted words as written: matches of the words)"; !strings.Contains(text, want) {
		t.Errorf("recall text lacks %q:\n%s", want, text)
	}
	text = call(t, c, "recall", map[string]any{"query": `"designing data-intensive applications"`}, &out)
	if len(out.Results) != 1 || strings.Contains(text, "as written") {
		t.Errorf("a phrase the memory holds:\n%s", text)
	}
}

// TestRecallByMeaning: with an embedder, recall finds a memory by its
// meaning and says how near it is, in the text and the structured content.
func TestRecallByMeaning(t *testing.T) {
	model, err := model2vec.Load(m2vtest.TopicModel(t, "topics"))
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, node.Config{Home: t.TempDir(), Logger: testLogger(t), Embedder: model})
	ctx := context.Background()
	kafka, err := n.Remember(ctx, api.RememberRequest{Namespace: testNamespace, Content: "Order events go through Kafka"})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the memory's vector made", func() bool {
		st, err := n.EmbedStatus(ctx)
		return err == nil && st.Embedded == 1 && !st.Scanning
	})
	var out recallData
	text := call(t, connect(t, n), "recall", map[string]any{"query": "message queue"}, &out)
	if len(out.Results) != 1 || out.Results[0].ID != kafka.ID || out.Results[0].Semantic < 0.9 {
		t.Fatalf("recall by meaning: %+v", out.Results)
	}
	if !strings.Contains(text, `near by meaning="cosine `) {
		t.Errorf("the text does not say the memory is near by meaning:\n%s", text)
	}
}
