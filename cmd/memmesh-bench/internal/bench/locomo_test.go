package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/embed/embedconf"
	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
)

// writeConversation writes a LoCoMo-shaped file into dir.
func writeConversation(t *testing.T, dir, name string, conv map[string]any) {
	t.Helper()
	raw, err := json.Marshal(conv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func turnOf(speaker, id, text string) map[string]string {
	return map[string]string{"speaker": speaker, "dia_id": id, "text": text}
}

func tinyConversation() map[string]any {
	return map[string]any{
		"speaker_a":           "Ada",
		"speaker_b":           "Bo",
		"session_1_date_time": "1:56 pm on 8 May, 2023",
		"session_1": []any{
			turnOf("Ada", "D1:1", "I adopted a grey greyhound called Pixel last week."),
			turnOf("Bo", "D1:2", "Lovely! Mine is learning the violin at the conservatory."),
			turnOf("Ada", "D1:3", "We are repainting the kitchen in olive green."),
		},
		"session_2_date_time": "10:04 am on 20 June, 2023",
		"session_2": []any{
			turnOf("Bo", "D2:1", "The violin recital went well, the conservatory hall was full."),
			turnOf("Ada", "D2:2", "Pixel chewed the new sofa."),
			turnOf("Bo", "D2:3", "Ha, dogs will be dogs."),
		},
		"qa": []any{
			map[string]any{"question": "What is the name of Ada's greyhound?", "answer": "Pixel", "evidence": []string{"D1:1"}, "category": 4},
			map[string]any{"question": "Where does Bo's violin recital happen?", "answer": "conservatory", "evidence": []string{"D2:1"}, "category": 4},
			map[string]any{"question": "Which telescope was purchased?", "answer": "none", "evidence": []string{"D1:3"}, "category": 1},
			map[string]any{"question": "What colour is the kitchen?", "adversarial_answer": "red", "category": 5},
		},
	}
}

func TestLocomoTinyCorpus(t *testing.T) {
	dir := t.TempDir()
	writeConversation(t, dir, "conv-1.json", tinyConversation())
	r, err := Locomo(context.Background(), LocomoOptions{Data: dir, Common: Common{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	// Two questions find their evidence first; the third shares no word
	// with any turn; the adversarial one is left out.
	if r.Conversations != 1 || r.Memories != 6 || r.Questions != 3 {
		t.Fatalf("report = %+v", r)
	}
	if r.RecallAt5 != 2.0/3 || r.RecallAt10 != 2.0/3 || r.MRR != 2.0/3 {
		t.Errorf("R@5 %v, R@10 %v, MRR %v; want 2/3 each", r.RecallAt5, r.RecallAt10, r.MRR)
	}
	if r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 {
		t.Errorf("latency = %+v", r.Latency)
	}
	if r.Baseline != nil {
		t.Error("a baseline without --baseline")
	}
}

func TestLocomoBadData(t *testing.T) {
	empty := t.TempDir()
	if _, err := Locomo(context.Background(), LocomoOptions{Data: empty}); err == nil || !strings.Contains(err.Error(), "no conv-*.json") {
		t.Errorf("empty folder: %v", err)
	}
	bad := t.TempDir()
	conv := tinyConversation()
	conv["session_2_date_time"] = "yesterday-ish"
	writeConversation(t, bad, "conv-2.json", conv)
	if _, err := Locomo(context.Background(), LocomoOptions{Data: bad}); err == nil || !strings.Contains(err.Error(), "session_2_date_time") {
		t.Errorf("bad session time: %v", err)
	}
	os.WriteFile(filepath.Join(bad, "conv-2.json"), []byte("{not json"), 0o644)
	if _, err := Locomo(context.Background(), LocomoOptions{Data: bad}); err == nil || !strings.Contains(err.Error(), "conv-2.json") {
		t.Errorf("broken file: %v", err)
	}
}

func TestLocomoBaseline(t *testing.T) {
	dir := t.TempDir()
	writeConversation(t, dir, "conv-1.json", tinyConversation())
	script := filepath.Join(t.TempDir(), "baseline.py")
	os.WriteFile(script, []byte(`import json, sys
print(json.dumps({"system": "fixed", "questions": len(sys.argv) - 1, "r@5": 0.5, "r@10": 0.6, "mrr": 0.4, "p50_ms": 1, "p99_ms": 2}))
`), 0o644)
	r, err := Locomo(context.Background(), LocomoOptions{Data: dir, Baseline: script})
	if err != nil {
		t.Fatal(err)
	}
	if b := r.Baseline; b == nil || b.System != "fixed" || b.Questions != 1 || b.RecallAt5 != 0.5 {
		t.Errorf("baseline = %+v: want the script's figures, given the one file", b)
	}
	os.WriteFile(script, []byte("import sys\nsys.exit('no sqlite here')\n"), 0o644)
	if _, err := Locomo(context.Background(), LocomoOptions{Data: dir, Baseline: script}); err == nil || !strings.Contains(err.Error(), "no sqlite here") {
		t.Errorf("failing baseline: %v", err)
	}
}

// TestLocomoWithMeaning: with --embed, a question that shares no word
// with its evidence finds it by meaning, and the run by words is
// reported beside it unchanged.
func TestLocomoWithMeaning(t *testing.T) {
	dir := t.TempDir()
	conv := tinyConversation()
	conv["session_1"] = append(conv["session_1"].([]any), turnOf("Bo", "D1:4", "Kafka carries our order events now."))
	conv["qa"] = []any{
		map[string]any{"question": "Which message queue is used?", "answer": "Kafka", "evidence": []string{"D1:4"}, "category": 1},
	}
	writeConversation(t, dir, "conv-1.json", conv)
	model := m2vtest.TopicModel(t, "topics")
	opts := LocomoOptions{Data: dir, Common: Common{Dir: t.TempDir()},
		Embed: embedconf.Config{Provider: "builtin", Model: filepath.Base(model)}, EmbedModels: filepath.Dir(model)}
	r, err := Locomo(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Questions != 1 || r.RecallAt5 != 0 {
		t.Fatalf("by words: %+v, want the one question unanswered", r)
	}
	m := r.Meaning
	if m == nil || m.RecallAt5 != 1 || m.MRR != 1 || m.Embedder != "builtin/topics/4" || m.Latency.P50 <= 0 {
		t.Fatalf("with meaning: %+v, want the evidence first", m)
	}
}
