package transcript

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"time"
)

// document is a transcript that is one JSON document, rewritten whole
// by its client: its metadata and its records (messages) in order.
type document struct {
	meta    Meta
	records []record
}

// record is one message of a document, with the turns it makes.
type record struct {
	// id tells the record from another at the same place (the client's
	// id, a time, or a hash of its start).
	id string
	// pending says the client is still writing the record (a partial
	// message, a tool call not finished): it and those after it are read
	// next time.
	pending bool
	turns   []Turn
	// warnings are the parts of the record skipped.
	warnings []string
}

// docParser reads a whole document; a document it cannot read at all is
// a warning (recorded in r) and false.
type docParser func(r *reading, data []byte) (document, bool)

// readDocument reads the document at path and returns the turns of the
// records after the cursor's. The document is parsed whole each time it
// changed (within Limits.Document); a document whose record at the
// cursor's place has another id, or that has fewer records, was rewritten
// and is read from its first record again.
func readDocument(client, path string, cur Cursor, lim Limits, parse docParser) (Batch, error) {
	return readFile(client, path, cur, lim, func(r *reading, f *os.File, fi os.FileInfo) error {
		id, err := identify(f, fi, 0)
		if err != nil {
			return err
		}
		r.cur.File = id
		if fi.Size() > r.lim.Document {
			r.warn("document of %d bytes, over the limit of %d: skipped", fi.Size(), r.lim.Document)
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(f, r.lim.Document))
		if err != nil {
			return fmt.Errorf("transcript: read %s: %w", path, err)
		}
		if doc, ok := parse(r, data); ok {
			r.records(doc)
		}
		if r.batch.More {
			r.cur.File.ModTime = time.Time{} // not read to its end: read again
		}
		return nil
	})
}

// records takes the document's records after the cursor's.
func (r *reading) records(doc document) {
	if n := r.cur.Records; n > 0 && (len(doc.records) < n || doc.records[n-1].id != r.cur.LastID) {
		file := r.cur.File
		r.restart()
		r.cur.File = file
	}
	m := &r.cur.Meta
	m.ID, m.Project, m.Title = cmp.Or(doc.meta.ID, m.ID), cmp.Or(doc.meta.Project, m.Project), cmp.Or(doc.meta.Title, m.Title)
	if m.Start.IsZero() {
		m.Start = doc.meta.Start
	}
	for i := r.cur.Records; i < len(doc.records); i++ {
		rec := doc.records[i]
		if rec.pending {
			return
		}
		if r.full() {
			r.batch.More = true
			return
		}
		r.record = i + 1
		for _, w := range rec.warnings {
			r.warn("%s", w)
		}
		for _, t := range rec.turns {
			r.emit(t)
		}
		r.cur.Records, r.cur.LastID = i+1, rec.id
	}
}
