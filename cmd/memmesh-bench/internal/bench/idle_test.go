package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestIdle(t *testing.T) {
	bin := memmeshBinary(t)
	// A short path: the daemons' unix socket paths have a limit.
	dir, err := os.MkdirTemp("", "mmb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r, err := Idle(context.Background(), IdleOptions{Binary: bin, Nodes: 2, Memories: 30, Window: time.Second, Common: Common{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Nodes != 2 || r.Memories != 30 || len(r.CPU) != 2 || r.WindowS < 1 {
		t.Fatalf("report = %+v", r)
	}
	for i, c := range r.CPU {
		if c < 0 {
			t.Errorf("daemon %d: %v %% CPU", i+1, c)
		}
	}
}

// TestProcessCPU: this process's CPU time, read from /proc, grows while
// it spins.
func TestProcessCPU(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		after, err := processCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time still %v after a minute of spinning", after)
		}
	}
}
