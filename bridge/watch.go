package bridge

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/memmesh/memmesh/api"
)

// ChangeLog is what Watch reads of a node to learn that a namespace
// changed; *node.Node implements it.
type ChangeLog interface {
	Changes(ctx context.Context, req api.ChangesRequest) (api.ChangesResult, error)
}

// maxChangesRead bounds the change log read in one tick.
const maxChangesRead = 4096

// Watch runs a pass at once, then every interval, and within poll of a
// change: a memory directory's files changed (their names, sizes and
// times), or, when svc is a ChangeLog too, a memory of auto memory
// changed in the store (an edit that came from another machine).
func (b *Bridge) Watch(ctx context.Context, svc Service, interval, poll time.Duration) {
	log, _ := svc.(ChangeLog)
	var pos uint64
	if log != nil {
		if res, err := log.Changes(ctx, api.ChangesRequest{After: ^uint64(0), Limit: 1}); err == nil {
			pos = res.Next
		}
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	next, last := time.Now(), ""
	warned := map[string]bool{}
	for {
		due := !time.Now().Before(next)
		// Taken before the pass reads the files: an edit made during the
		// pass changes it, and brings another (the pass's own writes
		// bring one that finds nothing to do).
		fp := b.fingerprint(ctx)
		due = due || fp != last
		if log != nil {
			var changed bool
			pos, changed = b.tagged(ctx, log, pos)
			due = due || changed
		}
		if due {
			reps, err := b.Run(ctx, svc, Options{})
			if ctx.Err() != nil {
				return
			}
			warned = b.logPass(reps, err, warned)
			last, next = fp, time.Now().Add(interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tagged reads the change log from pos and reports whether a memory of
// auto memory changed.
func (b *Bridge) tagged(ctx context.Context, log ChangeLog, pos uint64) (uint64, bool) {
	changed := false
	for read := 0; read < maxChangesRead; {
		res, err := log.Changes(ctx, api.ChangesRequest{After: pos, Limit: 256})
		if err != nil {
			return pos, false
		}
		if res.Reset {
			return res.Next, true
		}
		for _, m := range res.Memories {
			for _, tag := range m.Tags {
				changed = changed || tag == Tag
			}
		}
		read += len(res.Memories) + len(res.Edges)
		pos = res.Next
		if !res.More {
			break
		}
	}
	return pos, changed
}

// logPass logs what a pass changed, and the problems that warned (those
// of the pass before) lacks: a file left alone is said once, not at every
// pass. It returns the pass's problems.
func (b *Bridge) logPass(reps []ProjectReport, err error, warned map[string]bool) map[string]bool {
	now := map[string]bool{}
	for _, r := range reps {
		if r.Imported+r.Updated+r.Archived+len(r.Written) > 0 {
			b.log.Info("auto memory mirrored", "project", r.Path, "namespace", r.Namespace,
				"imported", r.Imported, "updated", r.Updated, "archived", r.Archived, "written", r.Written, "conflicts", r.Conflicts)
		}
		for _, p := range r.Problems {
			key := r.Path + "\x00" + p
			if !warned[key] {
				b.log.Warn("auto memory: left alone", "project", r.Path, "problem", p)
			}
			now[key] = true
		}
	}
	if err != nil && !warned[err.Error()] {
		b.log.Warn("auto memory not mirrored", "err", err)
	}
	if err != nil {
		now[err.Error()] = true
	}
	return now
}

// fingerprint sums the names, sizes and times of the files of every
// project's memory directory.
func (b *Bridge) fingerprint(ctx context.Context) string {
	h := sha256.New()
	dirs, _ := filepath.Glob(filepath.Join(b.cfg.ClaudeHome, "projects", "*", "memory"))
	for i, dir := range dirs {
		if i == maxProjects || ctx.Err() != nil {
			break
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents[:min(len(ents), MaxFiles)] {
			if info, err := e.Info(); err == nil {
				fmt.Fprintf(h, "%s/%s %d %d\n", dir, e.Name(), info.Size(), info.ModTime().UnixNano())
			}
		}
	}
	return string(h.Sum(nil))
}
