package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	out, err := exec.Command(gobin, "build", "-o", bin, "../../cmd/memmesh").CombinedOutput()
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
