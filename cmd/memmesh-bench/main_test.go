package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"encoding/json"

	"github.com/memmesh/memmesh/embed/embedconf"
	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
)

// TestBenchCPUProfile: --cpuprofile writes a pprof profile of the
// benchmark whose samples carry the phase they ran in.
func TestBenchCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"capture", "--memories", "200", "--import", "2000", "--json", "--cpuprofile", path},
		&stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f) // pprof profiles are gzipped protocol buffers
	if err != nil {
		t.Fatalf("not a pprof profile: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"phase", "import", "bench.batchImport"} {
		if !bytes.Contains(raw, []byte(s)) {
			t.Errorf("the profile does not mention %q", s)
		}
	}
}

// TestOutputFormat: a report is JSON when standard output is not a
// terminal, a table with --format human; a format that is neither is a
// usage error.
func TestOutputFormat(t *testing.T) {
	ctx := context.Background()
	capture := []string{"capture", "--memories", "20", "--import", "50"}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, capture, &stdout, &stderr); code != 0 || !bytes.HasPrefix(stdout.Bytes(), []byte("{")) {
		t.Errorf("piped: exit %d, stdout %q; want a JSON report", code, stdout.String())
	}
	stdout.Reset()
	if code := run(ctx, append(capture, "--format", "human"), &stdout, &stderr); code != 0 || !bytes.Contains(stdout.Bytes(), []byte("captures (node.Remember, durable)    20\n")) {
		t.Errorf("--format human: exit %d, stdout %q; want a table", code, stdout.String())
	}
	for _, bad := range [][]string{{"--format", "xml"}, {"--format", "human", "--json"}} {
		stdout.Reset()
		stderr.Reset()
		if code := run(ctx, append(capture, bad...), &stdout, &stderr); code != 2 || stdout.Len() != 0 || !bytes.Contains(stderr.Bytes(), []byte("--format")) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a usage error naming --format", bad, code, stdout.String(), stderr.String())
		}
	}
}

// TestLocomoEmbedFromConfig: --embed alone takes [embed] of the home's
// config.toml and its installed model; a home that sets none is refused.
func TestLocomoEmbedFromConfig(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	conv := `{"speaker_a":"Ada","speaker_b":"Bo","session_1_date_time":"1:56 pm on 8 May, 2023",
		"session_1":[{"speaker":"Bo","dia_id":"D1:1","text":"Kafka carries our order events."},{"speaker":"Ada","dia_id":"D1:2","text":"We use pgx."}],
		"qa":[{"question":"Which message queue?","answer":"Kafka","evidence":["D1:1"],"category":1}]}`
	if err := os.WriteFile(filepath.Join(data, "conv-1.json"), []byte(conv), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	models := filepath.Join(home, embedconf.ModelsDir)
	if err := os.Mkdir(models, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(m2vtest.TopicModel(t, "topics"), filepath.Join(models, "topics")); err != nil {
		t.Fatal(err)
	}
	args := []string{"locomo", "--data", data, "--embed", "--home", home, "--json"}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code == 0 || !bytes.Contains(stderr.Bytes(), []byte("config.toml")) {
		t.Fatalf("a home without config.toml: exit %d, stderr %q", code, stderr.String())
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("namespace = \"x\"\n[embed]\nprovider = \"builtin\"\nmodel = \"topics\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r struct {
		R5      float64 `json:"r@5"`
		Meaning struct {
			Embedder string  `json:"embedder"`
			R5       float64 `json:"r@5"`
		} `json:"meaning"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.R5 != 0 || r.Meaning.Embedder != "builtin/topics/4" || r.Meaning.R5 != 1 {
		t.Errorf("report %+v: want words finding nothing and meaning the evidence", r)
	}
}
