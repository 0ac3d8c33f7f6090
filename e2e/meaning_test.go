package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
	"github.com/memmesh/memmesh/internal/testwait"
)

// meaningResults is what `memmesh search --json` says of its results:
// their ids and cosines.
type meaningResults struct {
	Results []struct {
		ID       string  `json:"id"`
		Semantic float64 `json:"semantic"`
	} `json:"results"`
}

// TestSearchByMeaning: a user installs a builtin model, turns search by
// meaning on in config.toml, and finds by meaning what no word of the
// query matches, while a home without it finds nothing.
func TestSearchByMeaning(t *testing.T) {
	home := newHome(t)
	r := mm(t, home, "", "embed", "enable")
	if r.code != 2 || !strings.Contains(r.stderr, "--from is required") {
		t.Fatalf("embed enable without --from: exit %d, stderr %q: want a usage error naming --from", r.code, r.stderr)
	}
	out := ok(t, home, "embed", "enable", "--from", m2vtest.TopicModel(t, "topics"), "--format", "human")
	if !strings.Contains(out, `provider = "builtin"`) || !strings.Contains(out, `model = "topics"`) {
		t.Fatalf("embed enable says:\n%s\nwant the lines to put in config.toml", out)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[embed]\nprovider = \"builtin\"\nmodel = \"topics\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var kafka captureOut
	for _, text := range []string{"Use pgx, not lib/pq", "Ship to staging before every release"} {
		ok(t, home, "capture", "--ns", "shop", text)
	}
	okJSON(t, home, &kafka, "capture", "--ns", "shop", "Order events go through Kafka")

	var st api.EmbedStatus
	testwait.Until(t, "every memory embedded", func() bool {
		okJSON(t, home, &st, "embed", "status", "--format", "json")
		return st.Total == 3 && st.Embedded == 3
	})
	if st.Provider != "builtin" || st.Model != "topics" || st.Dims != 4 || st.Error != "" {
		t.Errorf("embed status: %+v", st)
	}
	if human := ok(t, home, "embed", "status", "--format", "human"); !strings.Contains(human, "3 of 3 memories embedded") {
		t.Errorf("embed status says %q", human)
	}

	var res meaningResults
	okJSON(t, home, &res, "search", "--ns", "shop", "message queue", "--format", "json")
	if len(res.Results) == 0 || res.Results[0].ID != kafka.ID || res.Results[0].Semantic < 0.9 {
		t.Fatalf("search by meaning for a message queue: %+v, want %s first with its cosine", res.Results, kafka.ID)
	}
	if human := ok(t, home, "search", "--ns", "shop", "message queue", "--format", "human"); !strings.Contains(human, "by meaning") {
		t.Errorf("the human output does not say the result was found by meaning:\n%s", human)
	}

	// The same memories without an embedder: words alone find nothing.
	plain := newHome(t)
	for _, text := range []string{"Use pgx, not lib/pq", "Order events go through Kafka"} {
		ok(t, plain, "capture", "--ns", "shop", text)
	}
	okJSON(t, plain, &res, "search", "--ns", "shop", "message queue", "--format", "json")
	if len(res.Results) != 0 {
		t.Errorf("words alone found %+v", res.Results)
	}
	if human := ok(t, plain, "embed", "status", "--format", "human"); !strings.Contains(human, "off") {
		t.Errorf("embed status without an embedder says %q", human)
	}
}

// TestEmbedConfigRefusesAKey: api_key_env takes a variable's name; a key
// there is refused before anything starts, and the key is not echoed.
func TestEmbedConfigRefusesAKey(t *testing.T) {
	home := newHome(t)
	key := "sk-proj-" + strings.Repeat("Ab3", 16)
	config := fmt.Sprintf("[embed]\nprovider = \"openai\"\napi_key_env = %q\n", key)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	r := mm(t, home, "", "search", "anything")
	if r.code == 0 || !strings.Contains(r.stderr, "api_key_env") || strings.Contains(r.stderr, key) {
		t.Fatalf("a key in api_key_env: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestMeaningInDashboard: the Maintenance page shows the embedder and how
// many memories have their vector, and follows it until all do.
func TestMeaningInDashboard(t *testing.T) {
	home, err := os.MkdirTemp("", "mmh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	ok(t, home, "embed", "enable", "--from", m2vtest.TopicModel(t, "topics"))
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[embed]\nprovider = \"builtin\"\nmodel = \"topics\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := serveUI(t, home, "--listen", freeMeshAddr(t, 1))
	br := startBrowser(t)
	p := openTab(t, br, false)
	p.login(a.loginLink(t))
	p.goTo("/maintenance", `(document.querySelector('[data-testid="embed-status"]')?.textContent || '').includes('0 of 0 memories embedded')`)
	for _, text := range []string{"Use pgx, not lib/pq", "Order events go through Kafka"} {
		a.remember(t, api.RememberRequest{Namespace: "shop", Content: text})
	}
	// The page was complete (0 of 0) and stopped refreshing: a visit
	// again shows the new count.
	p.goTo("/", `true`)
	p.goTo("/maintenance", `(document.querySelector('[data-testid="embed-status"]')?.textContent || '').includes('builtin topics (4 dims): 2 of 2 memories embedded')`)
}

// fakeOllama serves Ollama's POST /api/embed on loopback: while down, it
// answers 503; once up, a vector of 4 values by topic (m2vtest.Topics)
// of the words of each input.
type fakeOllama struct {
	down  atomic.Bool
	calls atomic.Int64
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if f.down.Load() {
		http.Error(w, `{"error":"model is loading"}`, http.StatusServiceUnavailable)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	out := struct {
		Model      string      `json:"model"`
		Embeddings [][]float32 `json:"embeddings"`
	}{Model: req.Model}
	for _, text := range req.Input {
		v := []float32{0, 0, 0, 0.1} // never zero: a real model's vectors are not
		for _, w := range strings.Fields(strings.ToLower(text)) {
			for axis, topic := range m2vtest.Topics {
				if slices.Contains(topic, strings.Trim(w, ".,;:!?")) {
					v[axis]++
				}
			}
		}
		out.Embeddings = append(out.Embeddings, v)
	}
	json.NewEncoder(w).Encode(out)
}

// TestSearchWhileTheProviderFails: with Ollama set as the embedder and
// failing, the daemon answers every search by words and says why in
// embed status; once the provider is back, the vectors are made and
// search finds by meaning.
func TestSearchWhileTheProviderFails(t *testing.T) {
	fake := &fakeOllama{}
	fake.down.Store(true)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	home := newHome(t)
	config := fmt.Sprintf("[embed]\nprovider = \"ollama\"\nurl = %q\nmodel = \"fake-embed\"\n", srv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var kafka captureOut
	okJSON(t, home, &kafka, "capture", "--ns", "shop", "Order events go through Kafka")
	ok(t, home, "capture", "--ns", "shop", "Use pgx, not lib/pq")

	var st api.EmbedStatus
	testwait.Until(t, "the provider's failure reported", func() bool {
		okJSON(t, home, &st, "embed", "status", "--format", "json")
		return strings.Contains(st.Error, "503")
	})
	var res meaningResults
	for range 5 {
		okJSON(t, home, &res, "search", "--ns", "shop", "kafka", "--format", "json")
		if len(res.Results) != 1 || res.Results[0].ID != kafka.ID {
			t.Fatalf("search by words while the provider fails: %+v", res.Results)
		}
	}
	if human := ok(t, home, "embed", "status", "--format", "human"); !strings.Contains(human, "Unavailable, searching by words") {
		t.Errorf("embed status while the provider fails: %q", human)
	}

	fake.down.Store(false)
	testwait.Until(t, "the vectors made once the provider is back", func() bool {
		st = api.EmbedStatus{} // omitted fields decode as nothing
		okJSON(t, home, &st, "embed", "status", "--format", "json")
		return st.Embedded == 2 && st.Total == 2 && st.Error == "" && st.Provider == "ollama" && st.Model == "fake-embed" && st.Dims == 4
	})
	testwait.Until(t, "a search by meaning", func() bool {
		res.Results = nil
		okJSON(t, home, &res, "search", "--ns", "shop", "message queue", "--format", "json")
		return len(res.Results) > 0 && res.Results[0].ID == kafka.ID && res.Results[0].Semantic > 0.9
	})
}

// TestEmbedEnableDownloads: embed enable fetches a model from the URL of
// its folder, checked against the sha256 given; a wrong one installs
// nothing.
func TestEmbedEnableDownloads(t *testing.T) {
	model := m2vtest.TopicModel(t, "topics")
	srv := httptest.NewServer(http.StripPrefix("/topics/resolve/main/", http.FileServer(http.Dir(model))))
	defer srv.Close()
	data, err := os.ReadFile(filepath.Join(model, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	url := srv.URL + "/topics/resolve/main"
	home := newHome(t)
	r := mm(t, home, "", "embed", "enable", "--from", url)
	if r.code == 0 || !strings.Contains(r.stderr, "--sha256 model.safetensors=HEX") {
		t.Fatalf("a download without a checksum: exit %d, stderr %q", r.code, r.stderr)
	}
	r = mm(t, home, "", "embed", "enable", "--from", url, "--sha256", "model.safetensors="+strings.Repeat("0", 64))
	if r.code == 0 || !strings.Contains(r.stderr, "checksum") {
		t.Fatalf("a wrong checksum: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "models", "topics")); err == nil {
		t.Fatal("a model that did not match its checksum was installed")
	}
	out := ok(t, home, "embed", "enable", "--from", url, "--sha256", "model.safetensors="+hex.EncodeToString(sum[:]), "--format", "human")
	if !strings.Contains(out, `model = "topics"`) {
		t.Fatalf("embed enable says %q", out)
	}
	if _, err := os.Stat(filepath.Join(home, "models", "topics", "model.safetensors")); err != nil {
		t.Fatal(err)
	}
}
