package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// memmeshBinary builds the memmesh executable into a temporary directory;
// under -short the test is skipped.
func memmeshBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary: ./test runs it, ./test -short does not")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build memmesh with")
	}
	bin := filepath.Join(t.TempDir(), "memmesh")
	out, err := exec.Command(gobin, "build", "-o", bin, "../../../memmesh").CombinedOutput()
	if err != nil {
		t.Fatalf("build memmesh: %v\n%s", err, out)
	}
	return bin
}

func TestStartup(t *testing.T) {
	bin := memmeshBinary(t)
	// A short path: the daemon's unix socket path has a limit.
	dir, err := os.MkdirTemp("", "mmb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r, err := Startup(context.Background(), StartupOptions{Binary: bin, Memories: 50, Runs: 2, Common: Common{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Runs != 2 || r.ImportRate <= 0 || r.Ready.P50 <= 0 || r.Ready.P99 < r.Ready.P50 {
		t.Errorf("report = %+v", r)
	}
	if r.RSSP50 <= 0 || r.RSSMax < r.RSSP50 {
		t.Errorf("RSS p50 %v MB, max %v MB", r.RSSP50, r.RSSMax)
	}
}

// TestNoMemmesh: with no memmesh beside this executable nor on PATH, a
// benchmark that starts daemons says how to name or install one.
func TestNoMemmesh(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Startup(context.Background(), StartupOptions{Memories: 1, Runs: 1, Common: Common{Dir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "--memmesh") || !strings.Contains(err.Error(), "go install ./cmd/memmesh") {
		t.Errorf("Startup with no memmesh: %v; want an error naming --memmesh and 'go install ./cmd/memmesh'", err)
	}
}
