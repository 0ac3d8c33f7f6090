package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Kind is the kind of a document; it is one byte of every document key.
type Kind byte

// The document kinds. Only append to this list.
const (
	KindMemory Kind = 'm'
	KindEdge   Kind = 'e'
	KindMesh   Kind = 'x'
	KindPurge  Kind = 'p' // the tombstone of an erased memory, under the memory's id
)

func (k Kind) valid() bool {
	return k == KindMemory || k == KindEdge || k == KindMesh || k == KindPurge
}

func (k Kind) String() string {
	switch k {
	case KindMemory:
		return "memory"
	case KindEdge:
		return "edge"
	case KindMesh:
		return "mesh"
	case KindPurge:
		return "purge"
	}
	return fmt.Sprintf("kind(%#x)", byte(k))
}

// Size caps, checked before anything is written.
const (
	MaxDocSize   = 16 << 20 // Record.Doc
	MaxValueSize = 16 << 20 // Record.Value and local values
	MaxIDLen     = 1024     // document ids, heads and local keys
	MaxTermLen   = 4096     // a term's field and value together
)

// Term is a secondary index entry, e.g. {"ns", "proj"} or {"tag", "go"}.
type Term struct{ Field, Value string }

// Record is one version of a document.
type Record struct {
	Kind  Kind
	ID    string
	Doc   []byte   // Automerge document; Commit keeps the stored one if nil; never filled by reads (see GetDoc)
	Heads []string // document heads (hex change hashes)
	Value []byte   // materialised record, in the caller's encoding
	Terms []Term   // secondary index terms of this version
	Seq   uint64   // set by Commit: the change sequence number of this version
	// Erase makes Commit remove the document instead of storing a
	// version: its bytes, record, terms, change-log entry and digest
	// share. Only Kind and ID are read. Expunge then removes what the
	// files still hold of it.
	Erase bool
	// Logged, with Erase, leaves an entry in the change log, so that
	// those who follow the log (the search index, the brief, the API's
	// Changes) learn that the document is gone: its Change reads as a
	// Record with Erase set and nothing else, unless the document was
	// stored again after it. (A purge needs none: its tombstone's entry
	// says what it erased.)
	Logged bool
	// NoneAt, when not zero, says that no version of the document was
	// stored when Applied returned NoneAt, and that the caller has held
	// the document's lock since it found none: while Applied still
	// returns NoneAt, Commit takes the document as new without reading a
	// previous version. A bulk write of new documents then reads nothing.
	NoneAt uint64
	// Aside, when not nil, is kept for the document apart from its
	// versions (Store.Aside), whether the record stores or erases it:
	// what was taken out of the document and may be put back. An erasure
	// without it drops what was kept aside.
	Aside []byte
}

// validate checks everything Commit needs before it writes.
func (r *Record) validate() error {
	if err := checkKindID(r.Kind, r.ID); err != nil {
		return err
	}
	if len(r.Doc) > MaxDocSize || len(r.Aside) > MaxDocSize {
		return fmt.Errorf("%w: document of %d bytes (%d aside) exceeds %d", ErrInvalid, len(r.Doc), len(r.Aside), MaxDocSize)
	}
	if len(r.Value) > MaxValueSize {
		return fmt.Errorf("%w: value of %d bytes exceeds %d", ErrInvalid, len(r.Value), MaxValueSize)
	}
	for _, h := range r.Heads {
		if h == "" || len(h) > MaxIDLen || strings.IndexByte(h, 0) >= 0 {
			return fmt.Errorf("%w: head %q: want 1 to %d bytes without NUL", ErrInvalid, h, MaxIDLen)
		}
	}
	for _, t := range r.Terms {
		if err := checkTerm(t.Field, t.Value); err != nil {
			return err
		}
	}
	return nil
}

func checkKind(kind Kind) error {
	if !kind.valid() {
		return fmt.Errorf("%w: unknown %v", ErrInvalid, kind)
	}
	return nil
}

func checkKindID(kind Kind, id string) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	if id == "" || len(id) > MaxIDLen || strings.IndexByte(id, 0) >= 0 {
		return fmt.Errorf("%w: id %q: want 1 to %d bytes without NUL", ErrInvalid, id, MaxIDLen)
	}
	return nil
}

func checkTerm(field, value string) error {
	if field == "" || len(field)+len(value) > MaxTermLen ||
		strings.IndexByte(field, 0) >= 0 || strings.IndexByte(value, 0) >= 0 {
		return fmt.Errorf("%w: term %q=%q: want a non-empty field, at most %d bytes, no NUL", ErrInvalid, field, value, MaxTermLen)
	}
	return nil
}

// envelope is a decoded record value: a Record without its identity or
// document. value aliases the bytes it was decoded from.
type envelope struct {
	seq   uint64
	heads []string
	terms []Term
	value []byte
}

// envelopeSeqLen is the size of the sequence number that starts every
// envelope; Commit fills it in last.
const envelopeSeqLen = 8

func appendEnvelope(b []byte, seq uint64, r *Record) []byte {
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.AppendUvarint(b, uint64(len(r.Heads)))
	for _, h := range r.Heads {
		b = appendString(b, h)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Terms)))
	for _, t := range r.Terms {
		b = appendString(b, t.Field)
		b = appendString(b, t.Value)
	}
	return append(b, r.Value...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errCorrupt = errors.New("corrupt record envelope")

func decodeEnvelope(b []byte) (envelope, error) {
	var e envelope
	if len(b) < envelopeSeqLen {
		return e, errCorrupt
	}
	e.seq = binary.BigEndian.Uint64(b)
	d := decoder{b: b[envelopeSeqLen:]}
	if n := d.count(); n > 0 {
		e.heads = make([]string, n)
		for i := range e.heads {
			e.heads[i] = d.string()
		}
	}
	if n := d.count(); n > 0 {
		e.terms = make([]Term, n)
		for i := range e.terms {
			e.terms[i] = Term{Field: d.string(), Value: d.string()}
		}
	}
	if d.bad {
		return envelope{}, errCorrupt
	}
	e.value = d.b
	return e, nil
}

// decoder reads uvarint-prefixed fields; a malformed input sets bad and
// makes every later read return zero values.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of elements, each of which takes at least one
// byte, so a corrupt count cannot cause a huge allocation.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.count()
	if d.bad {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// toRecord builds the Record of a document from its envelope, copying the
// value out of Pebble's buffer.
func (e envelope) toRecord(kind Kind, id string) Record {
	return Record{
		Kind:  kind,
		ID:    id,
		Heads: e.heads,
		Value: append([]byte{}, e.value...),
		Terms: e.terms,
		Seq:   e.seq,
	}
}
