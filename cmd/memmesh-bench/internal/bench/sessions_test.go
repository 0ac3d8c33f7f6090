package bench

import (
	"context"
	"os"
	"testing"
)

func TestSessions(t *testing.T) {
	bin := memmeshBinary(t)
	dir, err := os.MkdirTemp("", "mmb") // short: the daemon's socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r, err := Sessions(context.Background(), SessionsOptions{MB: 1, Hooks: 3, Binary: bin, Common: Common{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes < 1e6 || r.Turns < 100 || r.MBPerS <= 0 || r.RereadMS <= 0 || r.Hook.P50 <= 0 || r.Hook.P99 < r.Hook.P50 {
		t.Errorf("report = %+v", r)
	}
	if _, err := Sessions(context.Background(), SessionsOptions{MB: 0, Hooks: 1}); err == nil {
		t.Error("a transcript of 0 MB was accepted")
	}
}
