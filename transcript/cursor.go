package transcript

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"time"
	"unicode/utf8"
)

// Limits bound one read. A zero field takes its default.
type Limits struct {
	// Line is the longest line read (bytes); a longer one is skipped
	// with a warning, without being held in memory. Default 8 MiB.
	Line int
	// Document is the largest JSON document read whole (Gemini CLI,
	// Cline, Continue, an OpenCode record); a larger one is skipped with
	// a warning. Default 64 MiB.
	Document int64
	// TurnText is the most text kept of one turn (bytes); the rest is
	// cut and counted in Turn.Cut. Default 32 KiB.
	TurnText int
	// Turns is the most turns one read returns; the rest come with the
	// next read (Batch.More). Default 2,000.
	Turns int
	// Bytes is the most bytes of a line format one read goes through;
	// the rest come with the next read (Batch.More). Default 256 MiB.
	Bytes int64
}

// DefaultLimits are the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{Line: 8 << 20, Document: 64 << 20, TurnText: 32 << 10, Turns: 2000, Bytes: 256 << 20}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Line <= 0 {
		l.Line = d.Line
	}
	if l.Document <= 0 {
		l.Document = d.Document
	}
	if l.TurnText <= 0 {
		l.TurnText = d.TurnText
	}
	if l.Turns <= 0 {
		l.Turns = d.Turns
	}
	if l.Bytes <= 0 {
		l.Bytes = d.Bytes
	}
	return l
}

// Cursor is where a read of one transcript stopped, and what the reader
// must remember of what it read: the file's identity, the session's
// metadata and the tool calls whose results have not come yet. It is
// plain data (JSON) for the caller to keep beside the session.
type Cursor struct {
	// Offset is the bytes of a line format read (always the end of a
	// complete line, or inside a line being skipped).
	Offset int64 `json:"offset,omitempty"`
	// Line is the lines read.
	Line int `json:"line,omitempty"`
	// Skipping says Offset is inside a line over Limits.Line, to be
	// skipped up to its end.
	Skipping bool `json:"skipping,omitempty"`
	// Records is the records of a document format read, and LastID the
	// id of the last of them: a document whose record at that place has
	// another id was rewritten.
	Records int    `json:"records,omitempty"`
	LastID  string `json:"last_id,omitempty"`
	// Turns is the turns returned so far (the next turn's Index).
	Turns int `json:"turns,omitempty"`
	// File is the identity of the file when it was read.
	File FileID `json:"file,omitzero"`
	// Meta is the session's metadata as read so far.
	Meta Meta `json:"meta,omitzero"`
	// Calls are the tool calls read whose results are still to come, by
	// the client's call id, so that a result names its tool and command.
	Calls map[string]Call `json:"calls,omitempty"`
}

// Meta is a session's metadata, kept in the cursor because the lines that
// carry it (a first line, a summary) are not read again.
type Meta struct {
	ID      string    `json:"id,omitempty"`
	Project string    `json:"project,omitempty"`
	Title   string    `json:"title,omitempty"`
	Start   time.Time `json:"start,omitzero"`
	End     time.Time `json:"end,omitzero"`
}

// Call is what a tool result needs to know of its call.
type Call struct {
	Tool    string `json:"tool,omitempty"`
	Command string `json:"command,omitempty"`
}

// maxCalls bounds Cursor.Calls: calls whose results never come (an
// interrupted session) must not pile up.
const maxCalls = 256

// FileID tells whether a file is the one a cursor was read from: the same
// inode, no smaller, and the same first bytes.
type FileID struct {
	Size    int64     `json:"size,omitempty"`
	ModTime time.Time `json:"mod_time,omitzero"`
	Inode   uint64    `json:"inode,omitempty"`
	// Head is a hash of the first HeadLen bytes.
	Head    uint64 `json:"head,omitempty"`
	HeadLen int    `json:"head_len,omitempty"`
}

// headBytes is how much of a file's start its identity hashes.
const headBytes = 4096

// unchanged says the file is as it was when last read: nothing to do.
func (id FileID) unchanged(fi os.FileInfo) bool {
	return id.Size == fi.Size() && id.ModTime.Equal(fi.ModTime()) && id.Inode == inode(fi) && id.HeadLen > 0
}

// identify returns the identity of the open file f, hashing the first
// n bytes (headBytes when n is 0).
func identify(f *os.File, fi os.FileInfo, n int) (FileID, error) {
	if n == 0 {
		n = int(min(fi.Size(), headBytes))
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return FileID{}, fmt.Errorf("transcript: read %s: %w", f.Name(), err)
	}
	h := fnv.New64a()
	h.Write(buf[:got])
	return FileID{Size: fi.Size(), ModTime: fi.ModTime(), Inode: inode(fi), Head: h.Sum64(), HeadLen: got}, nil
}

// continues says whether the file f is the one cur was read from, grown
// or as it was: same inode, not shorter, same first bytes. When it is
// not, the file was rewritten or truncated and is read from its start.
func continues(f *os.File, fi os.FileInfo, cur Cursor) (bool, error) {
	if cur.File.HeadLen == 0 {
		return cur.Offset == 0 && cur.Records == 0, nil
	}
	if cur.File.Inode != inode(fi) || fi.Size() < cur.File.Size || fi.Size() < cur.Offset {
		return false, nil
	}
	now, err := identify(f, fi, cur.File.HeadLen)
	if err != nil {
		return false, err
	}
	return now.Head == cur.File.Head && now.HeadLen == cur.File.HeadLen, nil
}

// reading is the state of one read: where it is, what it found.
type reading struct {
	path   string
	client string
	lim    Limits
	cur    Cursor
	batch  Batch
	line   int // the line being parsed (from 1), 0 in documents
	record int // the record being parsed (from 1), 0 in line formats
	// open is a turn that spans lines (Aider's), emitted when a line of
	// another kind starts or the read ends.
	open *Turn
}

func newReading(client, path string, cur Cursor, lim Limits) *reading {
	return &reading{path: path, client: client, lim: lim.withDefaults(), cur: cur}
}

// restart forgets what was read before: the file is another one.
func (r *reading) restart() {
	r.cur = Cursor{}
	r.batch.Restarted = true
}

// warn records a skipped part at the current line or record.
func (r *reading) warn(format string, args ...any) {
	r.batch.Warnings = append(r.batch.Warnings, Warning{Path: r.path, Line: r.line, Record: r.record, Reason: fmt.Sprintf(format, args...)})
}

// full says the read has returned as many turns as it may.
func (r *reading) full() bool { return len(r.batch.Session.Turns) >= r.lim.Turns }

// emit adds a turn: its index, its line, its text cut to the limit, and
// the session's start and end moved to its time.
func (r *reading) emit(t Turn) {
	t.Index = r.cur.Turns
	r.cur.Turns++
	if t.Line == 0 {
		t.Line = r.line
	}
	var n int
	t.Text, n = cut(t.Text, r.lim.TurnText)
	t.Cut += n
	t.Command, _ = cut(t.Command, r.lim.TurnText)
	if !t.Time.IsZero() {
		if r.cur.Meta.Start.IsZero() || t.Time.Before(r.cur.Meta.Start) {
			r.cur.Meta.Start = t.Time
		}
		if t.Time.After(r.cur.Meta.End) {
			r.cur.Meta.End = t.Time
		}
	}
	r.batch.Session.Turns = append(r.batch.Session.Turns, t)
}

// flush emits the open turn, if any.
func (r *reading) flush() {
	if r.open != nil {
		t := *r.open
		r.open = nil
		r.emit(t)
	}
}

// call remembers a tool call until its result comes.
func (r *reading) call(id string, c Call) {
	if id == "" {
		return
	}
	if r.cur.Calls == nil {
		r.cur.Calls = map[string]Call{}
	}
	if len(r.cur.Calls) >= maxCalls {
		for k := range r.cur.Calls {
			delete(r.cur.Calls, k)
			break
		}
	}
	c.Command, _ = cut(c.Command, 4096)
	r.cur.Calls[id] = c
}

// result returns the call a result answers, and forgets it.
func (r *reading) result(id string) Call {
	c := r.cur.Calls[id]
	delete(r.cur.Calls, id)
	return c
}

// finish fills the batch's session from the cursor.
func (r *reading) finish() Batch {
	m := r.cur.Meta
	s := &r.batch.Session
	s.Client, s.Path = r.client, r.path
	s.ID, s.Project, s.Title, s.Start, s.End = m.ID, m.Project, m.Title, m.Start, m.End
	if s.Turns == nil {
		s.Turns = []Turn{}
	}
	r.batch.Cursor = r.cur
	return r.batch
}

// cut returns s cut to at most n bytes on a rune boundary, and how many
// bytes were left out.
func cut(s string, n int) (string, int) {
	if len(s) <= n {
		return s, 0
	}
	end := n
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end], len(s) - end
}
