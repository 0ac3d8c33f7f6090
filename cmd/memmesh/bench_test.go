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
	code := runCLI(context.Background(), []string{"bench", "capture", "--memories", "200", "--import", "2000", "--json", "--cpuprofile", path},
		nil, &stdout, &stderr)
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
