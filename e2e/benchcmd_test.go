package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/syncbuf"
)

// TestBenchPassesSignalsOn: `memmesh bench` runs the memmesh-bench
// beside it; a SIGTERM sent to memmesh reaches memmesh-bench, which stops
// its benchmark and removes its data, and memmesh exits with its code.
func TestBenchPassesSignalsOn(t *testing.T) {
	bench := filepath.Join(filepath.Dir(binary), "memmesh-bench")
	if out, err := exec.Command("go", "build", "-o", bench, "../cmd/memmesh-bench").CombinedOutput(); err != nil {
		t.Fatalf("build memmesh-bench: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.Remove(bench) })
	home := newHome(t)
	tmp := t.TempDir() // where the benchmark keeps its data
	// Far more captures than run before the signal: it stops the benchmark.
	cmd := exec.Command(binary, "bench", "capture", "--memories", "200000", "--json")
	cmd.Env = append(testEnv(home), "TMPDIR="+tmp)
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	eventually(t, 5*time.Minute, "memmesh-bench captures", func() bool {
		return strings.Contains(stderr.String(), "msg=capturing")
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(5 * time.Minute): // a guard against hanging: the benchmark has hours to go
		t.Fatalf("memmesh bench still runs 5 minutes after SIGTERM\nstderr: %s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("memmesh bench after SIGTERM: %v, want exit status 1 (memmesh-bench's)", err)
	}
	if !strings.Contains(stderr.String(), "memmesh-bench: bench: capture: context canceled") || stdout.String() != "" {
		t.Errorf("stdout %q, stderr %s; want memmesh-bench's cancelled benchmark and no report", stdout.String(), stderr.String())
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "memmesh-bench-*"))
	if len(left) > 0 {
		t.Errorf("the benchmark's data is left: %v", left)
	}
}
