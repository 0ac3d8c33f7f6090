package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout is how long a call waits without a sign of life from the
// daemon.
const DefaultTimeout = 10 * time.Second

// longCallLimit bounds a call that may rightly run long (a lifecycle pass,
// compaction, analysis, an import, joining a mesh) while its daemon keeps
// answering its health check.
const longCallLimit = 30 * time.Minute

// longCalls are the routes of calls that may run long: the client waits
// for them while the daemon answers its health check.
var longCalls = map[string]bool{
	"/v1/lifecycle": true, "/v1/compact": true, "/v1/compact/apply": true,
	"/v1/analyze": true, "/v1/reflect": true, "/v1/doctor": true, "/v1/stale": true, "/v1/git/check": true,
	"/v1/import": true, "/v1/mesh/join": true, "/v1/mesh/rejoin": true,
}

// isLong reports whether a call to path may run long: one of longCalls, or
// a purge, which rewrites the search index and compacts storage.
func isLong(path string) bool {
	return longCalls[path] || strings.HasPrefix(path, "/v1/memories/") && strings.HasSuffix(path, "/purge")
}

// ErrTimeout reports a daemon that did not answer in time; the error that
// matches it says which daemon and where to look.
var ErrTimeout = errors.New("web: the daemon did not answer in time")

// ClientOptions configure a Client.
type ClientOptions struct {
	// Timeout is how long a call waits without a sign of life from the
	// daemon: the answer's start, its next bytes, the request's next
	// bytes taken, or, during a long call, an answer to a health check.
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// Describe, when set, adds to a timeout's message what helps find
	// the daemon, such as "pid 42; see HOME/memmesh.log".
	Describe func() string
}

// Causes of a call's cancellation by its watchdog.
var (
	errNoAnswer = errors.New("no answer")
	errTooLong  = errors.New("no end")
)

// timeoutError is the error of a call that timed out.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string        { return e.msg }
func (e *timeoutError) Is(target error) bool { return target == ErrTimeout }

// watchdog cancels a call when the daemon shows no sign of life for the
// client's timeout.
type watchdog struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	done   sync.WaitGroup
}

// watch starts a watchdog over a call on ctx; a long call also checks the
// daemon's health while it waits. Stop it when the call is done.
func (c *Client) watch(ctx context.Context, long bool) *watchdog {
	w := &watchdog{c: c}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.timer = time.AfterFunc(c.timeout, func() { w.cancel(errNoAnswer) })
	if long {
		limit := time.AfterFunc(longCallLimit, func() { w.cancel(errTooLong) })
		w.done.Go(func() {
			defer limit.Stop()
			w.heartbeat()
		})
	}
	return w
}

// alive records a sign of life.
func (w *watchdog) alive() { w.timer.Reset(w.c.timeout) }

// heartbeat asks the daemon for its health twice per timeout until the
// call ends, and counts each answer as a sign of life.
func (w *watchdog) heartbeat() {
	tick := time.NewTicker(w.c.timeout / 2)
	defer tick.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := w.c.Health(w.ctx); err == nil {
			w.alive()
		}
	}
}

// stop ends the watchdog and returns err, or the timeout it caused.
func (w *watchdog) stop(err error) error {
	w.timer.Stop()
	cause := context.Cause(w.ctx)
	w.cancel(nil)
	w.done.Wait()
	if err == nil {
		return nil
	}
	home := filepath.Dir(w.c.socket)
	var msg string
	switch cause {
	case errNoAnswer:
		msg = fmt.Sprintf("the daemon at %s did not answer in %s", home, w.c.timeout)
	case errTooLong:
		msg = fmt.Sprintf("the daemon at %s did not finish in %s", home, longCallLimit)
	default:
		return err
	}
	if w.c.describe != nil {
		msg += "; " + w.c.describe()
	}
	return &timeoutError{msg: msg}
}

// watched counts every read that returns data as a sign of life.
type watched struct {
	io.Reader
	w *watchdog
}

func (r watched) Read(p []byte) (int, error) {
	n, err := r.Reader.Read(p)
	if n > 0 {
		r.w.alive()
	}
	return n, err
}
