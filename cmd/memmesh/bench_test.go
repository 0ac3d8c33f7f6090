package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchWithoutMemmeshBench: with no memmesh-bench beside memmesh nor
// on PATH, `memmesh bench` fails with one line saying how to install it,
// and its help says so too.
func TestBenchWithoutMemmeshBench(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), []string{"bench", "capture", "--json"}, nil, &stdout, &stderr)
	if code != exitError || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q; want exit %d and no output", code, stdout.String(), exitError)
	}
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "go install ./cmd/memmesh-bench") {
		t.Errorf("stderr = %q, want one line saying 'go install ./cmd/memmesh-bench'", stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	if code := runCLI(context.Background(), []string{"bench", "--help"}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("bench --help: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "memmesh-bench: not installed") || !strings.Contains(stdout.String(), "go install ./cmd/memmesh-bench") {
		t.Errorf("bench --help does not say memmesh-bench is missing and how to install it:\n%s", stdout.String())
	}
}

// TestBenchRunsMemmeshBench: `memmesh bench ARGS` is memmesh-bench ARGS
// (found on PATH here): its output, its errors and its exit code.
func TestBenchRunsMemmeshBench(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "memmesh-bench"), "../memmesh-bench").CombinedOutput()
	if err != nil {
		t.Fatalf("build memmesh-bench: %v\n%s", err, out)
	}
	t.Setenv("PATH", dir)
	ctx := context.Background()

	var stdout, stderr bytes.Buffer
	if code := runCLI(ctx, []string{"bench", "capture", "--memories", "20", "--import", "100", "--json"}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("bench capture: exit %d: %s", code, stderr.String())
	}
	var r struct {
		Captures int `json:"captures"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Captures != 20 {
		t.Errorf("bench capture --json printed %q (%v), want a report of 20 captures", stdout.String(), err)
	}

	stdout.Reset()
	stderr.Reset()
	code := runCLI(ctx, []string{"bench", "capture", "--memories", "0"}, nil, &stdout, &stderr)
	if code != exitUsage || !strings.HasPrefix(stderr.String(), "memmesh-bench: ") || !strings.Contains(stderr.String(), "--memories 0") {
		t.Errorf("bench capture --memories 0: exit %d, stderr %q; want memmesh-bench's usage error, exit %d", code, stderr.String(), exitUsage)
	}

	stdout.Reset()
	stderr.Reset()
	if code := runCLI(ctx, []string{"bench", "--help"}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("bench --help: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"memmesh-bench: " + filepath.Join(dir, "memmesh-bench"), "go install ./cmd/memmesh-bench", "locomo"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("bench --help does not say %q:\n%s", want, stdout.String())
		}
	}
}
