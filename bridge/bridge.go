package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/model"
)

// Claude Code's conventions for an auto-memory directory.
const (
	// IndexFile is the directory's index, loaded at every session start.
	IndexFile = "MEMORY.md"
	// IndexLines and IndexBytes are how much of IndexFile Claude Code
	// loads: the first 200 lines or 25 KB, whichever comes first.
	IndexLines = 200
	IndexBytes = 25_000
	// OverflowFile is the topic file the bridge writes what does not fit
	// in the index into (linked from it).
	OverflowFile = "memmesh.md"
	// MaxEntryBytes is the longest memory written into a file; a longer
	// one (a document rather than a note) is left out, and said so.
	MaxEntryBytes = 8 << 10
	// MaxTopicBytes bounds a topic file the bridge writes, well within
	// what it reads (MaxFileBytes).
	MaxTopicBytes = 512 << 10
)

// What the bridge writes into memories.
const (
	// Tag marks the memories of auto memory, and those meant for it.
	Tag = "claude-auto-memory"
	// Agent is the provenance agent of the memories the bridge makes.
	Agent = "claude-code auto memory"
)

// Service is what the bridge needs of a node; *node.Node and *web.Client
// implement it.
type Service interface {
	List(ctx context.Context, req api.ListRequest) ([]api.Memory, error)
	Remember(ctx context.Context, req api.RememberRequest) (api.RememberResult, error)
	Update(ctx context.Context, ref string, req api.UpdateRequest) (api.Memory, error)
}

// Config says where the bridge finds Claude Code and keeps its own files.
type Config struct {
	// ClaudeHome is Claude Code's folder, ~/.claude.
	ClaudeHome string
	// StateDir holds the bridge's state and the backups of the files it
	// replaced ($MEMMESH_HOME/bridge).
	StateDir string
	// Namespace names the namespace of a project from its working
	// directory and its git remote ("" when none applies).
	Namespace func(path, remote string) string
	Logger    *slog.Logger
}

// Bridge mirrors Claude Code's auto memory and namespaces.
type Bridge struct {
	cfg Config
	log *slog.Logger
}

// New returns a bridge with cfg.
func New(cfg Config) *Bridge {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bridge{cfg: cfg, log: log}
}

// Options of one pass.
type Options struct {
	// Project limits the pass to the project of this directory.
	Project string
	// DryRun reports what the pass would do and changes nothing.
	DryRun bool
}

// ProjectReport is what a pass did in one project.
type ProjectReport struct {
	Project
	Imported  int      `json:"imported"`  // memories made from new entries
	Updated   int      `json:"updated"`   // memories changed by edited entries
	Archived  int      `json:"archived"`  // memories whose entry was deleted
	Written   []string `json:"written"`   // files written (or, dry, that would be)
	Conflicts int      `json:"conflicts"` // memories of auto memory with a sync conflict
	Problems  []string `json:"problems"`  // files left alone, and why
}

// List returns the projects of this machine and where each goes.
func (b *Bridge) List(ctx context.Context, dir string) ([]Project, error) {
	ps, err := b.projects(ctx, dir)
	for i := range ps {
		b.disabled(&ps[i])
	}
	return ps, err
}

// Run mirrors every project (or the one of opts.Project) in both
// directions once.
func (b *Bridge) Run(ctx context.Context, svc Service, opts Options) ([]ProjectReport, error) {
	unlock, err := lock(b.cfg.StateDir, time.Minute)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := loadState(b.cfg.StateDir)
	if err != nil {
		return nil, err
	}
	ps, err := b.projects(ctx, opts.Project)
	if err != nil {
		return nil, err
	}
	reps := []ProjectReport{}
	var errs []error
	for _, p := range ps {
		b.disabled(&p)
		rep := ProjectReport{Project: p, Written: []string{}, Problems: []string{}}
		if p.Skipped == "" {
			if err := b.mirror(ctx, svc, st, &rep, opts.DryRun); err != nil {
				if ctx.Err() != nil {
					return reps, ctx.Err()
				}
				errs = append(errs, fmt.Errorf("project %s: %w", p.Path, err))
				rep.Problems = append(rep.Problems, err.Error())
			}
		}
		reps = append(reps, rep)
	}
	if !opts.DryRun {
		if err := saveState(b.cfg.StateDir, st); err != nil {
			errs = append(errs, fmt.Errorf("save the bridge's state: %w", err))
		}
	}
	return reps, errors.Join(errs...)
}

// disabled marks p skipped when the user turned Claude Code's auto memory
// off (CLAUDE_CODE_DISABLE_AUTO_MEMORY, autoMemoryEnabled false) or moved
// it (autoMemoryDirectory), which the bridge does not follow.
func (b *Bridge) disabled(p *Project) {
	if p.Skipped != "" {
		return
	}
	if v := os.Getenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY"); v != "" && v != "0" && v != "false" {
		p.Skipped = "auto memory is off (CLAUDE_CODE_DISABLE_AUTO_MEMORY is set)"
		return
	}
	var settings struct {
		Enabled   *bool  `json:"autoMemoryEnabled"`
		Directory string `json:"autoMemoryDirectory"`
	}
	data, err := os.ReadFile(filepath.Join(b.cfg.ClaudeHome, "settings.json"))
	if err != nil || len(data) > MaxFileBytes || json.Unmarshal(data, &settings) != nil {
		return
	}
	switch {
	case settings.Enabled != nil && !*settings.Enabled:
		p.Skipped = "auto memory is off (autoMemoryEnabled is false in ~/.claude/settings.json)"
	case settings.Directory != "":
		p.Skipped = "auto memory is kept in autoMemoryDirectory (" + settings.Directory + "), which the bridge does not mirror"
	}
}

// maxMemories bounds the memories of a namespace the bridge mirrors.
const maxMemories = 1000

// listMemories returns the namespace's memories of auto memory by id,
// archived and deleted ones included (their entries leave the files).
func listMemories(ctx context.Context, svc Service, ns string) (map[string]api.Memory, error) {
	ms, err := svc.List(ctx, api.ListRequest{Namespace: ns, Tags: []string{Tag}, Limit: maxMemories,
		Statuses: []model.Status{model.StatusActive, model.StatusStale, model.StatusArchived, model.StatusDeleted, model.StatusCompacted}})
	if err != nil {
		return nil, fmt.Errorf("list the namespace's auto memory: %w", err)
	}
	out := make(map[string]api.Memory, len(ms))
	for _, m := range ms {
		out[m.ID] = m
	}
	return out, nil
}

func live(m api.Memory) bool {
	return m.Status == model.StatusActive || m.Status == model.StatusStale
}

// view is what of a memory a file shows: its content and the other
// versions of a sync conflict.
func view(m api.Memory) string {
	return strings.Join(append([]string{m.Content}, others(m)...), "\x00")
}

// others are the texts of a memory's conflicting versions but the current.
func others(m api.Memory) []string {
	var out []string
	for _, r := range m.Conflict {
		if r.Text != m.Content && !slices.Contains(out, r.Text) {
			out = append(out, r.Text)
		}
	}
	slices.Sort(out)
	return out
}

// currentRev is the id of the revision whose text is a memory's content:
// the newest leaf that holds it.
func currentRev(m api.Memory) string {
	built := map[string]bool{}
	for _, r := range m.Revisions {
		built[r.Parent] = true
		for _, id := range r.Merges {
			built[id] = true
		}
	}
	for _, r := range slices.Backward(m.Revisions) {
		if !built[r.ID] && r.Text == m.Content {
			return r.ID
		}
	}
	return ""
}

// local is a file of the memory directory as this pass found it.
type local struct {
	memFile
	f      *mdFile
	ids    []string // per entry: its memory
	edited []bool   // per entry: changed here since the last pass
	gone   []string // memories whose entries were deleted from it
	prev   *fileState
}

// mirror runs one pass over a project: the files' edits into the
// namespace, then the namespace into the files.
func (b *Bridge) mirror(ctx context.Context, svc Service, st *state, rep *ProjectReport, dry bool) error {
	p := rep.Project
	mems, err := listMemories(ctx, svc, p.Namespace)
	if err != nil {
		return err
	}
	files, err := readDir(p.MemoryDir)
	if err != nil {
		return fmt.Errorf("read %s: %w", p.MemoryDir, err)
	}
	var locals []*local
	changed, skipped := false, map[string]bool{}
	for _, mf := range files {
		if mf.Skip != "" {
			rep.Problems = append(rep.Problems, mf.Name+": "+mf.Skip)
			skipped[mf.Name] = true
			continue
		}
		l := &local{memFile: mf, f: parse(mf.Text), prev: st.Files[filepath.Join(p.MemoryDir, mf.Name)]}
		if l.prev == nil {
			l.prev = &fileState{}
		}
		l.ids, l.edited = assign(l.f.entries, l.prev.Entries), make([]bool, len(l.f.entries))
		if hashText(mf.Text) != l.prev.Hash {
			n, err := b.importEdits(ctx, svc, p, l, mems, rep, dry)
			if err != nil {
				return err
			}
			changed = changed || n > 0
		}
		locals = append(locals, l)
	}
	n, err := archiveGone(ctx, svc, locals, rep, dry)
	if err != nil {
		return err
	}
	changed = changed || n > 0
	if changed && !dry {
		if mems, err = listMemories(ctx, svc, p.Namespace); err != nil {
			return err
		}
	}
	for _, m := range mems {
		if live(m) && len(others(m)) > 0 {
			rep.Conflicts++
		}
	}
	return b.writeBack(p, st, locals, skipped, mems, rep, dry)
}

// assign finds each entry's memory: a managed entry's from its marker,
// the others' from the state, first by the same text, then in order
// among the user's entries (an edited line keeps its memory; a new line is
// never taken for an entry of the managed part that was deleted).
func assign(es []entry, prev []stateEntry) []string {
	ids := make([]string, len(es))
	used := make([]bool, len(prev))
	for i, e := range es {
		if e.ID != "" {
			ids[i] = e.ID
			for j, p := range prev {
				if p.ID == e.ID {
					used[j] = true
				}
			}
		}
	}
	for i, e := range es {
		if ids[i] != "" {
			continue
		}
		for j, p := range prev {
			if !used[j] && p.Local == e.Text {
				ids[i], used[j] = p.ID, true
				break
			}
		}
	}
	j := 0
	for i := range es {
		if ids[i] != "" || es[i].Managed {
			continue
		}
		for j < len(prev) && (used[j] || prev[j].Managed) {
			j++
		}
		if j == len(prev) {
			break
		}
		ids[i], used[j] = prev[j].ID, true
	}
	return ids
}

// importEdits turns what changed in a file since the last pass into
// memory changes: new entries become memories, edited ones revise
// theirs, and deleted ones are noted in l.gone (archiveGone archives
// them). It returns how many changes it made.
func (b *Bridge) importEdits(ctx context.Context, svc Service, p Project, l *local, mems map[string]api.Memory, rep *ProjectReport, dry bool) (int, error) {
	before, base := map[string]string{}, map[string]string{}
	for _, e := range l.prev.Entries {
		before[e.ID], base[e.ID] = e.Local, e.Rev
	}
	n := 0
	for i, e := range l.f.entries {
		text, _ := secrets.Scrub(e.Text)
		old, known := before[l.ids[i]]
		m, exists := mems[l.ids[i]]
		switch {
		case known && old == e.Text && (!exists || live(m)):
			// unchanged here
		case l.ids[i] == "" || !exists || m.Status == model.StatusDeleted:
			// new, or its memory was erased or deleted: a memory anew
			l.edited[i] = true
			rep.Imported++
			n++
			if dry {
				continue
			}
			res, err := svc.Remember(ctx, api.RememberRequest{Namespace: p.Namespace, Content: text, Tags: []string{Tag},
				Tier: model.TierAgent, TTL: "none", Agent: Agent, Session: source(p.Remote, l.Name)})
			if err != nil {
				return n, fmt.Errorf("%s: entry at line %d: %w", l.Name, e.start+1, err)
			}
			l.ids[i] = res.ID
			if res.DuplicateOf != "" && !slices.Contains(mems[res.ID].Tags, Tag) {
				// the same text was in the namespace already: it is auto
				// memory's now too
				if _, err := svc.Update(ctx, res.ID, api.UpdateRequest{AddTags: []string{Tag}}); err != nil {
					return n, fmt.Errorf("%s: entry at line %d: %w", l.Name, e.start+1, err)
				}
			}
		case m.Content == text && live(m):
			// the file already says what the memory says
		default:
			l.edited[i] = true
			rep.Updated++
			n++
			if dry {
				continue
			}
			// Made from what the file showed: if the memory changed
			// elsewhere since, the two edits are a sync conflict.
			req := api.UpdateRequest{Content: &text, Base: base[l.ids[i]], Agent: Agent}
			if !live(m) { // archived or compacted: brought back by writing it again
				active := model.StatusActive
				req.Status = &active
			}
			if _, err := svc.Update(ctx, l.ids[i], req); err != nil {
				return n, fmt.Errorf("%s: entry at line %d: %w", l.Name, e.start+1, err)
			}
		}
	}
	for _, e := range l.prev.Entries {
		m, ok := mems[e.ID]
		if slices.Contains(l.ids, e.ID) || !ok || !live(m) {
			continue
		}
		if e.Managed && l.f.begin < 0 {
			// The managed part is gone whole (a rewrite of the file
			// that dropped it): it is written again, and its memories
			// stay. Deleting its entries forgets them.
			continue
		}
		l.gone = append(l.gone, e.ID)
	}
	return n, nil
}

// archiveGone archives the memories whose entries were deleted, but
// those an entry of another file holds (an entry moved between files).
func archiveGone(ctx context.Context, svc Service, locals []*local, rep *ProjectReport, dry bool) (int, error) {
	held := map[string]bool{}
	for _, l := range locals {
		for _, id := range l.ids {
			held[id] = true
		}
	}
	n := 0
	for _, l := range locals {
		for _, id := range l.gone {
			if held[id] {
				continue
			}
			held[id] = true
			rep.Archived++
			n++
			if dry {
				continue
			}
			archived := model.StatusArchived
			if _, err := svc.Update(ctx, id, api.UpdateRequest{Status: &archived}); err != nil {
				return n, fmt.Errorf("%s: archive the memory of a deleted entry: %w", l.Name, err)
			}
		}
	}
	return n, nil
}

// source is the provenance session of a memory from a file: the
// project's remote and the file's name.
func source(remote, name string) string { return remote + "#" + name }

// fileOf is the file a memory goes in: the one it came from, or the
// index.
func fileOf(m api.Memory) string {
	_, name, ok := strings.Cut(m.Provenance.Session, "#")
	if !ok || m.Provenance.Agent != Agent || !validName(name) {
		return IndexFile
	}
	return name
}

// validName accepts the plain Markdown file names of a memory directory.
func validName(name string) bool {
	return strings.HasSuffix(name, ".md") && len(name) <= 100 && !strings.HasPrefix(name, ".") &&
		!strings.ContainsAny(name, "/\\\x00") && filepath.Base(name) == name
}

// importance orders memories for the index's room: trust, confidence,
// then the newest.
func importance(a, b api.Memory) int {
	rank := map[model.Tier]int{model.TierHuman: 0, model.TierAgent: 1, model.TierAuto: 2}
	return cmp.Or(cmp.Compare(rank[a.Tier], rank[b.Tier]), cmp.Compare(b.Confidence, a.Confidence),
		b.Provenance.UpdatedAt.Compare(a.Provenance.UpdatedAt), strings.Compare(a.ID, b.ID))
}

// writeBack writes the namespace's view into the files: the user's part
// of each file with the entries the namespace changed, and the managed
// part with the memories no file of this directory holds.
func (b *Bridge) writeBack(p Project, st *state, locals []*local, skipped map[string]bool, mems map[string]api.Memory, rep *ProjectReport, dry bool) error {
	held := map[string]bool{}
	byName := map[string]*local{}
	for _, l := range locals {
		byName[l.Name] = l
		for i, id := range l.ids {
			if !l.f.entries[i].Managed {
				held[id] = true
			}
		}
	}
	for name := range skipped { // a file left alone is neither written nor given more
		byName[name] = nil
	}
	targets := map[string][]api.Memory{}
	long := 0
	for _, m := range mems {
		switch {
		case !live(m) || held[m.ID]:
		case len(m.Content) > MaxEntryBytes:
			long++
		default:
			targets[fileOf(m)] = append(targets[fileOf(m)], m)
		}
	}
	if long > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d memories of over %d bytes left out of the files (memmesh search finds them)", long, MaxEntryBytes))
	}
	// The index first: what does not fit overflows into OverflowFile.
	names := []string{IndexFile}
	for name := range targets {
		if name != IndexFile {
			names = append(names, name)
		}
	}
	for _, l := range locals {
		if !slices.Contains(names, l.Name) {
			names = append(names, l.Name)
		}
	}
	slices.Sort(names[1:])
	var links []string
	for _, name := range names[1:] {
		if len(targets[name]) > 0 {
			links = append(links, name)
		}
	}
	for i := 0; i < len(names); i++ { // the index may add OverflowFile
		name := names[i]
		l, ok := byName[name]
		if ok && l == nil {
			continue // left alone
		}
		if l == nil {
			l = &local{memFile: memFile{Name: name}, f: parse(""), prev: &fileState{}}
		}
		ms := targets[name]
		slices.SortFunc(ms, importance)
		var idx []string
		if name == IndexFile {
			var overflow []api.Memory
			ms, overflow = fitIndex(l, ms, links)
			if len(overflow) > 0 {
				targets[OverflowFile] = append(overflow, targets[OverflowFile]...)
				if !slices.Contains(names, OverflowFile) {
					names = append(names, OverflowFile)
				}
				links = append(links, OverflowFile)
			}
			idx = indexLines(l, links)
		} else if fit, rest := fitBytes(l, ms); len(rest) > 0 {
			ms = fit
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %d memories left out, over the %d bytes the bridge writes in a topic file", name, len(rest), MaxTopicBytes))
		}
		text, ids := render(l, ms, mems, idx)
		if text == l.Text && (l.Mode == 0 || hashText(text) == l.prev.Hash) {
			continue // nothing to write, nothing new to note
		}
		if text != l.Text {
			rep.Written = append(rep.Written, name)
			if !dry {
				if err := writeMemFile(p.MemoryDir, name, text, filepath.Join(b.cfg.StateDir, "backups")); err != nil {
					rep.Problems = append(rep.Problems, err.Error())
					continue
				}
			}
		}
		if dry {
			continue
		}
		fs := &fileState{Hash: hashText(text)}
		nf := parse(text)
		if len(ids) != len(nf.entries) { // cannot happen: render writes what parse reads
			b.log.Warn("bridge: a written file reads back with other entries; its next pass reads it as edited", "file", filepath.Join(p.MemoryDir, name))
			ids = assign(nf.entries, nil)
		}
		for i, e := range nf.entries {
			if e.ID != "" {
				ids[i] = e.ID
			}
			if ids[i] == "" {
				continue
			}
			se := stateEntry{ID: ids[i], Local: e.Text, Managed: e.Managed}
			if m, ok := mems[ids[i]]; ok {
				se.Synced, se.Rev = view(m), currentRev(m)
			}
			fs.Entries = append(fs.Entries, se)
		}
		st.Files[filepath.Join(p.MemoryDir, name)] = fs
	}
	return nil
}

// fitIndex splits the index's memories into those that fit within
// Claude Code's limits after the user's part of the file, and the rest.
func fitIndex(l *local, ms []api.Memory, links []string) (fit, rest []api.Memory) {
	lines, size := 0, 0
	for _, line := range l.f.userLines() {
		lines++
		size += len(line) + 1
	}
	// the block's markers and blank line, its links and one to the overflow
	lines += 3 + len(links) + 1
	size += len(beginLine) + len(endMark) + 3 + 80*(len(links)+1)
	for i, m := range ms {
		r := renderEntry("- ", inert.Text(m.Content), m.ID, others(m))
		n := 0
		for _, s := range r {
			n += len(s) + 1
		}
		if lines+len(r) > IndexLines || size+n > IndexBytes {
			return ms[:i], ms[i:]
		}
		lines, size = lines+len(r), size+n
	}
	return ms, nil
}

// fitBytes splits a topic file's memories into those that fit within
// MaxTopicBytes with the user's part, and the rest.
func fitBytes(l *local, ms []api.Memory) (fit, rest []api.Memory) {
	size := len(beginLine) + len(endMark) + 2
	for _, line := range l.f.userLines() {
		size += len(line) + 1
	}
	for i, m := range ms {
		if size += len(m.Content) + 40; size > MaxTopicBytes {
			return ms[:i], ms[i:]
		}
	}
	return ms, nil
}

// indexLines are the managed links of the index to the topic files the
// bridge writes, but those the user's part links already.
func indexLines(l *local, links []string) []string {
	var out []string
	user := strings.Join(l.f.userLines(), "\n")
	for _, name := range links {
		if strings.Contains(user, "("+name+")") {
			continue
		}
		what := "notes on this topic from this project's other machines"
		if name == OverflowFile {
			what = "more of this project's memories from its other machines"
		}
		out = append(out, "- ["+name+"]("+name+"): "+what+" "+indexMark)
	}
	return out
}

// render writes a file anew: the user's part as it is but the entries the
// namespace changed or removed since the last pass, then the managed
// part with ms and the index lines. It returns the text and, per entry of
// the text, its memory.
func render(l *local, ms []api.Memory, mems map[string]api.Memory, idx []string) (string, []string) {
	var out, ids []string
	prevSynced := map[string]string{}
	for _, e := range l.prev.Entries {
		prevSynced[e.ID] = e.Synced
	}
	entryAt := map[int]int{}
	for i, e := range l.f.entries {
		if !e.Managed {
			entryAt[e.start] = i
		}
	}
	placed := false
	block := managedBlock(ms, idx)
	for i := 0; i < len(l.f.lines); i++ {
		if i == l.f.begin {
			out = append(out, block...)
			for _, m := range ms {
				ids = append(ids, m.ID)
			}
			placed = true
			i = l.f.end
			continue
		}
		k, ok := entryAt[i]
		if !ok {
			out = append(out, l.f.lines[i])
			continue
		}
		e := l.f.entries[k]
		id := l.ids[k]
		m, known := mems[id]
		base, seen := prevSynced[id]
		if l.edited[k] {
			text, _ := secrets.Scrub(e.Text)
			base, seen = text, true
		}
		switch {
		case !known || !seen || view(m) == base:
			out = append(out, l.f.lines[e.start:e.end]...)
			ids = append(ids, id)
		case !live(m):
			// deleted in the namespace: the entry leaves the file
		default:
			out = append(out, renderEntry(e.prefix, inert.Text(m.Content), "", others(m))...)
			ids = append(ids, id)
		}
		i = e.end - 1
	}
	if !placed && len(block) > 0 {
		if len(out) > 0 && out[len(out)-1] != "" {
			out = append(out, "")
		}
		out = append(out, block...)
		for _, m := range ms {
			ids = append(ids, m.ID)
		}
	}
	if len(out) == 0 {
		return "", ids
	}
	return strings.Join(out, "\n") + "\n", ids
}

// managedBlock is the managed part: ms as entries, then the index lines.
func managedBlock(ms []api.Memory, idx []string) []string {
	if len(ms) == 0 && len(idx) == 0 {
		return nil
	}
	out := []string{beginLine}
	for _, m := range ms {
		out = append(out, renderEntry("- ", inert.Text(m.Content), m.ID, others(m))...)
	}
	out = append(out, idx...)
	return append(out, endMark)
}
