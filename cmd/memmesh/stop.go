package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/memmesh/memmesh/web"
)

// stoppingFile, in the home, is the report of a daemon that is stopping:
// what it is doing, and a count it raises while it runs, which 'memmesh
// stop' reads as signs of life.
const stoppingFile = "memmesh.stopping"

// beatEvery is how often a stopping daemon raises its count.
const beatEvery = 100 * time.Millisecond

// stopCeiling bounds how long 'memmesh stop' waits for a daemon that
// keeps showing signs of life, as the client does for a long call.
const stopCeiling = 30 * time.Minute

// firstDoing is what a daemon does first when it stops.
const firstDoing = "finishing the requests in flight"

// stopReport keeps the stopping file of a daemon that stops, until end.
type stopReport struct {
	path     string
	log      *slog.Logger
	mu       sync.Mutex
	doing    string
	beats    int
	failed   bool // a write failed (logged once)
	done     chan struct{}
	finished chan struct{}
}

// reportStopping starts the report of a daemon that begins to stop.
func reportStopping(home string, log *slog.Logger) *stopReport {
	r := &stopReport{path: filepath.Join(home, stoppingFile), log: log, doing: firstDoing,
		done: make(chan struct{}), finished: make(chan struct{})}
	r.write()
	go func() {
		defer close(r.finished)
		tick := time.NewTicker(beatEvery)
		defer tick.Stop()
		for {
			select {
			case <-r.done:
				return
			case <-tick.C:
				r.write()
			}
		}
	}()
	return r
}

// phase says what the daemon does now.
func (r *stopReport) phase(doing string) {
	r.mu.Lock()
	r.doing = doing
	r.mu.Unlock()
	r.write()
}

// write raises the count and writes the report.
func (r *stopReport) write() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beats++
	err := os.WriteFile(r.path, fmt.Appendf(nil, "%s\n%d\n", r.doing, r.beats), 0o600)
	if err != nil && !r.failed {
		r.failed = true
		r.log.Warn("cannot report the progress of stopping: 'memmesh stop' may give up waiting", "err", err)
	}
}

// end stops the report and removes its file.
func (r *stopReport) end() {
	close(r.done)
	<-r.finished
	os.Remove(r.path)
}

// readReport returns the stopping file's report (its first 4 KiB) and
// what the daemon does, as it says.
func readReport(home string) (report []byte, doing string) {
	f, err := os.Open(filepath.Join(home, stoppingFile))
	if err != nil {
		return nil, "starting to stop"
	}
	defer f.Close()
	report, _ = io.ReadAll(io.LimitReader(f, 4<<10))
	line, _, _ := bytes.Cut(report, []byte("\n"))
	if len(line) == 0 {
		return report, "starting to stop"
	}
	return report, string(line)
}

// stopDaemon asks the home's daemon to stop and waits until it has,
// telling status what it waits for. A daemon that accepted the request
// stops whatever the command reports, so the command waits as long as the
// daemon shows signs of life, not for a fixed time; and a request that
// gets no answer lapses (web.Client.Shutdown), so that the daemon does
// not stop later either.
func stopDaemon(ctx context.Context, home string, status func(format string, args ...any)) (bool, error) {
	timeout, err := clientTimeout()
	if err != nil {
		return false, err
	}
	c, err := newClient(home)
	if err != nil {
		return false, err
	}
	switch err := c.Shutdown(ctx); {
	case errors.Is(err, web.ErrNoDaemon):
		return false, nil
	case errors.Is(err, web.ErrTimeout):
		return false, fmt.Errorf("%w. It keeps running: the request to stop lapsed unanswered (is it suspended or stuck?)", err)
	case err != nil:
		return false, err
	}
	return true, waitStopped(ctx, home, timeout, status)
}

// waitStopped waits until the daemon releases the home, while its report
// changes at least once every quiet; status hears what it is doing once
// the wait has lasted a second.
func waitStopped(ctx context.Context, home string, quiet time.Duration, status func(format string, args ...any)) error {
	pid := daemonPID(home)
	start := time.Now()
	life, shown := start, ""
	var seen []byte
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if lock, err := lockHome(home); err == nil {
			lock.release()
			return nil
		}
		now := time.Now()
		report, doing := readReport(home)
		if !bytes.Equal(report, seen) {
			seen, life = report, now
		}
		if doing != shown && now.Sub(start) >= time.Second {
			status("Waiting for memmesh (pid %s) to stop: %s", pid, doing)
			shown = doing
		}
		switch {
		case now.Sub(life) > quiet:
			return fmt.Errorf("memmesh (pid %s) is stopping (%s) but has shown no sign of life for %s (is it suspended or stuck?): it stops when it goes on; 'kill -KILL %s' ends it now (see %s)",
				pid, doing, quiet, pid, filepath.Join(home, logFile))
		case now.Sub(start) > stopCeiling:
			return fmt.Errorf("memmesh (pid %s) is still stopping after %s (%s): it stops when that ends; 'kill -KILL %s' ends it now (see %s)",
				pid, stopCeiling, doing, pid, filepath.Join(home, logFile))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: memmesh (pid %s) goes on stopping (%s); 'memmesh stop' waits for it again", ctx.Err(), pid, doing)
		case <-tick.C:
		}
	}
}
