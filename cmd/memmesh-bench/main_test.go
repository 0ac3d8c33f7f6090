package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
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
