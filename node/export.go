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

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/storage"
)

// ExportLine is one line of an export file (JSON Lines): a whole memory,
// every field and revision, as JSON. Type says what the line holds.
type ExportLine struct {
	Type string `json:"type"` // "memory"
	crdt.Memory
}

// maxImportLine caps one line of an import file: a memory of the largest
// content with its revisions.
const maxImportLine = 64 << 20

// importBatch is how many memories one import batch commits.
const importBatch = 256

// Export writes every memory, deleted ones included, as JSON Lines. It
// returns how many memories it wrote.
func (n *Node) Export(ctx context.Context, w io.Writer) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	count := 0
	err := n.store.All(storage.KindMemory, func(rec storage.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var m crdt.Memory
		if err := json.Unmarshal(rec.Value, &m); err != nil {
			return fmt.Errorf("decode memory %s: %w", rec.ID, err)
		}
		m.ID = DisplayID(m.ID)
		m.Heads = nil
		count++
		return enc.Encode(ExportLine{Type: "memory", Memory: m})
	})
	if err != nil {
		return count, fmt.Errorf("export: %w", err)
	}
	return count, bw.Flush()
}

// ImportResult reports what Import did.
type ImportResult struct {
	Imported int `json:"imported"`
	Skipped  int `json:"skipped"` // already present (same id)
}

// Import reads an export file and stores every memory it does not already
// have, with its ids, times and revisions. The whole file is checked first:
// a bad line is reported with its number and nothing is imported.
func (n *Node) Import(ctx context.Context, r io.Reader) (ImportResult, error) {
	var memories []crdt.Memory
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxImportLine)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		m, err := parseImportLine(text)
		if err != nil {
			return ImportResult{}, fmt.Errorf("%w: line %d: %v", ErrInvalid, line, err)
		}
		if prev, dup := seen[m.ID]; dup {
			return ImportResult{}, invalidf("line %d: memory %s already appears on line %d", line, DisplayID(m.ID), prev)
		}
		seen[m.ID] = line
		memories = append(memories, m)
	}
	if err := sc.Err(); err != nil {
		return ImportResult{}, fmt.Errorf("%w: line %d: %v", ErrInvalid, line+1, err)
	}

	n.importMu.Lock()
	defer n.importMu.Unlock()
	release := n.indexer.hold()
	defer release()

	var res ImportResult
	for start := 0; start < len(memories); start += importBatch {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		batch := memories[start:min(start+importBatch, len(memories))]
		recs, err := n.importRecords(batch)
		if err != nil {
			return res, err
		}
		res.Skipped += len(batch) - len(recs)
		if len(recs) == 0 {
			continue
		}
		if _, err := n.store.Commit(recs...); err != nil {
			return res, fmt.Errorf("import: %w", err)
		}
		res.Imported += len(recs)
		n.changed()
	}
	return res, nil
}

// importRecords builds, on every core, the records of the memories of batch
// that are not stored yet.
func (n *Node) importRecords(batch []crdt.Memory) ([]storage.Record, error) {
	var todo []*crdt.Memory
	for i := range batch {
		if _, err := n.store.Get(storage.KindMemory, batch[i].ID); err == nil {
			continue
		} else if !storageNotFound(err) {
			return nil, err
		}
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
func (n *Node) importRecord(m *crdt.Memory) (storage.Record, error) {
	doc, err := crdt.NewMemoryDoc(n.actor, m)
	if err != nil {
		return storage.Record{}, fmt.Errorf("import %s: %w", DisplayID(m.ID), err)
	}
	defer doc.Close()
	mat, err := doc.Materialize()
	if err != nil {
		return storage.Record{}, fmt.Errorf("import %s: %w", DisplayID(m.ID), err)
	}
	rec, err := memoryRecord(&mat, nil)
	if err != nil {
		return storage.Record{}, err
	}
	rec.Doc = doc.Save()
	return rec, nil
}

// parseImportLine decodes and checks one export line, applying the same
// rules as Remember (secrets are scrubbed here too).
func parseImportLine(text []byte) (crdt.Memory, error) {
	var l ExportLine
	if err := json.Unmarshal(text, &l); err != nil {
		return crdt.Memory{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if l.Type != "memory" {
		return crdt.Memory{}, fmt.Errorf("type %q: expected \"memory\"", l.Type)
	}
	m := l.Memory
	m.ID = strings.TrimPrefix(m.ID, IDPrefix)
	if !crdt.ValidID(m.ID) {
		return m, fmt.Errorf("id %q is not a memory id", l.ID)
	}
	var err error
	if m.Namespace, err = NormalizeNamespace(m.Namespace); err != nil {
		return m, err
	}
	if m.Kind, err = normalizeKind(m.Kind); err != nil {
		return m, err
	}
	if m.Tags, err = normalizeTags(m.Tags); err != nil {
		return m, err
	}
	if m.Tier, err = normalizeTier(m.Tier, crdt.TierAgent); err != nil {
		return m, err
	}
	if err := checkConfidence(m.Confidence); err != nil {
		return m, err
	}
	if !m.Status.Valid() {
		return m, fmt.Errorf("status %q: use active, stale, archived, compacted or deleted", m.Status)
	}
	if m.Title, err = checkTitle(m.Title); err != nil {
		return m, err
	}
	m.Title, _ = Scrub(m.Title)
	if m.Provenance.CreatedAt.IsZero() {
		return m, fmt.Errorf("provenance.created_at is missing")
	}
	if len(m.Revisions) == 0 {
		content, err := checkContent(m.Content)
		if err != nil {
			return m, err
		}
		m.Revisions = []crdt.Revision{{ID: crdt.NewID(), Text: content, Device: m.Provenance.Device, At: m.Provenance.CreatedAt}}
	}
	for i := range m.Revisions {
		r := &m.Revisions[i]
		if !crdt.ValidID(r.ID) || r.At.IsZero() {
			return m, fmt.Errorf("revision %d needs a valid id and a time", i+1)
		}
		for _, ref := range append([]string{r.Parent}, r.Merges...) {
			if ref != "" && !crdt.ValidID(ref) {
				return m, fmt.Errorf("revision %s refers to %q, which is not a revision id", r.ID, ref)
			}
		}
		text, err := checkContent(r.Text)
		if err != nil {
			return m, fmt.Errorf("revision %s: %w", r.ID, err)
		}
		r.Text, _ = Scrub(text)
	}
	m.Touches = nil
	for _, r := range m.Revisions {
		m.Touches = append(m.Touches, ExtractTouches(r.Text)...)
	}
	m.Content, m.Conflict, m.Heads = "", nil, nil
	return m, nil
}
