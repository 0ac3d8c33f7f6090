// Package gitstale keeps, per git working tree of a namespace, the history
// of its files (local data, read incrementally with one git log a check),
// and judges by it whether a memory may no longer hold: a file it names
// changed, was deleted or renamed since it was last updated or confirmed,
// or a symbol it quotes left the files it names (and where it went, by the
// symbol index). The node registers trees, schedules checks and counts the
// memories a check makes stale.
package gitstale

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/gitrepo"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/storage"
)

// What a git check keeps, per working tree, in local data (never
// replicated): how far it read (gitStatePrefix + root) and, for each file
// the history changed, its latest changes and whether it is gone
// (gitFilePrefix + root + NUL + path). A check reads only the commits
// since the last one it read, with one git log, and updates the files
// they changed; a memory's reasons are then a few point reads.
const (
	gitStatePrefix = "gitstate/"
	gitFilePrefix  = "gitfile/"
	// MaxFileChanges is how many of a file's latest changes are kept.
	MaxFileChanges = 16
	// maxCheckCommits bounds the commits one check reads: the first
	// check of a long history reads the newest ones.
	maxCheckCommits = 100_000
	// gitFlushFiles is how many files a check holds before writing them.
	gitFlushFiles = 8192
	// gitProgressEvery is how often (in commits) a long check logs.
	gitProgressEvery = 5000
	// maxChangedPaths bounds the paths a check judges the memories of
	// one by one; past it, every memory of the namespace is judged.
	maxChangedPaths = 4096
	// maxQueuedGitChecks bounds the background checks waiting.
	maxQueuedGitChecks = 16
)

// gitState is how far the checks of a tree have read its history.
type gitState struct {
	Head    string    `json:"head"`              // the last commit read
	Commits int       `json:"commits"`           // commits read since the history was first read
	Oldest  time.Time `json:"oldest,omitzero"`   // the oldest commit read
	Shallow bool      `json:"shallow,omitempty"` // a shallow clone: history older than Oldest is missing
	Bounded bool      `json:"bounded,omitempty"` // the first read stopped at maxCheckCommits
	Checked time.Time `json:"checked"`
}

// fileHistory is what the checks know of one file: its latest changes,
// oldest first, and how it left the tree when it did.
type fileHistory struct {
	Changes []fileEvent `json:"c,omitempty"`
	More    bool        `json:"more,omitempty"` // older changes were dropped
	Gone    *fileEvent  `json:"gone,omitempty"` // deleted, or renamed (To)
}

// fileEvent is a commit that changed, deleted or renamed a file.
type fileEvent struct {
	At      int64  `json:"t"` // committer time, Unix seconds
	Commit  string `json:"h"`
	Subject string `json:"s"`
	To      string `json:"to,omitempty"` // the new path of a renamed file
}

// Check brings the history kept for the tree at root up to its HEAD
// and returns the paths the commits read changed (nil when more than
// maxChangedPaths). What keeps a check from running or from seeing
// everything (git missing, no commits, a tree that is gone, a shallow
// clone) is a note, not an error.
func (c *Checker) Check(ctx context.Context, root string) (res api.GitCheck, changed []string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	res = api.GitCheck{Root: root, At: c.clock.Now().UTC()}
	defer func() { res.TookMS = float64(time.Since(start).Microseconds()) / 1000 }()
	note := func(format string, args ...any) { res.Notes = append(res.Notes, fmt.Sprintf(format, args...)) }
	if !isTreeRoot(root) {
		note("%s is gone, or no longer a git working tree: nothing checked", root)
		return res, nil, nil
	}
	head, err := gitrepo.Head(ctx, root)
	switch {
	case errors.Is(err, gitrepo.ErrNoGit):
		note("%v", err)
		return res, nil, nil
	case err != nil:
		return res, nil, fmt.Errorf("check %s: %w", root, err)
	case head == "":
		note("%s has no commits yet: nothing to check", root)
		return res, nil, nil
	}
	res.Head = head
	st, err := c.state(root)
	if err != nil {
		return res, nil, err
	}
	res.From = st.Head
	deepened := false // a shallow clone that got its history since
	if st.Shallow {
		shallow, err := gitrepo.IsShallow(ctx, root)
		if err != nil {
			return res, nil, fmt.Errorf("check %s: %w", root, err)
		}
		deepened = !shallow
	}
	if st.Head == head && !deepened {
		res.Notes = st.partialNote(res.Notes)
		return res, nil, nil
	}
	revs := head
	if st.Head != "" {
		ok, err := gitrepo.IsAncestor(ctx, root, st.Head, head)
		switch {
		case err != nil:
			return res, nil, fmt.Errorf("check %s: %w", root, err)
		case !ok:
			note("HEAD no longer descends from %.7s, the commit the last check reached (history rewritten, or another branch checked out): history read anew", st.Head)
		case deepened:
			note("the clone is no longer shallow: history read anew")
		default:
			revs = st.Head + ".." + head
		}
	}
	if res.Full = revs == head; res.Full {
		if err := c.store.DeleteLocalPrefix(gitFilePrefix + root + "\x00"); err != nil {
			return res, nil, fmt.Errorf("check %s: %w", root, err)
		}
		st = gitState{}
	}
	files := gitFiles{c: c, root: root, cache: map[string]*fileHistory{}, changed: map[string]bool{}}
	var first time.Time
	err = gitrepo.Log(ctx, root, revs, maxCheckCommits, func(commit gitrepo.Commit) error {
		if res.Commits == 0 {
			first = commit.At
		}
		res.Commits++
		res.Files += len(commit.Changes)
		if err := files.apply(&commit); err != nil {
			return err
		}
		if res.Commits%gitProgressEvery == 0 {
			c.log.Info("reading git history", "root", root, "commits", res.Commits, "files", res.Files)
		}
		return nil
	})
	if err == nil {
		err = files.flush()
	}
	if err != nil {
		return res, nil, fmt.Errorf("check %s: %w", root, err)
	}
	if res.Full {
		if st.Shallow, err = gitrepo.IsShallow(ctx, root); err != nil {
			return res, nil, fmt.Errorf("check %s: %w", root, err)
		}
		st.Oldest, st.Bounded = first, res.Commits == maxCheckCommits
	}
	st.Head, st.Commits, st.Checked = head, st.Commits+res.Commits, res.At
	res.Notes = st.partialNote(res.Notes)
	if err := c.putState(root, st); err != nil {
		return res, nil, err
	}
	if files.changed != nil {
		changed = append([]string{}, slices.Sorted(maps.Keys(files.changed))...)
	}
	return res, changed, nil
}

// partialNote adds to notes why the kept history is incomplete, if it is.
func (st *gitState) partialNote(notes []string) []string {
	before := st.Oldest.Format(time.DateOnly)
	switch {
	case st.Shallow:
		return append(notes, fmt.Sprintf("shallow clone: changes before %s unknown", before))
	case st.Bounded:
		return append(notes, fmt.Sprintf("only the newest %d commits read: changes before %s unknown", maxCheckCommits, before))
	}
	return notes
}

func (c *Checker) state(root string) (gitState, error) {
	var st gitState
	data, err := c.store.GetLocal(gitStatePrefix + root)
	if errors.Is(err, storage.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read the git state of %s: %w", root, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return gitState{}, nil // unreadable: read the history anew
	}
	return st, nil
}

func (c *Checker) putState(root string, st gitState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := c.store.PutLocal(gitStatePrefix+root, data); err != nil {
		return fmt.Errorf("write the git state of %s: %w", root, err)
	}
	return nil
}

// gitFiles updates the kept histories of a tree's files as a check reads
// commits, holding the ones it changed until flush writes them.
type gitFiles struct {
	c     *Checker
	root  string
	cache map[string]*fileHistory
	// changed holds the paths changed, renamed or deleted; nil once
	// more than maxChangedPaths.
	changed map[string]bool
}

// fileKey is the local key of a file's history, or "" when the path is
// too long to keep.
func fileKey(root, path string) string {
	k := gitFilePrefix + root + "\x00" + path
	if len(k) > storage.MaxIDLen {
		return ""
	}
	return k
}

func (f *gitFiles) get(path string) (*fileHistory, error) {
	if h, ok := f.cache[path]; ok {
		return h, nil
	}
	h, err := f.c.fileHistory(f.root, path)
	if err != nil {
		return nil, err
	}
	if h == nil {
		h = &fileHistory{}
	}
	f.cache[path] = h
	return h, nil
}

// apply records what commit c did to each file it changed.
func (f *gitFiles) apply(c *gitrepo.Commit) error {
	subject, _ := secrets.Scrub(c.Subject)
	ev := fileEvent{At: c.At.Unix(), Commit: c.Hash, Subject: subject}
	for _, ch := range c.Changes {
		if fileKey(f.root, ch.Path) == "" || (ch.From != "" && fileKey(f.root, ch.From) == "") {
			continue
		}
		h, err := f.get(ch.Path)
		if err != nil {
			return err
		}
		f.noteChanged(ch.Path, ch.From)
		switch ch.Status {
		case 'D':
			gone := ev
			h.Gone = &gone
		case 'R':
			old, err := f.get(ch.From)
			if err != nil {
				return err
			}
			gone := ev
			gone.To = ch.Path
			old.Gone = &gone
			h.Gone = nil
		default:
			h.Gone = nil
			if slices.ContainsFunc(h.Changes, func(e fileEvent) bool { return e.Commit == ev.Commit }) {
				continue // read again after a check that failed half way
			}
			h.Changes = append(h.Changes, ev)
			if len(h.Changes) > MaxFileChanges {
				h.Changes = append(h.Changes[:0], h.Changes[len(h.Changes)-MaxFileChanges:]...)
				h.More = true
			}
		}
	}
	if len(f.cache) >= gitFlushFiles {
		return f.flush()
	}
	return nil
}

// noteChanged adds paths to the changed ones, forgetting them all past
// maxChangedPaths.
func (f *gitFiles) noteChanged(paths ...string) {
	if f.changed == nil {
		return
	}
	for _, p := range paths {
		if p != "" {
			f.changed[p] = true
		}
	}
	if len(f.changed) > maxChangedPaths {
		f.changed = nil
	}
}

// flush writes the histories held and forgets them.
func (f *gitFiles) flush() error {
	for path, h := range f.cache {
		data, err := json.Marshal(h)
		if err != nil {
			return err
		}
		if err := f.c.store.PutLocal(fileKey(f.root, path), data); err != nil {
			return fmt.Errorf("write the history of %s: %w", path, err)
		}
	}
	clear(f.cache)
	return nil
}

// fileHistory reads what the checks know of a file of the tree at root:
// nil when its history holds nothing of it.
func (c *Checker) fileHistory(root, path string) (*fileHistory, error) {
	key := fileKey(root, path)
	if key == "" {
		return nil, nil
	}
	data, err := c.store.GetLocal(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the history of %s: %w", path, err)
	}
	var h fileHistory
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, nil // unreadable: known again after the next full read
	}
	return &h, nil
}

// Queue asks the loop (Run) to check root soon; false when its queue is
// full.
func (c *Checker) Queue(root string) bool {
	select {
	case c.queue <- root:
		return true
	default:
		return false
	}
}

// Run checks every tree of every namespace each interval (never when the
// interval is not positive), and the trees queued by background requests
// (a post-commit hook) as they come, until ctx is done.
func (c *Checker) Run(ctx context.Context, interval time.Duration) {
	t := c.clock.NewTimer(cmp.Or(max(interval, 0), time.Hour))
	if interval <= 0 {
		t.Stop()
	}
	defer t.Stop()
	for {
		var roots []string
		select {
		case <-ctx.Done():
			return
		case root := <-c.queue:
			roots = []string{root}
		case <-t.Chan():
			t.Reset(interval)
			all, err := c.AllTrees()
			if err != nil {
				c.log.Warn("git trees not listed", "err", err)
			}
			for _, t := range all {
				roots = append(roots, t.Root)
			}
		}
		for _, root := range roots {
			res, _, err := c.Check(ctx, root)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				c.log.Warn("git check failed", "root", root, "err", err)
			case res.Commits > 0 || len(res.Notes) > 0:
				c.log.Info("git checked", "root", root, "commits", res.Commits, "files", res.Files, "notes", res.Notes, "took_ms", res.TookMS)
			}
		}
	}
}
