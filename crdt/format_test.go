package crdt

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
)

// opColumn returns where the data of op column id starts in a saved
// document, and the column.
func opColumn(tb testing.TB, data []byte, id uint64) (int, column) {
	tb.Helper()
	c := cursor{b: data[8:]}
	c.byte()
	c.uleb()
	for range c.count(1) {
		c.take(c.uleb())
	}
	c.take(c.count(32) * 32)
	changeCols, opCols := c.columns(), c.columns()
	for _, col := range changeCols {
		c.take(col.len)
	}
	for _, col := range opCols {
		if col.id == id {
			return len(data) - len(c.b), col
		}
		c.take(col.len)
	}
	tb.Fatalf("no op column %#x (parse error: %v)", id, c.err)
	return 0, column{}
}

// oneOpDoc saves a document holding one operation, a set of "a" to "x"
// (its action column is the literal run 0x7f 0x01).
func oneOpDoc(tb testing.TB) []byte {
	tb.Helper()
	d := automerge.New()
	must(tb, d.SetActorID("01"))
	must(tb, d.RootMap().Set("a", "x"))
	if _, err := d.Commit("", automerge.CommitOptions{Time: &time.Time{}}); err != nil {
		tb.Fatal(err)
	}
	return d.Save()
}

// withAction returns oneOpDoc with the operation's action replaced and the
// checksum fixed: a document only this package's checks stand between and
// an abort in Automerge.
func withAction(tb testing.TB, action byte) []byte {
	tb.Helper()
	data := oneOpDoc(tb)
	at, col := opColumn(tb, data, colAction)
	if col.deflate || !bytes.Equal(data[at:at+2], []byte{0x7f, 0x01}) {
		tb.Fatalf("unexpected action column % x", data[at:at+int(col.len)])
	}
	data[at+1] = action
	return withChecksum(data)
}

func TestCheckSavedAccepts(t *testing.T) {
	conflicted := newTestDoc(t, actorA, testMemory())
	other := fork(t, conflicted, actorB)
	for i, d := range []*MemoryDoc{conflicted, other} {
		for j := range 20 {
			_, err := d.AppendRevision(fmt.Sprintf("edit %d on %d: %s", j, i, strings.Repeat("ünïcode ", 50)), "dev", "agent/1", time.Now())
			must(t, err)
			must(t, d.AddTags(fmt.Sprintf("tag-%d-%d", i, j)))
			must(t, d.Commit("edit"))
		}
	}
	must(t, conflicted.Merge(other))

	big := testMemory()
	big.Content = strings.Repeat("Large memory content. ", 50000)

	raw := automerge.New()
	counter := automerge.NewCounter(0)
	must(t, raw.RootMap().Set("counter", counter))
	must(t, counter.Inc(3))
	must(t, counter.Inc(-1))
	// Ops are stored in key order: alternate the actions in that order, so
	// that the action column is a literal run long enough to be deflated.
	for i := range 800 {
		key := fmt.Sprintf("k%04d", i)
		if i%2 == 0 {
			must(t, raw.RootMap().Set(key, automerge.NewMap()))
		} else {
			must(t, raw.RootMap().Set(key, "v"))
		}
	}
	must(t, raw.Path("list").Set([]any{1, "two", 3.0, true, nil}))
	must(t, raw.RootMap().Set("text", automerge.NewText("hello")))
	must(t, raw.RootMap().Delete("k0001"))
	if _, err := raw.Commit("raw"); err != nil {
		t.Fatal(err)
	}
	rawSaved := raw.Save()
	if _, col := opColumn(t, rawSaved, colAction); !col.deflate {
		t.Fatal("the action column of the raw document is not deflated; the test needs more operations")
	}

	tests := []struct {
		name string
		data []byte
	}{
		{"one operation", oneOpDoc(t)},
		{"new memory", savedMemory(t)},
		{"conflicted memory", conflicted.Save()},
		{"large memory", newTestDoc(t, actorA, big).Save()},
		{"edge", savedEdge(t)},
		{"counters, lists, text, deflated actions", rawSaved},
		{"empty document", automerge.New().Save()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkSaved(tt.data); err != nil {
				t.Fatalf("checkSaved: %v", err)
			}
			if _, err := automerge.Load(tt.data); err != nil {
				t.Fatalf("automerge.Load: %v", err)
			}
		})
	}
}

// deflatedColumnDoc returns a document chunk with one deflated change
// column holding mib MiB of zeros once inflated.
func deflatedColumnDoc(tb testing.TB, mib int) []byte {
	tb.Helper()
	// Compress one MiB of zeros into a non-final block, and repeat it: the
	// block only refers back to zeros, so each copy inflates to one MiB.
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	must(tb, err)
	_, err = w.Write(make([]byte, 1<<20))
	must(tb, err)
	must(tb, w.Flush())
	block := bytes.Clone(buf.Bytes())
	buf.Reset()
	must(tb, w.Close())
	col := bytes.NewBuffer(slices.Concat(bytes.Repeat(block, mib), buf.Bytes()))
	spec := uint64(0<<4 | deflateBit | 1)
	var body []byte
	body = append(body, 1, 1, 0x01) // one actor, one byte long
	body = append(body, 0)          // no heads
	body = appendUleb(body, 1)      // one change column
	body = appendUleb(body, spec)
	body = appendUleb(body, uint64(col.Len()))
	body = append(body, 0) // no op columns
	body = append(body, col.Bytes()...)
	return chunk(chunkDocument, body)
}

func appendUleb(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func chunk(typ byte, body []byte) []byte {
	out := slices.Concat(magic, []byte{0, 0, 0, 0, typ}, appendUleb(nil, uint64(len(body))), body)
	return withChecksum(out)
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// cell is one row of an integer column.
type cell struct {
	null bool
	v    int64
}

// decodeColumn decodes an uncompressed integer column, of deltas if delta
// is set (returned as the values they add up to).
func decodeColumn(tb testing.TB, col []byte, delta bool) []cell {
	tb.Helper()
	r := rle{c: cursor{b: col}, signed: delta}
	var out []cell
	var sum int64
	for {
		v, null, ok := r.next()
		if !ok {
			break
		}
		if !null && delta {
			sum += int64(v)
			v = uint64(sum)
		}
		out = append(out, cell{null, int64(v)})
	}
	must(tb, r.c.err)
	return out
}

// encodeColumn encodes cells as decodeColumn decodes them, in literal and
// null runs.
func encodeColumn(cells []cell, delta bool) []byte {
	var b []byte
	var prev int64
	for i := 0; i < len(cells); {
		j := i
		for j < len(cells) && cells[j].null == cells[i].null {
			j++
		}
		if cells[i].null {
			b = appendUleb(appendSleb(b, 0), uint64(j-i))
		} else {
			b = appendSleb(b, -int64(j-i))
			for _, c := range cells[i:j] {
				if delta {
					b = appendSleb(b, c.v-prev)
					prev = c.v
				} else {
					b = appendUleb(b, uint64(c.v))
				}
			}
		}
		i = j
	}
	return b
}

// withOpColumn returns a document chunk with op column id of data (which
// must not be deflated) changed by edit, and the checksum fixed: the
// bytes a peer could send, which only this package's checks stand between
// and Automerge.
func withOpColumn(tb testing.TB, data []byte, id uint64, edit func([]cell)) []byte {
	tb.Helper()
	c := cursor{b: data[8:]}
	c.byte()
	c.uleb()
	start := c.b
	for range c.count(1) {
		c.take(c.uleb())
	}
	c.take(c.count(32) * 32)
	header := slices.Clone(start[:len(start)-len(c.b)])
	changeCols, opCols := c.columns(), c.columns()
	var specs, body []byte
	for k, cols := range [][]column{changeCols, opCols} {
		specs = appendUleb(specs, uint64(len(cols)))
		for _, col := range cols {
			b := c.take(col.len)
			if k == 1 && col.id == id {
				if col.deflate {
					tb.Fatalf("op column %#x is deflated", id)
				}
				delta := opIDColumns[id]
				cells := decodeColumn(tb, b, delta)
				edit(cells)
				b = encodeColumn(cells, delta)
			}
			spec := col.id
			if col.deflate {
				spec |= deflateBit
			}
			specs = appendUleb(appendUleb(specs, spec), uint64(len(b)))
			body = append(body, b...)
		}
	}
	must(tb, c.err)
	return chunk(chunkDocument, slices.Concat(header, specs, body, c.b))
}

// idsDoc saves a document with operation ids in every column that holds
// them: a list in the root (an object), two insertions (the second after
// the first: a key), and a value set twice (a successor).
func idsDoc(tb testing.TB) []byte {
	tb.Helper()
	d := automerge.New()
	must(tb, d.SetActorID("01"))
	must(tb, d.RootMap().Set("l", []any{"x", "y"}))
	must(tb, d.RootMap().Set("a", "1"))
	if _, err := d.Commit("", automerge.CommitOptions{Time: &time.Time{}}); err != nil {
		tb.Fatal(err)
	}
	must(tb, d.RootMap().Set("a", "2"))
	if _, err := d.Commit("", automerge.CommitOptions{Time: &time.Time{}}); err != nil {
		tb.Fatal(err)
	}
	return d.Save()
}

// setLast sets the last non-null cell of a column to v.
func setLast(v int64) func([]cell) {
	return func(cells []cell) {
		for i := len(cells) - 1; i >= 0; i-- {
			if !cells[i].null {
				cells[i].v = v
				return
			}
		}
		panic("no value in the column")
	}
}

func TestCheckSavedRejects(t *testing.T) {
	valid := oneOpDoc(t)
	change := func() []byte {
		d := automerge.New()
		must(t, d.RootMap().Set("a", "x"))
		changes, err := d.Changes()
		must(t, err)
		return changes[0].Save()
	}()

	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"unknown action", withAction(t, 9), ErrCorrupt},
		{"action beyond a byte", withAction(t, 0x80), ErrCorrupt},
		{"increment by a string", withAction(t, actionIncrement), ErrCorrupt},
		{"change chunk", change, ErrCorrupt},
		{"document and change chunk", slices.Concat(valid, change), ErrCorrupt},
		{"trailing byte", append(slices.Clone(valid), 0), ErrCorrupt},
		{"header only", valid[:8], ErrCorrupt},
		{"no length", valid[:9], ErrCorrupt},
		{"huge actor count", chunk(chunkDocument, appendUleb(nil, 1<<40)), ErrCorrupt},
		{"column past the end", chunk(chunkDocument, []byte{0, 0, 1, 0x42, 50, 0}), ErrCorrupt},
		{"decompression bomb", deflatedColumnDoc(t, maxInflated>>20+1), ErrTooLarge},
	}
	// Automerge aborts on an operation id whose actor index or counter
	// does not fit 32 bits.
	ids := idsDoc(t)
	for name, col := range map[string]uint64{
		"object actor": 0<<4 | 1, "object counter": 0<<4 | 2,
		"key actor": 1<<4 | 1, "key counter": 1<<4 | 3,
		"operation actor": 2<<4 | 1, "operation counter": 2<<4 | 3,
		"successor actor": 8<<4 | 1, "successor counter": 8<<4 | 3,
	} {
		tests = append(tests, struct {
			name string
			data []byte
			want error
		}{name + " beyond 32 bits", withOpColumn(t, ids, col, setLast(1<<32)), ErrCorrupt})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkSaved(tt.data); !errors.Is(err, tt.want) {
				t.Fatalf("checkSaved: err = %v, want %v", err, tt.want)
			}
			if _, err := LoadMemoryDoc(actorA, tt.data); !errors.Is(err, tt.want) {
				t.Errorf("LoadMemoryDoc: err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestCheckSavedOpIDsFit: ids up to 2^32-1 pass the check (Automerge
// refuses the ones that do not fit the document with an error); the
// column rewriting the tests rely on changes nothing by itself.
func TestCheckSavedOpIDsFit(t *testing.T) {
	ids := idsDoc(t)
	for col := range opIDColumns {
		same := withOpColumn(t, ids, col, func([]cell) {})
		if _, err := LoadMemoryDoc(actorA, same); !errors.Is(err, ErrWrongType) {
			t.Errorf("column %#x rewritten as it was: %v, want %v", col, err, ErrWrongType)
		}
		if col == colObjActor || col == colObjCtr {
			continue // the id then names no object (TestCheckSavedObjects)
		}
		if err := checkSaved(withOpColumn(t, ids, col, setLast(1<<32-1))); err != nil {
			t.Errorf("column %#x at 2^32-1: %v", col, err)
		}
	}
}

// TestCheckSavedObjects: an operation must be in an object an operation
// made, keyed as the object's type wants. (TestMergeElementInMap shows the
// abort such a document leads to.)
func TestCheckSavedObjects(t *testing.T) {
	d := automerge.New()
	must(t, d.SetActorID("01"))
	must(t, d.RootMap().Set("l", []any{"x", "y"}))
	must(t, d.RootMap().Set("m", map[string]any{"k": "v"}))
	must(t, d.RootMap().Set("t", automerge.NewText("ab")))
	if _, err := d.Commit("", automerge.CommitOptions{Time: &time.Time{}}); err != nil {
		t.Fatal(err)
	}
	objects := d.Save()
	if err := checkSaved(objects); err != nil {
		t.Fatalf("checkSaved of a map, a list and a text: %v", err)
	}
	// replace turns the first action from into to.
	replace := func(from, to int64) func([]cell) {
		return func(cells []cell) {
			i := slices.IndexFunc(cells, func(c cell) bool { return !c.null && c.v == from })
			cells[i].v = to
		}
	}
	for name, data := range map[string][]byte{
		"elements in a map":      withOpColumn(t, objects, colAction, replace(actionMakeList, actionMakeMap)),
		"elements in a table":    withOpColumn(t, objects, colAction, replace(actionMakeText, actionMakeTable)),
		"a map key in a list":    withOpColumn(t, objects, colAction, replace(actionMakeMap, actionMakeList)),
		"an object nothing made": withOpColumn(t, objects, colObjCtr, setLast(99)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := checkSaved(data); !errors.Is(err, ErrCorrupt) {
				t.Errorf("checkSaved: err = %v, want %v", err, ErrCorrupt)
			}
		})
	}
}

func TestCheckOpIDs(t *testing.T) {
	tests := []struct {
		name  string
		col   []byte
		delta bool
		ok    bool
	}{
		{"empty", nil, false, true},
		{"nulls then values", encodeColumn([]cell{{null: true}, {v: 1<<32 - 1}}, false), false, true},
		{"a huge null run", slices.Concat(appendSleb(nil, 0), appendUleb(nil, 1<<62)), false, true},
		{"a value beyond 32 bits", encodeColumn([]cell{{v: 1}, {v: 1 << 32}}, false), false, false},
		{"deltas adding up to 2^32-1", encodeColumn([]cell{{v: 1 << 31}, {v: 1<<32 - 1}}, true), true, true},
		{"deltas adding up beyond", encodeColumn([]cell{{v: 1 << 31}, {v: 1 << 32}}, true), true, false},
		{"deltas going negative", encodeColumn([]cell{{v: 5}, {v: -1}}, true), true, false},
		{"a repeated delta", slices.Concat(appendSleb(nil, 3), appendSleb(nil, 1<<31)), true, false},
		{"a repeated delta within bounds", slices.Concat(appendSleb(nil, 3), appendSleb(nil, 1<<30)), true, true},
		{"a huge run of one value", slices.Concat(appendSleb(nil, 1<<62), appendUleb(nil, 1)), false, true},
		{"a huge run of a zero delta", slices.Concat(appendSleb(nil, 1<<62), appendSleb(nil, 0)), true, true},
		{"a huge run of a delta", slices.Concat(appendSleb(nil, 1<<62), appendSleb(nil, 1)), true, false},
		{"a huge run of a value beyond 32 bits", slices.Concat(appendSleb(nil, 1<<62), appendUleb(nil, 1<<32)), false, false},
		{"a huge delta", slices.Concat(appendSleb(nil, -1), appendSleb(nil, math.MinInt64)), true, false},
		{"truncated", []byte{0x7f}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkOpIDs(tt.col, tt.delta, math.MaxUint32); (err == nil) != tt.ok {
				t.Errorf("checkOpIDs(% x) = %v, want ok %v", tt.col, err, tt.ok)
			}
		})
	}
}

func TestCheckSavedSmallDeflatedColumn(t *testing.T) {
	if err := checkSaved(deflatedColumnDoc(t, 1)); err != nil {
		t.Errorf("checkSaved: %v", err)
	}
}

func TestLEB128(t *testing.T) {
	tests := []struct {
		in      []byte
		signed  int64
		sErr    bool
		usigned uint64
		uErr    bool
	}{
		{[]byte{0x00}, 0, false, 0, false},
		{[]byte{0x7f}, -1, false, 127, false},
		{[]byte{0x3f}, 63, false, 63, false},
		{[]byte{0x40}, -64, false, 64, false},
		{[]byte{0x80, 0x01}, 128, false, 128, false},
		{[]byte{0xff, 0x7e}, -129, false, 16255, false},
		{[]byte{0x80}, 0, true, 0, true},
		{slices.Concat(bytes.Repeat([]byte{0xff}, 9), []byte{0x01}), 0, true, 1<<64 - 1, false},
		{slices.Concat(bytes.Repeat([]byte{0xff}, 9), []byte{0x7f}), -1, false, 0, true},
		{bytes.Repeat([]byte{0x80}, 11), 0, true, 0, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("% x", tt.in), func(t *testing.T) {
			c := cursor{b: tt.in}
			if got := c.sleb(); (c.err != nil) != tt.sErr || (!tt.sErr && got != tt.signed) {
				t.Errorf("sleb = %d, %v; want %d, error %v", got, c.err, tt.signed, tt.sErr)
			}
			c = cursor{b: tt.in}
			if got := c.uleb(); (c.err != nil) != tt.uErr || (!tt.uErr && got != tt.usigned) {
				t.Errorf("uleb = %d, %v; want %d, error %v", got, c.err, tt.usigned, tt.uErr)
			}
		})
	}
}
