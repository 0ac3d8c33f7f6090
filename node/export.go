package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/internal/touches"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/rules"
	"github.com/memmesh/memmesh/storage"
)

// Line types of an export file.
const (
	lineHeader    = "header"
	lineNamespace = "namespace"
	linePurged    = "purged"
	lineMemory    = "memory"
	lineEdge      = "edge"
)

// ExportLine is a memory line of an export file: a whole memory, every
// field and revision.
type ExportLine struct {
	Type string `json:"type"` // "memory"
	model.Memory
}

// exportEdge is an edge line.
type exportEdge struct {
	Type string `json:"type"` // "edge"
	model.Edge
}

// exportNamespace is a line of namespace settings.
type exportNamespace struct {
	Type           string `json:"type"` // "namespace"
	Namespace      string `json:"namespace"`
	Sync           string `json:"sync"`
	StaleAfterDays int64  `json:"stale_after_days,omitempty"`
}

// exportPurged is the line of a purged memory's tombstone: its first
// purge, and the other devices' purges when there are any.
type exportPurged struct {
	Type string        `json:"type"` // "purged"
	ID   string        `json:"id"`
	At   time.Time     `json:"at"`
	By   string        `json:"by"`
	Also []exportPurge `json:"also,omitempty"`
}

// exportPurge is one more device's purge of a memory.
type exportPurge struct {
	At time.Time `json:"at"`
	By string    `json:"by"`
}

// maxImportLine caps one line of an import file: a memory of the largest
// content with its revisions.
const maxImportLine = 64 << 20

// importBatch is how many memories or edges one import batch commits.
const importBatch = 256

// Export writes the home's export file (see ExportFormat) and returns its
// header.
func (n *Node) Export(ctx context.Context, w io.Writer) (api.ExportHeader, error) {
	h, err := n.exportHeader()
	if err != nil {
		return h, fmt.Errorf("export: %w", err)
	}
	bw := bufio.NewWriter(w)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Each line is exact JSON, with what could act on a terminal (C1
	// controls, bidi overrides) escaped too: an export may be printed.
	line := func(v any) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return err
		}
		_, err := bw.Write(inert.JSON(buf.Bytes()))
		return err
	}
	if err := line(h); err != nil {
		return h, err
	}
	err = n.store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return fmt.Errorf("decode mesh record %s: %w", rec.ID, err)
		}
		if r.What != model.MeshNamespace {
			return nil
		}
		return line(exportNamespace{Type: lineNamespace, Namespace: r.Key, Sync: r.Sync, StaleAfterDays: r.StaleDays})
	})
	if err == nil {
		err = n.store.All(storage.KindPurge, func(rec storage.Record) error {
			ts, err := crdt.DecodeTombstone(rec.Value)
			if err != nil {
				return fmt.Errorf("tombstone %s: %w", rec.ID, err)
			}
			first := ts.First()
			l := exportPurged{Type: linePurged, ID: DisplayID(ts.ID), At: first.At, By: first.By}
			for _, p := range ts.Purges {
				if p != first {
					l.Also = append(l.Also, exportPurge{At: p.At, By: p.By})
				}
			}
			return line(l)
		})
	}
	if err == nil {
		err = n.store.All(storage.KindMemory, func(rec storage.Record) error {
			var m model.Memory
			if err := json.Unmarshal(rec.Value, &m); err != nil {
				return fmt.Errorf("decode memory %s: %w", rec.ID, err)
			}
			m.ID = DisplayID(m.ID)
			m.Heads = nil
			return line(ExportLine{Type: lineMemory, Memory: m})
		})
	}
	if err == nil {
		err = n.store.All(storage.KindEdge, func(rec storage.Record) error {
			var e model.Edge
			if err := json.Unmarshal(rec.Value, &e); err != nil {
				return fmt.Errorf("decode edge %s: %w", rec.ID, err)
			}
			e.Heads = nil
			return line(exportEdge{Type: lineEdge, Edge: e})
		})
	}
	if err != nil {
		return h, fmt.Errorf("export: %w", err)
	}
	return h, bw.Flush()
}

// exportHeader counts what Export is about to write.
func (n *Node) exportHeader() (api.ExportHeader, error) {
	h := api.ExportHeader{Type: lineHeader, Format: api.ExportFormat, Version: api.ExportVersion, Device: n.id.DeviceID, ExportedAt: n.now().UTC()}
	var err error
	for _, c := range []struct {
		kind storage.Kind
		n    *int
	}{{storage.KindPurge, &h.Purged}, {storage.KindMemory, &h.Memories}, {storage.KindEdge, &h.Edges}} {
		if *c.n, err = n.store.Count(c.kind); err != nil {
			return h, err
		}
	}
	err = n.store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		if json.Unmarshal(rec.Value, &r) == nil && r.What == model.MeshNamespace {
			h.Namespaces++
		}
		return nil
	})
	return h, err
}

// importItem is one parsed line of an import file.
type importItem struct {
	header    *api.ExportHeader
	namespace *exportNamespace
	tombstone *crdt.Tombstone
	memory    *model.Memory
	edge      *model.Edge
}

// ImportCheck is what CheckImport found in an import file.
type ImportCheck struct {
	Header  *api.ExportHeader `json:"header,omitempty"` // nil for a file of version 1
	Lines   int               `json:"lines"`
	Records int               `json:"records"` // lines that Import stores or skips
}

// CheckImport reads a whole import file and checks every line with the
// rules Import applies, without a node: a file it accepts changes
// nothing when Import refuses it. It reports the first bad line.
func CheckImport(r io.Reader) (ImportCheck, error) {
	var c ImportCheck
	err := scanImport(r, func(line int, it importItem) error {
		c.Lines = line
		if it.header != nil {
			c.Header = it.header
		} else {
			c.Records++
		}
		return nil
	})
	return c, err
}

// scanImport calls fn with each parsed line of an import file and its
// number. A bad line stops it with an error naming the line.
func scanImport(r io.Reader, fn func(line int, it importItem) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxImportLine)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		it, err := parseImportLine(text, line)
		if err != nil {
			// The message may quote the line: it must not carry a secret.
			msg, _ := secrets.Scrub(err.Error())
			return fmt.Errorf("%w: line %d: %s", api.ErrInvalid, line, msg)
		}
		if err := fn(line, it); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: line %d: %v", api.ErrInvalid, line+1, err)
	}
	return nil
}

// Import reads an export file as it arrives and stores what the home does
// not have yet: namespace settings, tombstones (erasing what they cover),
// memories with their ids, times and revisions, and edges. What is here
// already is skipped, and a memory that was purged is never brought back,
// so importing a file again, or the rest of a file after an interrupted
// import, completes the job. Import stops at the first bad line: what came
// before it is stored, nothing after it (CheckImport checks a whole file
// first). It commits in batches, so the memory it holds is bounded.
func (n *Node) Import(ctx context.Context, r io.Reader) (api.ImportResult, error) {
	n.importMu.Lock()
	defer n.importMu.Unlock()
	release := n.indexer.hold()
	defer release()

	imp := importer{n: n, ctx: ctx}
	err := scanImport(r, imp.add)
	if ferr := imp.flush(); err == nil {
		err = ferr
	}
	if imp.erased {
		signal(n.expungeWake)
	}
	if err != nil {
		return imp.res, fmt.Errorf("import stopped after %d lines (%d memories and %d edges stored; importing the file again skips them): %w",
			imp.res.Lines, imp.res.Imported, imp.res.Edges, err)
	}
	return imp.res, nil
}

// importer is the state of one Import.
type importer struct {
	n        *Node
	ctx      context.Context
	res      api.ImportResult
	memories []model.Memory
	edges    []model.Edge
	erased   bool
	// committing is the batch of memories being committed while the
	// next one is read and built, nil when none is.
	committing *importCommit
}

// importCommit is a batch of memories committing in the background.
type importCommit struct {
	ids  map[string]bool // its memories, which the next batch must not build again
	done chan importCounts
}

// importCounts is what became of a committed batch's memories.
type importCounts struct {
	imported, skipped, erased int
	err                       error
}

func (imp *importer) add(line int, it importItem) error {
	if err := imp.ctx.Err(); err != nil {
		return err
	}
	var err error
	switch {
	case it.memory != nil:
		if err = imp.flushEdges(); err == nil {
			imp.memories = append(imp.memories, *it.memory)
			if len(imp.memories) == importBatch {
				err = imp.flushMemories()
			}
		}
	case it.edge != nil:
		// An edge's memories must be stored before it.
		if err = imp.storeMemories(); err == nil {
			imp.edges = append(imp.edges, *it.edge)
			if len(imp.edges) == importBatch {
				err = imp.flushEdges()
			}
		}
	default:
		if err = imp.flush(); err == nil {
			err = imp.single(line, it)
		}
	}
	if err != nil {
		return err
	}
	imp.res.Lines = line
	return nil
}

// single imports a header, namespace or tombstone line.
func (imp *importer) single(line int, it importItem) error {
	n := imp.n
	switch {
	case it.namespace != nil:
		// Settings stored already, or a peer's arriving meanwhile, are
		// kept: the registry looks under the record's lock.
		ns := it.namespace
		n.justChecked([]string{crdt.MeshID(model.MeshNamespace, ns.Namespace)})
		added, err := n.registry.AddNamespace(ns.Namespace, &ns.Sync, &ns.StaleAfterDays)
		switch {
		case err != nil:
			return fmt.Errorf("line %d: %w", line, storeError(err))
		case added:
			imp.res.Namespaces++
		default:
			imp.res.NamespacesKept++
		}
	case it.tombstone != nil:
		if n.purged(it.tombstone.ID) {
			// Merging could only move the time earlier; what matters is
			// that the memory stays erased.
			return nil
		}
		if _, err := n.commitTombstone(*it.tombstone); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		imp.res.Purged++
		imp.erased = true
	}
	return nil
}

// flush stores what is pending and returns once it is stored.
func (imp *importer) flush() error {
	if err := imp.storeMemories(); err != nil {
		return err
	}
	return imp.flushEdges()
}

// storeMemories stores the pending memories and returns once they and
// the batch before them are stored.
func (imp *importer) storeMemories() error {
	err := imp.flushMemories()
	if werr := imp.wait(); err == nil {
		err = werr
	}
	return err
}

// flushMemories builds the records of the pending memories that the home
// lacks, on every core, while the batch before them commits, then starts
// committing them. Reading and building the next batch thus overlaps the
// commit (a synced Pebble batch) of this one.
func (imp *importer) flushMemories() error {
	batch := imp.memories
	imp.memories = imp.memories[:0]
	if len(batch) == 0 {
		return nil
	}
	var committing map[string]bool
	if imp.committing != nil {
		committing = imp.committing.ids
	}
	recs, err := imp.n.importRecords(batch, committing, &imp.res)
	if err != nil || len(recs) == 0 {
		return err
	}
	if err := imp.wait(); err != nil {
		return err
	}
	c := &importCommit{ids: make(map[string]bool, len(recs)), done: make(chan importCounts, 1)}
	ids := make([]string, len(recs))
	for i, r := range recs {
		c.ids[r.ID], ids[i] = true, r.ID
	}
	imp.committing = c
	imp.n.justChecked(ids)
	go func() { c.done <- imp.n.commitImported(recs) }()
	return nil
}

// commitImported commits the records of imported memories under their
// write locks, less those that were stored or purged since importRecords
// found them absent (a pull, a purge meanwhile): what is here wins. It
// releases the locks once the batch is applied and returns once it is
// durable.
func (n *Node) commitImported(recs []storage.Record) (c importCounts) {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	unlock := n.lockAll(ids)
	defer unlock()
	// Nothing committed since applied: the memories found absent under
	// their locks are stored as new, without a read.
	applied := n.store.Applied()
	keep := recs[:0]
	for _, r := range recs {
		if n.purged(r.ID) {
			c.erased++
			continue
		}
		if _, err := n.store.Get(storage.KindMemory, r.ID); err == nil {
			c.skipped++
			continue
		} else if !storageNotFound(err) {
			c.err = err
			return c
		}
		r.NoneAt = applied
		keep = append(keep, r)
	}
	if len(keep) == 0 {
		return c
	}
	if c.err = n.commitUnlock(unlock, keep...); c.err == nil {
		c.imported = len(keep)
		n.changed()
	}
	return c
}

// wait returns once the batch being committed, if any, is stored.
func (imp *importer) wait() error {
	c := imp.committing
	if c == nil {
		return nil
	}
	imp.committing = nil
	counts := <-c.done
	if counts.err != nil {
		return fmt.Errorf("import: %w", storeError(counts.err))
	}
	imp.res.Imported += counts.imported
	imp.res.Skipped += counts.skipped
	imp.res.Erased += counts.erased
	return nil
}

// flushEdges stores the pending edges that the home lacks and whose
// memories it has.
func (imp *importer) flushEdges() error {
	batch := imp.edges
	imp.edges = imp.edges[:0]
	var recs []storage.Record
	var ends [][]string // each record's memory endpoints
	for i := range batch {
		rec, ok, err := imp.n.importEdge(&batch[i])
		if err != nil {
			return err
		}
		if !ok {
			imp.res.EdgesSkipped++
			continue
		}
		recs = append(recs, rec)
		ends = append(ends, memoryEnds(batch[i].From, batch[i].To))
	}
	if len(recs) == 0 {
		return nil
	}
	stored, skipped, err := imp.n.commitImportedEdges(recs, ends)
	imp.res.EdgesSkipped += skipped
	if err != nil {
		return fmt.Errorf("import: %w", storeError(err))
	}
	imp.res.Edges += stored
	return nil
}

// commitImportedEdges commits the records of imported edges under the
// write locks of the edges and of their memories (ends[i] are recs[i]'s),
// less those that were stored since importEdge found them absent, and
// those at a memory purged meanwhile (Purge erases a memory's edges under
// its lock).
func (n *Node) commitImportedEdges(recs []storage.Record, ends [][]string) (stored, skipped int, err error) {
	var memories []string
	locks := make([]string, 0, len(recs))
	for i, r := range recs {
		locks = append(locks, r.ID)
		memories = append(memories, ends[i]...)
	}
	n.justChecked(memories)
	unlock := n.lockAll(append(locks, memories...))
	defer unlock()
	keep := recs[:0]
	seen := make(map[string]bool, len(recs))
	for i, r := range recs {
		ok, err := n.edgeStillNew(r.ID, ends[i])
		if err != nil {
			return 0, skipped, err
		}
		if !ok || seen[r.ID] {
			skipped++
			continue
		}
		seen[r.ID] = true
		keep = append(keep, r)
	}
	if len(keep) == 0 {
		return 0, skipped, nil
	}
	if err := n.commitUnlock(unlock, keep...); err != nil {
		return 0, skipped, err
	}
	n.changed()
	return len(keep), skipped, nil
}

// edgeStillNew reports whether the edge id is not stored and each of its
// memories is, not purged. The caller holds their locks.
func (n *Node) edgeStillNew(id string, memories []string) (bool, error) {
	if _, err := n.store.Get(storage.KindEdge, id); err == nil {
		return false, nil
	} else if !storageNotFound(err) {
		return false, err
	}
	for _, mid := range memories {
		if n.purged(mid) {
			return false, nil
		}
		if _, err := n.store.Get(storage.KindMemory, mid); storageNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	return true, nil
}

// importRecords builds, on every core, the records of the memories of batch
// that are not stored yet, nor being committed (committing), nor purged;
// it counts the others in res.
func (n *Node) importRecords(batch []model.Memory, committing map[string]bool, res *api.ImportResult) ([]storage.Record, error) {
	var todo []*model.Memory
	seen := make(map[string]bool, len(batch))
	for i := range batch {
		id := batch[i].ID
		if n.purged(id) {
			res.Erased++
			continue
		}
		if _, err := n.store.Get(storage.KindMemory, id); err == nil || seen[id] || committing[id] {
			res.Skipped++
			continue
		} else if !storageNotFound(err) {
			return nil, err
		}
		seen[id] = true
		todo = append(todo, &batch[i])
	}
	recs := make([]storage.Record, len(todo))
	errs := make([]error, len(todo))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(todo); i += workers {
				recs[i], errs[i] = n.importRecord(todo[i])
			}
		}()
	}
	wg.Wait()
	return recs, errors.Join(errs...)
}

// importRecord builds the document and storage record of an imported memory.
func (n *Node) importRecord(m *model.Memory) (storage.Record, error) {
	doc, mat, err := crdt.CreateMemory(n.actor, m)
	if err != nil {
		return storage.Record{}, fmt.Errorf("import %s: %w", DisplayID(m.ID), err)
	}
	defer doc.Close()
	rec, err := memoryRecord(&mat, nil)
	if err != nil {
		return storage.Record{}, err
	}
	rec.Doc = doc.Save()
	return rec, nil
}

// importEdge returns the record of an imported edge, or ok=false when the
// edge is here already, or one of its memories is not (never imported,
// or purged).
func (n *Node) importEdge(e *model.Edge) (rec storage.Record, ok bool, err error) {
	from, ferr := n.endpoint(e.From)
	to, terr := n.endpoint(e.To)
	if errors.Is(ferr, api.ErrNotFound) || errors.Is(terr, api.ErrNotFound) {
		return storage.Record{}, false, nil
	}
	if err := errors.Join(ferr, terr); err != nil {
		return storage.Record{}, false, fmt.Errorf("edge %s %s %s: %w", e.From, e.Rel, e.To, err)
	}
	e.From, e.To = from, to
	e.ID = crdt.EdgeID(from, e.Rel, to)
	if _, err := n.store.Get(storage.KindEdge, e.ID); err == nil {
		return storage.Record{}, false, nil
	} else if !storageNotFound(err) {
		return storage.Record{}, false, err
	}
	rec, _, err = newEdgeRecord(n.actor, e)
	if err != nil {
		return storage.Record{}, false, fmt.Errorf("edge %s %s %s: %w", e.From, e.Rel, e.To, err)
	}
	return rec, true, nil
}

// parseImportLine decodes and checks one line of an import file, applying
// the same rules as Remember and Link (secrets are scrubbed here too).
func parseImportLine(text []byte, line int) (importItem, error) {
	if err := api.CheckJSONText(text); err != nil {
		return importItem{}, err
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(text, &head); err != nil {
		return importItem{}, fmt.Errorf("not a JSON object: %v", err)
	}
	switch head.Type {
	case lineHeader:
		if line != 1 {
			return importItem{}, errors.New("a header belongs on the first line")
		}
		var h api.ExportHeader
		if err := json.Unmarshal(text, &h); err != nil {
			return importItem{}, err
		}
		if h.Format != api.ExportFormat || h.Version < 1 {
			return importItem{}, fmt.Errorf("not a memmesh export (format %q, version %d)", api.Echo(h.Format), h.Version)
		}
		if h.Version > api.ExportVersion {
			return importItem{}, fmt.Errorf("written by a newer memmesh (format version %d; this one reads up to %d): upgrade memmesh to import it", h.Version, api.ExportVersion)
		}
		return importItem{header: &h}, nil
	case lineNamespace:
		return parseNamespaceLine(text)
	case linePurged:
		return parsePurgedLine(text)
	case lineMemory:
		m, err := parseMemoryLine(text)
		return importItem{memory: &m}, err
	case lineEdge:
		return parseEdgeLine(text)
	}
	return importItem{}, fmt.Errorf("type %q: expected header, namespace, purged, memory or edge", api.Echo(head.Type))
}

func parseNamespaceLine(text []byte) (importItem, error) {
	var l exportNamespace
	if err := json.Unmarshal(text, &l); err != nil {
		return importItem{}, err
	}
	ns, err := NormalizeNamespace(l.Namespace)
	if err != nil {
		return importItem{}, err
	}
	if l.Sync == "" {
		l.Sync = model.SyncAll
	}
	if l.Sync != model.SyncAll && l.Sync != model.SyncLocal {
		return importItem{}, fmt.Errorf("sync %q: want %q or %q", api.Echo(string(l.Sync)), model.SyncAll, model.SyncLocal)
	}
	if l.StaleAfterDays < 0 || l.StaleAfterDays > model.MaxStaleDays {
		return importItem{}, fmt.Errorf("stale_after_days %d: want 0 (the default) to %d", l.StaleAfterDays, model.MaxStaleDays)
	}
	l.Namespace = ns
	return importItem{namespace: &l}, nil
}

func parsePurgedLine(text []byte) (importItem, error) {
	var l exportPurged
	if err := json.Unmarshal(text, &l); err != nil {
		return importItem{}, err
	}
	ts := crdt.NewTombstone(strings.TrimPrefix(l.ID, IDPrefix), l.At, l.By)
	for _, p := range l.Also {
		var err error
		if ts, err = crdt.MergeTombstones(ts, crdt.NewTombstone(ts.ID, p.At, p.By)); err != nil {
			return importItem{}, err
		}
	}
	if err := ts.Check(); err != nil {
		return importItem{}, err
	}
	return importItem{tombstone: &ts}, nil
}

func parseEdgeLine(text []byte) (importItem, error) {
	var l exportEdge
	if err := json.Unmarshal(text, &l); err != nil {
		return importItem{}, err
	}
	e := l.Edge
	var err error
	if e.Rel, err = checkRel(e.Rel); err != nil {
		return importItem{}, err
	}
	for _, end := range []*string{&e.From, &e.To} {
		*end = strings.TrimSpace(*end)
		if *end == "" || len(*end) > maxEndpointLen {
			return importItem{}, fmt.Errorf("edge endpoint %q: give a memory id or an artefact of at most %d bytes", api.Echo(*end), maxEndpointLen)
		}
	}
	if !(e.Strength >= 0 && e.Strength <= 1) {
		return importItem{}, fmt.Errorf("strength %v: use a number from 0 to 1", e.Strength)
	}
	if !e.ValidFrom.IsZero() && !e.ValidTo.IsZero() && e.ValidTo.Before(e.ValidFrom) {
		return importItem{}, errors.New("valid_to is before valid_from")
	}
	if e.CreatedAt.IsZero() {
		return importItem{}, errors.New("created_at is missing")
	}
	if e.UpdatedAt.IsZero() {
		e.UpdatedAt = e.CreatedAt
	}
	if e.Origin, err = checkOrigin(e.Origin); err != nil {
		return importItem{}, err
	}
	if e.Notes, err = checkNotes(e.Notes); err != nil {
		return importItem{}, err
	}
	e.Heads = nil
	return importItem{edge: &e}, nil
}

// parseMemoryLine decodes and checks a memory line.
func parseMemoryLine(text []byte) (model.Memory, error) {
	var l ExportLine
	if err := json.Unmarshal(text, &l); err != nil {
		return model.Memory{}, fmt.Errorf("not a JSON object: %v", err)
	}
	m := l.Memory
	m.ID = strings.TrimPrefix(m.ID, IDPrefix)
	if !crdt.ValidID(m.ID) {
		return m, fmt.Errorf("id %q is not a memory id", api.Echo(l.ID))
	}
	var err error
	if m.Namespace, err = NormalizeNamespace(m.Namespace); err != nil {
		return m, err
	}
	if m.Kind, err = rules.NormalizeKind(m.Kind); err != nil {
		return m, err
	}
	if m.Tags, err = rules.NormalizeTags(m.Tags); err != nil {
		return m, err
	}
	if m.Tier, err = rules.NormalizeTier(m.Tier, model.TierAgent); err != nil {
		return m, err
	}
	if err := rules.CheckConfidence(m.Confidence); err != nil {
		return m, err
	}
	if !m.Status.Valid() {
		return m, fmt.Errorf("status %q: use active, stale, archived, compacted or deleted", api.Echo(string(m.Status)))
	}
	if m.Title, err = rules.CheckTitle(m.Title); err != nil {
		return m, err
	}
	m.Title, _ = secrets.Scrub(m.Title)
	p := &m.Provenance
	for _, l := range []struct {
		what  string
		value *string
	}{{"device", &p.Device}, {"agent", &p.Agent}, {"session", &p.Session}} {
		if *l.value, _, err = rules.CheckLabel(l.what, *l.value); err != nil {
			return m, err
		}
	}
	if m.Provenance.CreatedAt.IsZero() {
		return m, fmt.Errorf("provenance.created_at is missing")
	}
	if len(m.Revisions) == 0 {
		content, err := rules.CheckContent(m.Content)
		if err != nil {
			return m, err
		}
		m.Revisions = []model.Revision{{ID: crdt.NewID(), Text: content, Device: m.Provenance.Device, Agent: m.Provenance.Agent, At: m.Provenance.CreatedAt}}
	}
	for i := range m.Revisions {
		r := &m.Revisions[i]
		if !crdt.ValidID(r.ID) || r.At.IsZero() {
			return m, fmt.Errorf("revision %d needs a valid id and a time", i+1)
		}
		for _, ref := range append([]string{r.Parent}, r.Merges...) {
			if ref != "" && !crdt.ValidID(ref) {
				return m, fmt.Errorf("revision %s refers to %q, which is not a revision id", r.ID, api.Echo(ref))
			}
		}
		text, err := rules.CheckContent(r.Text)
		if err != nil {
			return m, fmt.Errorf("revision %s: %w", r.ID, err)
		}
		r.Text, _ = secrets.Scrub(text)
		if r.Device, _, err = rules.CheckLabel("device", r.Device); err != nil {
			return m, fmt.Errorf("revision %s: %w", r.ID, err)
		}
		if r.Agent, _, err = rules.CheckLabel("agent", r.Agent); err != nil {
			return m, fmt.Errorf("revision %s: %w", r.ID, err)
		}
	}
	m.Touches = nil
	for _, r := range m.Revisions {
		m.Touches = append(m.Touches, touches.Extract(r.Text)...)
	}
	m.Content, m.Conflict, m.Heads = "", nil, nil
	return m, nil
}
