package bridge

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/syncbuf"
	"github.com/memmesh/memmesh/internal/testwait"
)

// TestWatch: the loop mirrors at once, then within a poll of an edit of
// a memory file, long before its interval; a file it leaves alone is
// warned of once.
func TestWatch(t *testing.T) {
	ns, a, _ := twoMachines(t)
	var logs syncbuf.Buffer // the bridge logs while the test reads
	a.bridge.log = slog.New(slog.NewTextHandler(&logs, nil))
	a.write(t, IndexFile, "- first\n")
	a.write(t, "bad.md", "\xff\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.bridge.Watch(ctx, ns, time.Hour, 20*time.Millisecond)
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, "the first entry is not mirrored", func() bool { return ns.has("first") })
	a.write(t, IndexFile, "- first\n- second\n")
	waitFor(t, "an edit is not mirrored within the poll", func() bool { return ns.has("second") })
	a.write(t, IndexFile, "- first\n- second\n- third\n")
	waitFor(t, "a second edit is not mirrored", func() bool { return ns.has("third") })
	cancel()
	<-done
	if n := strings.Count(logs.String(), "bad.md"); n != 1 {
		t.Errorf("the file left alone is warned of %d times, want once:\n%s", n, logs.String())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testwait.Limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
