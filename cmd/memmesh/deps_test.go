package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoDeadWeight holds what the memmesh executable leaves
// out: the benchmarks and the test-only packages they use (memmesh-bench
// links them), and the tokenizer's package that can hand out any of its
// four vocabularies (internal/tokens builds its one codec, so the other
// tables are not linked).
func TestBinaryLinksNoDeadWeight(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := make(map[string]bool)
	for _, dep := range strings.Fields(string(out)) {
		deps[dep] = true
	}
	for _, pkg := range []string{
		"github.com/memmesh/memmesh/cmd/memmesh-bench/internal/bench",
		"github.com/memmesh/memmesh/internal/faultnet",
		"github.com/memmesh/memmesh/internal/corpus",
		"github.com/tiktoken-go/tokenizer",
	} {
		if deps[pkg] {
			t.Errorf("memmesh links %s", pkg)
		}
	}
}
