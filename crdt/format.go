package crdt

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

// The Automerge library this package links aborts the process on some
// malformed documents that carry a valid checksum, so checkSaved walks the
// binary format far enough to refuse the inputs known to do that before
// Automerge sees them. The layout is Automerge's storage format:
//
//	chunk:     magic(4) checksum(4) type(1) length(uLEB) contents(length)
//	document:  actors:  count(uLEB) {len(uLEB) bytes}
//	           heads:   count(uLEB) {hash(32)}
//	           change column specs: count(uLEB) {spec(uLEB) len(uLEB)}
//	           op column specs:     count(uLEB) {spec(uLEB) len(uLEB)}
//	           change column data, then op column data, in spec order
//	           head indexes (the rest)
//	column spec: id<<4 | deflate(8) | type(0-7)
//
// Integer columns are run-length encoded: a signed LEB128 count n, then
// one value repeated n times (n > 0), -n literal values (n < 0), or an
// unsigned LEB128 number of nulls (n == 0). Delta columns hold the
// differences between successive values, as signed LEB128.
//
// The linked Automerge also aborts on an operation id (of an operation,
// the object it is in, the element it follows, or a successor) whose actor
// index or counter does not fit 32 bits, before it checks the actor
// index against the actors or the heads against the changes, so
// checkSaved bounds those columns too.

const (
	chunkDocument = 0

	// Op columns checked, as id<<4 | type.
	colObjActor  = 0<<4 | 1 // uLEB: the object's actor index, null for the root
	colObjCtr    = 0<<4 | 2 // uLEB: the object's counter
	colKeyStr    = 1<<4 | 5 // strings: the map key, null for a list element
	colIDActor   = 2<<4 | 1 // uLEB: the operation's actor index
	colIDCtr     = 2<<4 | 3 // delta: the operation's counter
	colInsert    = 3<<4 | 4 // boolean: the operation inserts a list element
	colAction    = 4<<4 | 2 // uLEB: the operation's action
	colValueMeta = 5<<4 | 6 // uLEB: value length<<4 | value type

	deflateBit = 8

	// Largest valid action: make map, set, make list, delete, make text,
	// increment, make table, mark.
	maxAction       = 7
	actionMakeMap   = 0
	actionMakeList  = 2
	actionMakeText  = 4
	actionIncrement = 5
	actionMakeTable = 6
	// Value types an increment may carry: uLEB and signed LEB integers.
	valueUint = 3
	valueInt  = 4

	// maxInflated caps the total size of a document's deflated columns
	// once inflated, against decompression bombs.
	maxInflated = 8 * MaxDocSize
	// maxOps caps the number of operations in a document.
	maxOps = 1 << 22
	// maxObjects caps the number of maps, lists and texts in a document
	// (a memory makes one map per revision).
	maxObjects = 1 << 18
)

var errTruncated = errors.New("truncated")

// opIDColumns are the op columns of the actor indexes and counters of
// operation ids, as id<<4 | type, and whether each holds deltas: the
// object's, the key's (the element an insertion follows), the
// operation's own and its successors'.
var opIDColumns = map[uint64]bool{
	0<<4 | 1: false, 0<<4 | 2: false, // object actor, counter
	1<<4 | 1: false, 1<<4 | 3: true, // key actor, counter
	2<<4 | 1: false, 2<<4 | 3: true, // id actor, counter
	8<<4 | 1: false, 8<<4 | 3: true, // successor actor, counter
}

// inflaters holds DEFLATE readers for reuse: each holds a 32 KiB window.
var inflaters = sync.Pool{New: func() any { return flate.NewReader(nil) }}

// checkSaved checks that data is exactly one Automerge document chunk
// (what Save produces) whose deflated columns inflate to a bounded size and
// whose operations have known actions, with integer values for increments.
// It does not verify the checksum, which Automerge does.
func checkSaved(data []byte) error {
	h, err := readHeader(data)
	if err != nil {
		return err
	}
	c, budget := &h.rest, int64(maxInflated)
	for _, col := range h.changeCols {
		if _, err := col.data(c, &budget, false); err != nil {
			return err
		}
	}
	kept := make(map[uint64][]byte)
	for _, col := range h.opCols {
		delta, isID := opIDColumns[col.id]
		keep := isID || col.id == colAction || col.id == colValueMeta || col.id == colKeyStr || col.id == colInsert
		b, err := col.data(c, &budget, keep)
		if err != nil {
			return err
		}
		if isID {
			if err := checkOpIDs(b, delta, math.MaxUint32); err != nil {
				return fmt.Errorf("%w: op column %d: %w", ErrCorrupt, col.id>>4, err)
			}
		}
		if keep {
			kept[col.id] = b
		}
	}
	return checkOps(kept)
}

// docHeader is the start of a document chunk, and the cursor at the
// column data that follows it.
type docHeader struct {
	actors             [][]byte
	changeCols, opCols []column
	rest               cursor
}

// readHeader reads a document chunk up to its column data.
func readHeader(data []byte) (docHeader, error) {
	const header = 8 // magic, checksum
	if len(data) < header {
		return docHeader{}, fmt.Errorf("%w: %w", ErrCorrupt, errTruncated)
	}
	c := cursor{b: data[header:]}
	typ := c.byte()
	n := c.uleb()
	if c.err == nil && n != uint64(len(c.b)) {
		return docHeader{}, fmt.Errorf("%w: chunk length %d, %d bytes follow", ErrCorrupt, n, len(c.b))
	}
	if c.err == nil && typ != chunkDocument {
		return docHeader{}, fmt.Errorf("%w: chunk type %d, want a document", ErrCorrupt, typ)
	}
	var h docHeader
	for range c.count(1) {
		h.actors = append(h.actors, c.take(c.uleb()))
	}
	c.take(c.count(32) * 32) // heads
	h.changeCols, h.opCols = c.columns(), c.columns()
	if c.err != nil {
		return docHeader{}, fmt.Errorf("%w: document header: %w", ErrCorrupt, c.err)
	}
	h.rest = c
	return h, nil
}

// checkOps checks every operation's action, that increments carry an
// integer, and that every operation is in an object that an earlier
// operation made (or the root) and keyed as its object's type wants: by a
// string in a map or table, by an element (and only there inserted) in a
// list or text. The linked Automerge loads a document whose map holds an
// inserted element, and aborts on the next write to that map ("can only
// compare map keys"). Operations are stored object by object, each object
// after the one that holds the operation making it.
func checkOps(cols map[uint64][]byte) error {
	actions, meta := rle{c: cursor{b: cols[colAction]}}, rle{c: cursor{b: cols[colValueMeta]}}
	objActor, objCtr := rle{c: cursor{b: cols[colObjActor]}}, rle{c: cursor{b: cols[colObjCtr]}}
	idActor, idCtr := rle{c: cursor{b: cols[colIDActor]}}, rle{c: cursor{b: cols[colIDCtr]}, signed: true}
	keyStr := rle{c: cursor{b: cols[colKeyStr]}, str: true}
	insert := bools{c: cursor{b: cols[colInsert]}}
	type opID struct{ actor, ctr uint64 }
	made := make(map[opID]uint64) // object -> the action that made it
	var ctr int64
	// Operations come object by object: look each object up once.
	var last opID
	lastKind, haveLast := uint64(0), false
	for op := 0; ; op++ {
		action, noAction, ok := actions.next()
		if !ok {
			break
		}
		if op >= maxOps {
			return fmt.Errorf("%w: more than %d operations", ErrTooLarge, maxOps)
		}
		valueMeta, _ := meta.nextOrNull() // a missing value is null: type 0
		switch {
		case noAction:
		case action > maxAction:
			return fmt.Errorf("%w: operation %d has unknown action %d", ErrCorrupt, op, action)
		case action == actionIncrement && valueMeta&0xf != valueUint && valueMeta&0xf != valueInt:
			return fmt.Errorf("%w: operation %d increments by a non-integer", ErrCorrupt, op)
		}
		oa, rootObj := objActor.nextOrNull()
		oc, _ := objCtr.nextOrNull()
		ia, _ := idActor.nextOrNull()
		d, _ := idCtr.nextOrNull()
		ctr += int64(d)
		_, noKey := keyStr.nextOrNull()
		inserted := insert.next()
		kind := uint64(actionMakeMap) // the root
		if obj := (opID{oa, oc}); !rootObj && haveLast && obj == last {
			kind = lastKind
		} else if !rootObj {
			var ok bool
			if kind, ok = made[obj]; !ok {
				return fmt.Errorf("%w: operation %d is in an object no operation made", ErrCorrupt, op)
			}
			last, lastKind, haveLast = obj, kind, true
		}
		if err := checkKey(kind, noKey, inserted); err != nil {
			return fmt.Errorf("%w: operation %d %w", ErrCorrupt, op, err)
		}
		if !noAction && makesObject(action) {
			if len(made) >= maxObjects {
				return fmt.Errorf("%w: more than %d objects", ErrTooLarge, maxObjects)
			}
			made[opID{ia, uint64(ctr)}] = action
		}
	}
	err := errors.Join(actions.c.err, meta.c.err, objActor.c.err, objCtr.c.err, idActor.c.err, idCtr.c.err, keyStr.c.err, insert.c.err)
	if err != nil {
		return fmt.Errorf("%w: op columns: %w", ErrCorrupt, err)
	}
	return nil
}

// checkOpIDs checks that a column of actor indexes or counters (their
// deltas if delta is set) holds no value below 0 or above most, which is
// at most 2^32-1. A run of one repeated value is checked whole, however
// long it claims to be.
func checkOpIDs(col []byte, delta bool, most uint64) error {
	r := rle{c: cursor{b: col}, signed: delta}
	var sum int64
	for {
		v, null, ok := r.next()
		if !ok {
			return r.c.err
		}
		rows := int64(1)
		if !r.literal {
			rows += r.left // the rest of the run repeats this row
			r.left = 0
		}
		if null {
			continue
		}
		if delta {
			d := int64(v)
			if d < -math.MaxUint32 || d > math.MaxUint32 || d != 0 && rows > math.MaxUint32 {
				return fmt.Errorf("%d deltas of %d", rows, d)
			}
			sum += d * rows // within ±2^64 by the bounds above
			if sum < 0 {
				return fmt.Errorf("negative value %d", sum)
			}
			v = uint64(sum)
		}
		if v > most {
			return fmt.Errorf("value %d above %d", v, most)
		}
	}
}

type column struct {
	id      uint64 // spec without the deflate bit
	deflate bool
	len     uint64
}

// columns reads a list of column specs.
func (c *cursor) columns() []column {
	var cols []column
	for range c.count(2) {
		spec, n := c.uleb(), c.uleb()
		cols = append(cols, column{id: spec &^ deflateBit, deflate: spec&deflateBit != 0, len: n})
	}
	return cols
}

// data consumes the column's bytes from c. Deflated data is inflated,
// charged to budget; the bytes are returned only if keep is set.
func (col column) data(c *cursor, budget *int64, keep bool) ([]byte, error) {
	raw := c.take(col.len)
	if c.err != nil {
		return nil, fmt.Errorf("%w: column data: %w", ErrCorrupt, c.err)
	}
	if !col.deflate {
		return raw, nil
	}
	var out bytes.Buffer
	var w io.Writer = io.Discard
	if keep {
		w = &out
	}
	inflater := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(inflater)
	if err := inflater.(flate.Resetter).Reset(bytes.NewReader(raw), nil); err != nil {
		return nil, fmt.Errorf("%w: column %d: %w", ErrCorrupt, col.id>>4, err)
	}
	n, err := io.Copy(w, io.LimitReader(inflater, *budget+1))
	if err != nil {
		return nil, fmt.Errorf("%w: column %d: %w", ErrCorrupt, col.id>>4, err)
	}
	if n > *budget {
		return nil, fmt.Errorf("%w: columns inflate beyond %d bytes", ErrTooLarge, maxInflated)
	}
	*budget -= n
	return out.Bytes(), nil
}

// cursor reads the parts of the storage format, keeping the first error.
type cursor struct {
	b   []byte
	err error
}

func (c *cursor) fail(err error) {
	if c.err == nil {
		c.err = err
	}
	c.b = nil
}

func (c *cursor) byte() byte {
	if len(c.b) == 0 {
		c.fail(errTruncated)
		return 0
	}
	b := c.b[0]
	c.b = c.b[1:]
	return b
}

func (c *cursor) take(n uint64) []byte {
	if n > uint64(len(c.b)) {
		c.fail(errTruncated)
		return nil
	}
	b := c.b[:n]
	c.b = c.b[n:]
	return b
}

// count reads a uLEB count of items at least minSize bytes long each,
// refusing counts the remaining bytes cannot hold.
func (c *cursor) count(minSize uint64) uint64 {
	n := c.uleb()
	if n > uint64(len(c.b))/minSize {
		c.fail(fmt.Errorf("count %d exceeds the data", n))
		return 0
	}
	return n
}

func (c *cursor) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := c.byte()
		if c.err != nil {
			return 0
		}
		if shift == 63 && b > 1 {
			c.fail(errors.New("uLEB128 overflows 64 bits"))
			return 0
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v
		}
	}
}

func (c *cursor) sleb() int64 {
	var v int64
	for shift := uint(0); ; shift += 7 {
		b := c.byte()
		if c.err != nil {
			return 0
		}
		if shift == 63 && b != 0 && b != 0x7f {
			c.fail(errors.New("LEB128 overflows 64 bits"))
			return 0
		}
		v |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			if shift < 57 && b&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v
		}
	}
}

// makesObject reports whether an action makes a map, list, text or table.
func makesObject(action uint64) bool {
	return action == actionMakeMap || action == actionMakeList || action == actionMakeText || action == actionMakeTable
}

// checkKey checks the key of an operation in an object made by the
// action kind: a string in a map or table, an element (which only there
// may be inserted) in a list or text.
func checkKey(kind uint64, noKey, inserted bool) error {
	inMap := kind == actionMakeMap || kind == actionMakeTable
	switch {
	case inMap && (noKey || inserted):
		return errors.New("is a list element in a map")
	case !inMap && !noKey:
		return errors.New("has a map key in a list")
	}
	return nil
}

// rle iterates over a run-length encoded column of uLEB values, of
// signed LEB128 values (returned as their bits) if signed is set, or of
// uLEB-length-prefixed strings (returned as 0) if str is set.
type rle struct {
	c       cursor
	signed  bool
	str     bool
	left    int64 // rows left in the current run
	literal bool  // the run's values are read one by one
	null    bool  // the run is nulls
	val     uint64
}

func (r *rle) value() uint64 {
	switch {
	case r.signed:
		return uint64(r.c.sleb())
	case r.str:
		r.c.take(r.c.uleb())
		return 0
	}
	return r.c.uleb()
}

// nextOrNull returns the next row, null past the end of the column.
func (r *rle) nextOrNull() (val uint64, null bool) {
	val, null, ok := r.next()
	return val, null || !ok
}

// bools iterates over a boolean column: uLEB lengths of alternating runs
// of false and true, false first. Past the end it yields false.
type bools struct {
	c    cursor
	left uint64
	val  bool
	read bool // a run has been read
}

func (b *bools) next() bool {
	for b.left == 0 {
		if len(b.c.b) == 0 {
			return false
		}
		b.left = b.c.uleb()
		b.val = b.read && !b.val
		b.read = true
	}
	b.left--
	return b.val
}

// next returns the next row; ok is false at the end of the column or on
// an error (left in r.c.err).
func (r *rle) next() (val uint64, null, ok bool) {
	for r.left == 0 {
		if len(r.c.b) == 0 {
			return 0, false, false
		}
		n := r.c.sleb()
		switch {
		case n > 0:
			r.left, r.literal, r.null, r.val = n, false, false, r.value()
		case n == 0:
			nulls := r.c.uleb()
			if nulls > math.MaxInt64 {
				r.c.fail(fmt.Errorf("null run of %d", nulls))
			}
			r.left, r.literal, r.null = int64(nulls), false, true
		case n == math.MinInt64:
			r.c.fail(fmt.Errorf("literal run of %d", n))
		default:
			r.left, r.literal, r.null = -n, true, false
		}
		if r.c.err != nil {
			return 0, false, false
		}
	}
	r.left--
	switch {
	case r.null:
		return 0, true, true
	case r.literal:
		v := r.value()
		return v, false, r.c.err == nil
	}
	return r.val, false, true
}
