package symbols

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/gitrepo"
)

// Store is where an index keeps its entries: the node's local data
// (storage.Store), never replicated.
type Store interface {
	ScanLocal(prefix string, fn func(key string, value []byte) error) error
	// WriteLocal deletes del, then stores set, in one batch.
	WriteLocal(set map[string][]byte, del []string) error
}

// Limits bound the work of indexing one tree.
type Limits struct {
	// FileSize is the largest file read, in bytes; larger ones are
	// skipped without being read.
	FileSize int64
	// Files is the most source files indexed in a tree.
	Files int
	// Symbols is the most symbols kept for a tree.
	Symbols int
	// Depth is the most directories a file may be under.
	Depth int
}

// DefaultLimits are the limits of an index unless configured.
func DefaultLimits() Limits {
	return Limits{FileSize: 1 << 20, Files: 50_000, Symbols: 1_000_000, Depth: 64}
}

// maxPathLen caps a file's path in the tree: longer paths are skipped
// (their keys would be too long).
const maxPathLen = 512

// walkVisits bounds a walk outside git: it stops after walkVisits times
// Limits.Files entries (files of any kind and directories).
const walkVisits = 20

// flushFiles is how many changed files are written in one batch.
const flushFiles = 256

// skipDirs are directories never indexed: other people's code, build
// output, tools' state and test fixtures.
var skipDirs = map[string]bool{
	".git": true, "vendor": true, "node_modules": true, "third_party": true, "dist": true, "build": true,
	"target": true, "__pycache__": true, ".venv": true, "venv": true, ".tox": true, ".mypy_cache": true,
	".next": true, "bower_components": true, "testdata": true,
}

// Keys of the index in the local keyspace.
const (
	keyTree = "sym/t/" // + tree id: the tree's Tree
	keyFile = "sym/f/" // + tree id + "/" + path: the file's fileEntry
	keyName = "sym/n/" // + lower(name) + "\x00" + tree id + "\x00" + path + "\x00" + line + "\x00" + qualified: nameEntry
)

// Index is the symbol index of the trees indexed on this machine.
type Index struct {
	store  Store
	limits Limits
	// mu serialises updates: two updates of one tree would each write
	// what the other removes.
	mu sync.Mutex
}

// NewIndex returns the index kept in store, bounded by limits (zero
// fields take DefaultLimits').
func NewIndex(store Store, limits Limits) *Index {
	d := DefaultLimits()
	limits.FileSize = cmp.Or(limits.FileSize, d.FileSize)
	limits.Files = cmp.Or(limits.Files, d.Files)
	limits.Symbols = cmp.Or(limits.Symbols, d.Symbols)
	limits.Depth = cmp.Or(limits.Depth, d.Depth)
	return &Index{store: store, limits: limits}
}

// Types the index answers with.
type (
	Tree     = api.SymbolTree
	Report   = api.SymbolsReport
	Skipped  = api.SymbolsSkipped
	Progress = api.SymbolsProgress
	Location = api.SymbolLocation
)

// fileEntry is what the index keeps of a file.
type fileEntry struct {
	Hash    string   `json:"h"`
	Size    int64    `json:"z"`
	ModTime int64    `json:"m"` // unix nanoseconds: an unchanged size and time skip the hash
	Symbols []Symbol `json:"s,omitempty"`
}

// nameEntry is the value of a name key.
type nameEntry struct {
	Name string `json:"n"`
	Qual string `json:"q,omitempty"`
	Kind string `json:"k"`
}

// ErrNotDir means the directory to index is not one.
var ErrNotDir = errors.New("symbols: not a directory")

// TreeRoot returns the tree a directory belongs to: the top of its git
// working tree, or the directory itself outside git.
func TreeRoot(ctx context.Context, dir string) (root string, git bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", false, err
	}
	if !fi.IsDir() {
		return "", false, fmt.Errorf("%s: %w", dir, ErrNotDir)
	}
	root, err = gitrepo.Root(ctx, abs)
	switch {
	case err == nil:
		return filepath.Clean(root), true, nil
	case errors.Is(err, gitrepo.ErrNotRepo) || errors.Is(err, gitrepo.ErrNoGit):
		return abs, false, nil
	default:
		return "", false, err
	}
}

// treeID names a tree in the keys: a hash of its root.
func treeID(root string) string {
	h := sha256.Sum256([]byte(root))
	return hex.EncodeToString(h[:8])
}

// Update indexes the tree that holds dir for namespace ns: files new or
// changed since the last update are parsed, files gone are dropped.
// progress, when set, is called as files are looked at.
func (ix *Index) Update(ctx context.Context, dir, ns string, progress func(Progress)) (Report, error) {
	start := time.Now()
	root, git, err := TreeRoot(ctx, dir)
	if err != nil {
		return Report{}, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	rep := Report{SymbolTree: Tree{Root: root, Namespace: ns}}
	var files []string
	if git {
		files, err = ix.gitFiles(ctx, root, &rep)
	} else {
		files, err = ix.walkFiles(ctx, root, &rep)
	}
	if err != nil {
		return Report{}, fmt.Errorf("list the files of %s: %w", root, err)
	}
	if len(files) > ix.limits.Files {
		rep.Skipped.OverCap += len(files) - ix.limits.Files
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s has %d source files; indexed the first %d (the limit of files per tree)", root, len(files), ix.limits.Files))
		files = files[:ix.limits.Files]
	}
	id := treeID(root)
	old := map[string]fileEntry{}
	err = ix.store.ScanLocal(keyFile+id+"/", func(k string, v []byte) error {
		var e fileEntry
		if json.Unmarshal(v, &e) == nil {
			old[strings.TrimPrefix(k, keyFile+id+"/")] = e
		}
		return nil
	})
	if err != nil {
		return Report{}, err
	}
	w := &treeWriter{ix: ix, id: id, old: old, set: map[string][]byte{}}
	total := 0
	for i := 0; i < len(files); i += flushFiles {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		chunk := files[i:min(i+flushFiles, len(files))]
		for j, r := range ix.readChunk(ctx, root, chunk, w.old) {
			switch {
			case r.skip != skipNone:
				r.skip.count(&rep.Skipped)
				continue
			case r.err != nil:
				rep.Skipped.Errors++
				if len(rep.Warnings) < 20 {
					rep.Warnings = append(rep.Warnings, r.err.Error())
				}
				continue
			}
			if total+len(r.entry.Symbols) > ix.limits.Symbols {
				rep.Skipped.OverCap++
				if w.capped == 0 {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s has more than %d symbols (the limit per tree); files from %s on are left out", root, ix.limits.Symbols, chunk[j]))
				}
				w.capped++
				continue
			}
			total += len(r.entry.Symbols)
			rep.Files++
			if r.parsed {
				rep.Parsed++
			}
			w.keep(chunk[j], r.entry, r.parsed || r.touched)
		}
		if err := w.flush(); err != nil {
			return Report{}, err
		}
		if progress != nil {
			progress(Progress{Done: i + len(chunk), Total: len(files), Parsed: rep.Parsed})
		}
	}
	rep.Removed = len(w.old)
	for path, e := range w.old {
		w.drop(path, e)
	}
	rep.Symbols = total
	rep.IndexedAt = time.Now().UTC()
	rep.TookMS = float64(time.Since(start).Microseconds()) / 1000
	meta, err := json.Marshal(rep.SymbolTree)
	if err != nil {
		return Report{}, err
	}
	w.set[keyTree+id] = meta
	if err := w.flush(); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// gitFiles lists the tree's source files that git tracks or would (not
// ignored), less those under skipped directories.
func (ix *Index) gitFiles(ctx context.Context, root string, rep *Report) ([]string, error) {
	out, err := gitrepo.Run(ctx, root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p == "" || Language(p) == "" {
			continue
		}
		if i := len(files); i > 0 && files[i-1] == p { // listed once per merge stage
			continue
		}
		if ix.skipPath(p) {
			rep.Skipped.Special++
			continue
		}
		if !underSkipped(p) {
			files = append(files, p)
		}
	}
	return files, nil
}

// walkFiles lists the source files under root outside git, without
// following symlinks (so no loop), skipping hidden and skipped
// directories.
func (ix *Index) walkFiles(ctx context.Context, root string, rep *Report) ([]string, error) {
	var files []string
	visits, maxVisits := 0, walkVisits*ix.limits.Files
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if visits++; visits > maxVisits {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s holds more than %d files and directories; the walk stopped there (index a smaller directory, or a git working tree)", root, maxVisits))
			return fs.SkipAll
		}
		if err != nil {
			if p == root {
				return err
			}
			rep.Skipped.Errors++
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".") || strings.Count(rel, "/") >= ix.limits.Depth) {
				return filepath.SkipDir
			}
			return nil
		}
		if Language(rel) == "" {
			return nil
		}
		if !d.Type().IsRegular() || ix.skipPath(rel) {
			rep.Skipped.Special++
			return nil
		}
		files = append(files, rel)
		return nil
	})
	return files, err
}

// skipPath reports whether a path is too long or too deep to index.
func (ix *Index) skipPath(p string) bool {
	return len(p) > maxPathLen || strings.Count(p, "/") > ix.limits.Depth || strings.ContainsAny(p, "\x00\n\r")
}

// underSkipped reports whether a path is under a directory never indexed.
func underSkipped(p string) bool {
	dirs := strings.Split(p, "/")
	for _, d := range dirs[:len(dirs)-1] {
		if skipDirs[d] {
			return true
		}
	}
	return false
}

// readResult is what reading one file gave.
type readResult struct {
	entry   fileEntry
	parsed  bool // parsed now: new or changed content
	touched bool // same content, new size or time to record
	skip    skipReason
	err     error
}

// skipReason is why a file was left out.
type skipReason int

const (
	skipNone skipReason = iota
	skipGone
	skipSpecial
	skipLarge
	skipBinary
)

// count adds a skipped file to its count in s.
func (r skipReason) count(s *Skipped) {
	switch r {
	case skipSpecial:
		s.Special++
	case skipLarge:
		s.Large++
	case skipBinary:
		s.Binary++
	}
}

// readChunk reads, hashes and (when changed) parses a chunk of files on
// every core.
func (ix *Index) readChunk(ctx context.Context, root string, paths []string, old map[string]fileEntry) []readResult {
	out := make([]readResult, len(paths))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := NewParser()
			defer p.Close()
			for {
				next.Lock()
				j := i
				i++
				next.Unlock()
				if j >= len(paths) {
					return
				}
				prev, had := old[paths[j]]
				out[j] = ix.readFile(ctx, p, root, paths[j], prev, had)
			}
		}()
	}
	wg.Wait()
	return out
}

// readFile reads one file: a file whose size and time are those indexed
// is not read; one whose content hash is that indexed is not parsed. A
// file is read up to Limits.FileSize, whatever its size said.
func (ix *Index) readFile(ctx context.Context, p *Parser, root, rel string, prev fileEntry, had bool) readResult {
	full := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist): // listed by git, deleted since
		return readResult{skip: skipGone}
	case err != nil:
		return readResult{err: err}
	case !fi.Mode().IsRegular():
		return readResult{skip: skipSpecial}
	case fi.Size() > ix.limits.FileSize:
		return readResult{skip: skipLarge}
	}
	e := fileEntry{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
	if had && prev.Size == e.Size && prev.ModTime == e.ModTime {
		return readResult{entry: prev}
	}
	// Opened without blocking, and checked again once open: a file
	// replaced by a FIFO since the Lstat must not hang the read.
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return readResult{err: err}
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return readResult{skip: skipSpecial}
	}
	src, err := io.ReadAll(io.LimitReader(f, ix.limits.FileSize+1))
	f.Close()
	switch {
	case err != nil:
		return readResult{err: fmt.Errorf("read %s: %w", rel, err)}
	case int64(len(src)) > ix.limits.FileSize: // grew since the stat
		return readResult{skip: skipLarge}
	case bytes.IndexByte(src, 0) >= 0 || !utf8.Valid(src):
		return readResult{skip: skipBinary}
	}
	sum := sha256.Sum256(src)
	e.Hash = hex.EncodeToString(sum[:16])
	if had && prev.Hash == e.Hash {
		e.Symbols = prev.Symbols
		return readResult{entry: e, touched: true}
	}
	syms, err := p.Parse(ctx, rel, src)
	if err != nil {
		return readResult{err: err}
	}
	e.Symbols = syms
	return readResult{entry: e, parsed: true}
}

// treeWriter gathers one tree's changes into batches.
type treeWriter struct {
	ix     *Index
	id     string
	old    map[string]fileEntry // entries not yet seen in this update
	set    map[string][]byte
	del    []string
	capped int
}

// keep records that path holds e; changed says whether to write it.
func (w *treeWriter) keep(path string, e fileEntry, changed bool) {
	prev, had := w.old[path]
	delete(w.old, path)
	if !changed && had {
		return
	}
	if had {
		w.del = append(w.del, nameKeys(w.id, path, prev.Symbols)...)
	}
	data, _ := json.Marshal(e)
	w.set[keyFile+w.id+"/"+path] = data
	for _, s := range e.Symbols {
		v, _ := json.Marshal(nameEntry{Name: s.Name, Qual: s.Qual, Kind: s.Kind})
		for _, k := range nameKeys(w.id, path, []Symbol{s}) {
			w.set[k] = v
		}
	}
}

// drop removes a file's entry and its names.
func (w *treeWriter) drop(path string, e fileEntry) {
	w.del = append(w.del, keyFile+w.id+"/"+path)
	w.del = append(w.del, nameKeys(w.id, path, e.Symbols)...)
}

// flush writes what was gathered.
func (w *treeWriter) flush() error {
	if len(w.set) == 0 && len(w.del) == 0 {
		return nil
	}
	err := w.ix.store.WriteLocal(w.set, w.del)
	w.set, w.del = map[string][]byte{}, nil
	return err
}

// nameKeys are the name keys of a file's symbols: one by name, and one
// by qualified name when it differs.
func nameKeys(id, path string, syms []Symbol) []string {
	var keys []string
	for _, s := range syms {
		suffix := "\x00" + id + "\x00" + path + "\x00" + fmt.Sprintf("%08d", s.Line) + "\x00" + s.Qualified()
		keys = append(keys, keyName+strings.ToLower(s.Name)+suffix)
		if s.Qual != "" {
			keys = append(keys, keyName+strings.ToLower(s.Qual)+suffix)
		}
	}
	return keys
}

// Trees lists the indexed trees.
func (ix *Index) Trees() ([]Tree, error) {
	var out []Tree
	err := ix.store.ScanLocal(keyTree, func(_ string, v []byte) error {
		var t Tree
		if json.Unmarshal(v, &t) == nil {
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// Known reports whether root is an indexed tree's root.
func (ix *Index) Known(root string) bool {
	found := false
	ix.store.ScanLocal(keyTree+treeID(root), func(string, []byte) error {
		found = true
		return errStop
	})
	return found
}

// Drop removes a tree (by its root) from the index.
func (ix *Index) Drop(root string) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	id := treeID(root)
	var del []string
	err := ix.store.ScanLocal(keyFile+id+"/", func(k string, v []byte) error {
		var e fileEntry
		if json.Unmarshal(v, &e) == nil {
			del = append(del, nameKeys(id, strings.TrimPrefix(k, keyFile+id+"/"), e.Symbols)...)
		}
		del = append(del, k)
		return nil
	})
	if err != nil {
		return err
	}
	return ix.store.WriteLocal(nil, append(del, keyTree+id))
}

// MaxQueryLen caps a lookup's query in bytes.
const MaxQueryLen = 256

// Find returns the symbols whose name or qualified name starts with
// query, ignoring case: first those whose name or qualified name is the
// query, then the others in name order, at most limit. ns, when set,
// keeps the trees of that namespace only.
func (ix *Index) Find(query, ns string, limit int) ([]Location, error) {
	q := strings.ToLower(strings.TrimSpace(query))
	if q == "" || len(q) > MaxQueryLen || strings.ContainsAny(q, "\x00\n") {
		return nil, fmt.Errorf("symbols: query %q: give a name or the start of one (at most %d bytes, one line)", api.Echo(query), MaxQueryLen)
	}
	trees, err := ix.treesByID()
	if err != nil {
		return nil, err
	}
	var out []Location
	seen := map[string]bool{}
	scan := func(prefix string) error {
		return ix.store.ScanLocal(keyName+prefix, func(k string, v []byte) error {
			if len(out) >= limit {
				return errStop
			}
			loc, ok := decodeName(k, v, trees)
			if !ok || (ns != "" && loc.Namespace != ns) {
				return nil
			}
			at := loc.Root + "\x00" + loc.File + "\x00" + strconv.Itoa(loc.Line) + "\x00" + loc.Qualified()
			if !seen[at] {
				seen[at] = true
				out = append(out, loc)
			}
			return nil
		})
	}
	for _, prefix := range []string{q + "\x00", q} {
		if err := scan(prefix); err != nil && !errors.Is(err, errStop) {
			return nil, err
		}
	}
	return out, nil
}

// Where returns where a symbol is defined: those whose name or qualified
// name is exactly name, in every indexed tree (of namespace ns, when
// set).
func (ix *Index) Where(name, ns string) ([]Location, error) {
	locs, err := ix.Find(name, ns, maxWhere)
	if err != nil {
		return nil, err
	}
	var out []Location
	for _, l := range locs {
		if l.Name == name || l.Qualified() == name {
			out = append(out, l)
		}
	}
	return out, nil
}

// maxWhere caps the definitions Where returns of one name.
const maxWhere = 100

// errStop ends a scan early.
var errStop = errors.New("stop")

// treesByID returns the indexed trees by their id.
func (ix *Index) treesByID() (map[string]Tree, error) {
	trees, err := ix.Trees()
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Tree, len(trees))
	for _, t := range trees {
		byID[treeID(t.Root)] = t
	}
	return byID, nil
}

// decodeName reads a name key and its value into a location.
func decodeName(k string, v []byte, trees map[string]Tree) (Location, bool) {
	parts := strings.Split(strings.TrimPrefix(k, keyName), "\x00")
	if len(parts) != 5 {
		return Location{}, false
	}
	var e nameEntry
	line, err := strconv.Atoi(parts[3])
	t, ok := trees[parts[1]]
	if err != nil || !ok || json.Unmarshal(v, &e) != nil {
		return Location{}, false
	}
	return Location{
		Symbol: Symbol{Name: e.Name, Qual: e.Qual, Kind: e.Kind, Line: line},
		File:   parts[2], Root: t.Root, Namespace: t.Namespace,
	}, true
}
