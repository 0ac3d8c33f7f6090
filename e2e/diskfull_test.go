package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/tmpfs"
	"github.com/memmesh/memmesh/web"
)

// callBound is how long any call to a daemon on a full disk may take
// before the test calls it hung. It is generous: this is liveness, not
// speed.
const callBound = 60 * time.Second

// tmpfsHome mounts a tmpfs of size and returns it as an empty memmesh
// home whose daemon is stopped before it is unmounted.
func tmpfsHome(t *testing.T, size string) string {
	t.Helper()
	home := tmpfs.Mount(t, size)
	t.Cleanup(func() { stopHome(t, home) })
	return home
}

// isDiskFull reports whether err is the daemon's answer to a write on a
// full disk.
func isDiskFull(err error) bool {
	var e *web.Error
	return errors.As(err, &e) && e.Code == "disk_full" && e.Status == http.StatusInsufficientStorage &&
		strings.HasPrefix(e.Message, "disk full: ")
}

// captureLoop captures memories one after another until stopped, and keeps
// what became of each: acknowledged (with a word unique to it) or refused.
type captureLoop struct {
	c    *web.Client
	rng  *rand.Rand // used by the loop's goroutine only
	seed uint64

	mu      sync.Mutex
	acked   map[string]string // memory id -> its unique word
	full    int               // captures refused because the disk is full
	lastErr error             // the last refusal
	bad     []string          // anything else: a failure of the test
	n       int

	cancel context.CancelFunc
	done   chan struct{}
}

func startCaptures(t *testing.T, c *web.Client, seed uint64) *captureLoop {
	l := &captureLoop{c: c, rng: rand.New(rand.NewPCG(seed, 12)), seed: seed, acked: map[string]string{}, done: make(chan struct{})}
	var ctx context.Context
	ctx, l.cancel = context.WithCancel(context.Background())
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			l.once(ctx)
		}
	}()
	t.Cleanup(l.stop)
	return l
}

// once captures one memory of a few KiB, so that the daemon's own writes
// take space too.
func (l *captureLoop) once(ctx context.Context) {
	l.mu.Lock()
	l.n++
	word := fmt.Sprintf("dfw%dq%d", l.seed%1000, l.n)
	l.mu.Unlock()
	var sb strings.Builder
	sb.WriteString("Capture " + word + " on a filling disk:")
	for range 600 {
		sb.WriteByte(' ')
		for range 3 + l.rng.IntN(5) {
			sb.WriteByte(byte('a' + l.rng.IntN(26)))
		}
	}
	cctx, cancel := context.WithTimeout(ctx, callBound)
	defer cancel()
	res, err := l.c.Remember(cctx, api.RememberRequest{Namespace: "full", Content: sb.String()})
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.acked[res.ID] = word
	case isDiskFull(err):
		l.full++
		l.lastErr = err
	case ctx.Err() != nil:
		// stopped while the capture ran: neither acknowledged nor refused
	default:
		l.bad = append(l.bad, fmt.Sprintf("capture %s: %v", word, err))
	}
}

func (l *captureLoop) stop() {
	l.cancel()
	<-l.done
}

// counts returns the numbers of acknowledged and refused captures.
func (l *captureLoop) counts() (acked, full int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked), l.full
}

// check fails the test if any capture ended other than acknowledged or
// refused for a full disk.
func (l *captureLoop) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) > 0 {
		t.Fatalf("%d captures neither succeeded nor failed with disk_full (seed %d), first: %s", len(l.bad), l.seed, l.bad[0])
	}
}

// TestDiskFullDuringCaptures fills the disk under a daemon while it takes
// captures: every capture is either acknowledged or refused with disk_full,
// the daemon stays up, reads keep working, captures succeed again once the
// space is freed, stop works on a full disk, and after a restart every
// acknowledged capture is there.
func TestDiskFullDuringCaptures(t *testing.T) {
	// The store preallocates each write-ahead log to about a memtable's
	// size (32 MiB), and a flush under load can hold two at once beside
	// the index: the file system leaves room for them, so that removing
	// the filler gives back more than the reserve.
	home := tmpfsHome(t, "320m")
	// The reserve is small enough for a small tmpfs; the default (256 MiB)
	// is for real disks.
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("min_free_space = \"32MiB\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	cmd, c := startServe(t, home, "--no-mesh", "--http", "")
	ctx := context.Background()
	filler := filepath.Join(home, "filler")

	loop := startCaptures(t, c, seed)
	eventually(t, callBound, "20 captures acknowledged", func() bool { acked, _ := loop.counts(); return acked >= 20 })
	t.Logf("filled %d MiB", tmpfs.Fill(t, filler)>>20)
	eventually(t, callBound, "captures refused with disk_full", func() bool {
		loop.check(t)
		_, full := loop.counts()
		return full >= 5
	})
	loop.stop()
	loop.check(t)
	acked, full := loop.counts()
	t.Logf("%d captures acknowledged, %d refused, last refusal: %v", acked, full, loop.lastErr)
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the daemon died on a full disk: %v\n%s", err, readLog(home))
	}

	checkReads(t, home, c, loop.acked)
	r := mm(t, home, "", "capture", "--ns", "full", "one more on the full disk")
	// The home is the tmpfs's mount point, which the message names.
	if r.code != 1 || !strings.HasPrefix(r.stderr, "memmesh: disk full: ") || !strings.Contains(r.stderr, " free on "+home+", ") ||
		!strings.Contains(r.stderr, "free some space") {
		t.Fatalf("capture on a full disk: exit %d, stderr %q", r.code, r.stderr)
	}

	// Space returns: captures succeed again without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var again api.RememberResult
	eventually(t, callBound, "a capture after freeing space", func() bool {
		cctx, cancel := context.WithTimeout(ctx, callBound)
		defer cancel()
		var err error
		again, err = c.Remember(cctx, api.RememberRequest{Namespace: "full", Content: "space is back zqagainq"})
		if err != nil && !isDiskFull(err) {
			t.Fatalf("capture after freeing space: %v", err)
		}
		return err == nil
	})
	loop.acked[again.ID] = "zqagainq"
	checkAcked(t, c, "full", loop.acked, 1)

	// Full again: the daemon stops cleanly, and starts, on a full disk.
	tmpfs.Fill(t, filler)
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("1000 captures acknowledged on a refilled disk, none refused")
		}
		word := fmt.Sprintf("zqrefill%dq", i)
		cctx, cancel := context.WithTimeout(ctx, callBound)
		res, err := c.Remember(cctx, api.RememberRequest{Namespace: "full", Content: "on the refilled disk " + word})
		cancel()
		if isDiskFull(err) {
			break
		}
		if err != nil {
			t.Fatalf("capture on the refilled disk: %v", err)
		}
		loop.acked[res.ID] = word // written before the disk showed full
	}
	stop := func() {
		t.Helper()
		if r := mm(t, home, "", "stop"); r.code != 0 {
			t.Fatalf("stop: exit %d: %s\n%s", r.code, r.stderr, readLog(home))
		}
		waitExit(t, cmd)
	}
	stop()
	cmd, c = startServe(t, home, "--no-mesh", "--http", "")
	checkAcked(t, c, "full", loop.acked, 2)
	if _, err := c.Remember(ctx, api.RememberRequest{Namespace: "full", Content: "after a start on a full disk"}); !isDiskFull(err) {
		t.Fatalf("capture after a start on a full disk: %v, want disk_full", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	res, err := c.Remember(ctx, api.RememberRequest{Namespace: "full", Content: "space is back once more zqoncemoreq"})
	if err != nil {
		t.Fatalf("capture once space is back after a start on a full disk: %v", err)
	}
	loop.acked[res.ID] = "zqoncemoreq"

	// Nothing acknowledged was lost.
	stop()
	_, c = startServe(t, home, "--no-mesh", "--http", "")
	checkAcked(t, c, "full", loop.acked, 3)
}

// checkReads runs every kind of read, through the API and the CLI, and
// fails the test unless each works.
func checkReads(t *testing.T, home string, c *web.Client, acked map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callBound)
	defer cancel()
	for id, word := range acked {
		if _, err := c.Get(ctx, id); err != nil {
			t.Fatalf("get on a full disk: %v", err)
		}
		res, err := c.Search(ctx, api.SearchRequest{Query: word, Namespace: "full"})
		if err != nil || len(res.Results) == 0 || res.Results[0].ID != id {
			t.Fatalf("search %s on a full disk: %+v, %v", word, res.Results, err)
		}
		break
	}
	if l, err := c.List(ctx, api.ListRequest{Namespace: "full"}); err != nil || len(l) == 0 {
		t.Fatalf("list on a full disk: %d memories, %v", len(l), err)
	}
	if _, err := c.Context(ctx, api.ContextRequest{Namespace: "full"}); err != nil {
		t.Fatalf("context on a full disk: %v", err)
	}
	var buf bytes.Buffer
	if h, err := c.Export(ctx, &buf); err != nil || h.Memories < len(acked) {
		t.Fatalf("export on a full disk: %+v, %v", h, err)
	}
	for _, args := range [][]string{{"list", "--ns", "full"}, {"search", "--ns", "full", "capture"}, {"context", "--ns", "full"}, {"stats"}} {
		ok(t, home, args...)
	}
}

// waitExit waits for a daemon that was asked to stop.
func waitExit(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the daemon exited with %v", err)
		}
	case <-time.After(callBound):
		t.Fatalf("the daemon did not exit within %s of stop", callBound)
	}
}

func readLog(home string) string {
	data, _ := os.ReadFile(filepath.Join(home, "serve.log"))
	return string(data)
}
