package gitstale

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/gitrepo"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/model"
)

// Bounds of the symbol check.
const (
	// MaxSymbolFile is the largest file searched for a symbol: its size
	// is asked before it is read.
	MaxSymbolFile = 2 << 20
	// maxSymbolReads and maxSymbolBytes bound the files one judge reads
	// (and keeps).
	maxSymbolReads = 4096
	maxSymbolBytes = 64 << 20
	// maxRenames bounds the renames followed from one path.
	maxRenames = 8
)

// linesSuffix is the :LINES of a file artefact (file:PATH:12-40).
var linesSuffix = regexp.MustCompile(`:\d+(?:-\d+)?$`)

// Judge gives the git reasons a memory may no longer hold, against the
// kept histories of its namespace's trees (see Check). It reads each
// namespace's trees and each file's text once, the texts through one
// reader per tree, which Close ends.
type Judge struct {
	c       *Checker
	ctx     context.Context
	trees   map[string][]judgedTree   // by namespace
	texts   map[string][]byte         // root NUL path: text at the checked commit; nil if not searchable
	readers map[string]*gitrepo.Files // by root
	reads   int                       // files read
	read    int64                     // bytes kept
}

// judgedTree is a tree of a namespace with the commit its history was
// read up to.
type judgedTree struct{ root, head string }

// NewJudge returns a judge reading files under ctx.
func (c *Checker) NewJudge(ctx context.Context) *Judge {
	return &Judge{c: c, ctx: ctx, trees: map[string][]judgedTree{}, texts: map[string][]byte{}, readers: map[string]*gitrepo.Files{}}
}

// Close ends the judge's readers of files.
func (j *Judge) Close() {
	for root, r := range j.readers {
		if err := r.Close(); err != nil {
			j.c.log.Debug("git file reader", "root", root, "err", err)
		}
	}
	clear(j.readers)
}

// treesOf returns the trees of ns whose history a check has read.
func (j *Judge) treesOf(ns string) ([]judgedTree, error) {
	if ts, ok := j.trees[ns]; ok {
		return ts, nil
	}
	all, err := j.c.Trees(ns)
	if err != nil {
		return nil, err
	}
	var ts []judgedTree
	for _, t := range all {
		st, err := j.c.state(t.Root)
		if err != nil {
			return nil, err
		}
		if st.Head != "" && !t.Missing {
			ts = append(ts, judgedTree{t.Root, st.Head})
		}
	}
	j.trees[ns] = ts
	return ts, nil
}

// Reasons returns why m may no longer hold by the trees of its
// namespace: a file it names changed, was deleted or renamed since m was
// last updated or confirmed, or a symbol it quotes is in none of the
// files it names any more. edges are the valid edges at m (their file:
// artefacts count as named files). root limits the trees to one ("": all).
func (j *Judge) Reasons(m *model.Memory, edges func() ([]model.Edge, error), root string) ([]Reason, error) {
	files, symbols := touchedCode(m.Touches)
	trees, err := j.treesOf(m.Namespace)
	if err != nil || len(trees) == 0 {
		return nil, err
	}
	es, err := edges()
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		for _, end := range []string{e.From, e.To} {
			if p, ok := strings.CutPrefix(end, "file:"); ok {
				files = append(files, linesSuffix.ReplaceAllString(p, ""))
			}
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	since := m.Provenance.UpdatedAt
	if m.Provenance.ConfirmedAt.After(since) {
		since = m.Provenance.ConfirmedAt
	}
	var out []Reason
	for _, t := range trees {
		if root != "" && t.root != root {
			continue
		}
		var now []string // the files as they are named at the checked commit
		changed := false
		for _, f := range uniqueStrings(files) {
			rel, ok := relativeTo(t.root, f)
			if !ok {
				continue
			}
			rs, at, ch, err := j.follow(t.root, rel, since.Unix())
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
			changed = changed || ch
			if at != "" {
				now = append(now, at)
			}
		}
		if !changed || len(now) == 0 {
			continue // a symbol is judged only in files that changed since
		}
		for _, s := range symbols {
			if found, judged := j.symbolIn(t, now, s); judged && !found {
				reason := fmt.Sprintf("%s no longer in %s", inert.Text(s), shownPaths(now))
				if went := j.movedTo(t, now, s); len(went) > 0 {
					reason += "; now in " + shownPaths(went)
				}
				out = append(out, Reason{api.StaleSymbolGone, reason})
			}
		}
	}
	return out, nil
}

// follow gives the reasons of one file of the tree at root, following its
// renames since the time since (Unix seconds): changes, then a deletion
// or a rename. It returns the path the file has at the checked commit
// ("" when it is deleted or unknown to the history) and whether anything
// happened to it since.
func (j *Judge) follow(root, path string, since int64) (reasons []Reason, at string, changed bool, err error) {
	for range maxRenames {
		h, err := j.c.fileHistory(root, path)
		if err != nil || h == nil {
			return reasons, "", changed, err
		}
		if r, ok := changesSince(path, h, since); ok {
			reasons = append(reasons, r)
			changed = true
		}
		g := h.Gone
		switch {
		case g == nil:
			return reasons, path, changed, nil
		case g.At <= since: // gone before the memory was last confirmed
			return reasons, "", changed, nil
		case g.To == "":
			reasons = append(reasons, Reason{api.StaleFileGone, fmt.Sprintf("%s deleted in %s", inert.Text(path), commitText(g))})
			return reasons, "", true, nil
		}
		reasons = append(reasons, Reason{api.StaleFileGone, fmt.Sprintf("%s renamed to %s in %s", inert.Text(path), inert.Text(g.To), commitText(g))})
		changed, path = true, g.To
	}
	return reasons, path, changed, nil
}

// changesSince says how often a file changed after since, and last how.
// The kept changes are in the order git listed them, which merged
// branches can make other than the order of their times: each is counted
// by its own time.
func changesSince(path string, h *fileHistory, since int64) (Reason, bool) {
	count := 0
	var last *fileEvent
	for i := range h.Changes {
		if e := &h.Changes[i]; e.At > since {
			count++
			last = e
		}
	}
	if count == 0 {
		return Reason{}, false
	}
	times := fmt.Sprintf("%d commits", count)
	switch {
	case count == len(h.Changes) && h.More:
		times = fmt.Sprintf("%d+ commits", count)
	case count == 1:
		times = "1 commit"
	}
	return Reason{api.StaleFileChanged, fmt.Sprintf("%s changed in %s since, last %s", inert.Text(path), times, commitText(last))}, true
}

// commitText shows a commit as its short hash and quoted subject (kept
// scrubbed of secrets).
func commitText(e *fileEvent) string {
	return fmt.Sprintf("%.7s '%s'", e.Commit, inert.Text(e.Subject))
}

func shownPaths(paths []string) string {
	shown := make([]string, len(paths))
	for i, p := range paths {
		shown[i] = inert.Text(p)
	}
	return strings.Join(shown, ", ")
}

// symbolIn reports whether the symbol s (its last name: Commit for
// Store.Commit) is a whole word of one of the files at the tree's checked
// commit; judged is false when no file could be searched (too large,
// binary, unreadable).
func (j *Judge) symbolIn(t judgedTree, paths []string, s string) (found, judged bool) {
	name := symbolName(s)
	for _, p := range paths {
		text := j.text(t, p)
		if text == nil {
			continue
		}
		judged = true
		if containsWord(text, name) {
			return true, true
		}
	}
	return false, judged
}

// text returns a file's text at the tree's checked commit, nil when it
// cannot be searched: larger than MaxSymbolFile (never read), binary, gone,
// or past the judge's reads.
func (j *Judge) text(t judgedTree, path string) []byte {
	key := t.root + "\x00" + path
	if text, ok := j.texts[key]; ok {
		return text
	}
	if j.reads >= maxSymbolReads || j.read >= maxSymbolBytes {
		return nil
	}
	j.reads++
	r, ok := j.readers[t.root]
	if !ok {
		r = gitrepo.NewFiles(j.ctx, t.root, t.head)
		j.readers[t.root] = r
	}
	text, err := r.Read(path, MaxSymbolFile)
	switch {
	case err != nil:
		// Too large, gone, or git failing (the tree deleted, git
		// removed): the symbol is not judged in this file.
		j.c.log.Debug("file not searched for symbols", "root", t.root, "path", path, "err", err)
		text = nil
	case bytes.IndexByte(text[:min(len(text), 8000)], 0) >= 0:
		text = nil // binary, as git judges it
	case text == nil:
		text = []byte{}
	}
	j.texts[key] = text
	j.read += int64(len(text))
	return text
}

// symbolName is the name a symbol is searched by: its last part.
func symbolName(s string) string {
	s = strings.TrimSuffix(s, "()")
	if i := strings.LastIndexAny(s, ".:"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// containsWord reports whether word occurs in text between characters
// that are not part of an identifier. The text needs not be UTF-8.
func containsWord(text []byte, word string) bool {
	if word == "" {
		return false
	}
	w := []byte(word)
	for off := 0; ; {
		i := bytes.Index(text[off:], w)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(w)
		if (start == 0 || !identByte(text[start-1])) && (end == len(text) || !identByte(text[end])) {
			return true
		}
		off = start + 1
	}
}

func identByte(b byte) bool {
	return b == '_' || b == '$' || b >= 0x80 || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
}

// touchedCode splits a memory's touches into the files and the symbols
// it names.
func touchedCode(touches []string) (files, symbols []string) {
	for _, t := range touches {
		if p, ok := strings.CutPrefix(t, "file:"); ok {
			files = append(files, p)
		} else if s, ok := strings.CutPrefix(t, "code:"); ok {
			symbols = append(symbols, s)
		}
	}
	return files, symbols
}

// relativeTo returns path relative to the tree at root: a relative path
// as it is (cleaned, ./ dropped), an absolute one when it lies in the
// tree. Directories, paths that leave the tree and home-relative paths
// are not files of the tree.
func relativeTo(root, path string) (string, bool) {
	if strings.HasSuffix(path, "/") || strings.HasPrefix(path, "~") {
		return "", false
	}
	if filepath.IsAbs(path) {
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return "", false
		}
		path = rel
	}
	path = filepath.ToSlash(filepath.Clean(path))
	if path == "." || path == ".." || strings.HasPrefix(path, "../") {
		return "", false
	}
	return path, true
}

func uniqueStrings(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// maxMovedTo caps the files a stale reason names where a symbol went.
const maxMovedTo = 3

// movedTo returns the files of the tree t, other than those given, that
// the symbol index says define the symbol s and whose text at the checked
// commit names it: where a symbol that left its file went.
func (j *Judge) movedTo(t judgedTree, not []string, s string) []string {
	locs, err := j.c.symbols.Where(strings.TrimSuffix(s, "()"), "")
	if err != nil || len(locs) == 0 {
		locs, err = j.c.symbols.Where(symbolName(s), "")
	}
	if err != nil {
		j.c.log.Debug("symbol index not read", "symbol", s, "err", err)
		return nil
	}
	var out []string
	for _, l := range locs {
		if l.Root != t.root || slices.Contains(not, l.File) || slices.Contains(out, l.File) {
			continue
		}
		if found, _ := j.symbolIn(t, []string{l.File}, s); found {
			out = append(out, l.File)
			if len(out) == maxMovedTo {
				break
			}
		}
	}
	return out
}
