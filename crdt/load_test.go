package crdt

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/memmesh/memmesh/model"
)

// rawDoc saves an Automerge document whose root holds fields, bypassing
// this package's checks.
func rawDoc(tb testing.TB, fields map[string]any) []byte {
	tb.Helper()
	d := automerge.New()
	for k, v := range fields {
		if err := d.RootMap().Set(k, v); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := d.Commit("raw"); err != nil {
		tb.Fatal(err)
	}
	return d.Save()
}

func savedMemory(tb testing.TB) []byte {
	tb.Helper()
	return newTestDoc(tb, actorA, testMemory()).Save()
}

func savedEdge(tb testing.TB) []byte {
	tb.Helper()
	return newTestEdge(tb, actorA, testEdge()).Save()
}

// withChecksum returns a copy of data with the checksum of its first chunk
// recomputed (the first 4 bytes of sha256 over chunk type, length and
// contents), or nil if data has no complete chunk header. Automerge
// refuses a chunk with a bad checksum before parsing it, so fuzzed bytes
// need this to reach the parser.
func withChecksum(data []byte) []byte {
	const header = 9 // magic, checksum, chunk type
	if len(data) <= header || !bytes.HasPrefix(data, magic) {
		return nil
	}
	n, k := binary.Uvarint(data[header:])
	if k <= 0 || n > uint64(len(data)-header-k) {
		return nil
	}
	sum := sha256.Sum256(data[header-1 : header+k+int(n)])
	out := slices.Clone(data)
	copy(out[4:8], sum[:4])
	return out
}

func TestWithChecksum(t *testing.T) {
	saved := savedMemory(t)
	if got := withChecksum(saved); !bytes.Equal(got, saved) {
		t.Fatal("withChecksum changed a valid document: the checksum layout is wrong")
	}
}

func TestLoadMemoryDocRejects(t *testing.T) {
	valid := savedMemory(t)
	flipped := slices.Clone(valid)
	flipped[len(flipped)-10] ^= 0x40
	oversized := append(slices.Clone(magic), make([]byte, MaxDocSize)...)
	memoryFields := func(change func(map[string]any)) map[string]any {
		f := map[string]any{keyType: typeMemory, keySchema: int64(schemaVersion), keyID: NewID()}
		change(f)
		return f
	}

	tests := []struct {
		name  string
		actor string
		data  []byte
		want  error
	}{
		{"nil", actorA, nil, ErrEmpty},
		{"empty", actorA, []byte{}, ErrEmpty},
		{"oversized", actorA, oversized, ErrTooLarge},
		{"garbage", actorA, []byte("definitely not a document"), ErrNotAutomerge},
		{"json", actorA, []byte(`{"type":"memory"}`), ErrNotAutomerge},
		{"magic only", actorA, slices.Clone(magic), ErrCorrupt},
		{"truncated", actorA, valid[:len(valid)/2], ErrCorrupt},
		{"one byte short", actorA, valid[:len(valid)-1], ErrCorrupt},
		{"bit flipped", actorA, flipped, ErrCorrupt},
		{"trailing bytes", actorA, append(slices.Clone(valid), 1, 2, 3), ErrCorrupt},
		{"edge document", actorA, savedEdge(t), ErrWrongType},
		{"untyped document", actorA, rawDoc(t, map[string]any{"title": "x"}), ErrWrongType},
		{"type not a string", actorA, rawDoc(t, memoryFields(func(f map[string]any) { f[keyType] = int64(1) })), ErrWrongType},
		{"no schema", actorA, rawDoc(t, memoryFields(func(f map[string]any) { delete(f, keySchema) })), ErrSchemaVersion},
		{"newer schema", actorA, rawDoc(t, memoryFields(func(f map[string]any) { f[keySchema] = int64(schemaVersion + 1) })), ErrSchemaVersion},
		{"schema not an int", actorA, rawDoc(t, memoryFields(func(f map[string]any) { f[keySchema] = "1" })), ErrSchemaVersion},
		{"bad id", actorA, rawDoc(t, memoryFields(func(f map[string]any) { f[keyID] = "x" })), ErrMalformed},
		{"no id", actorA, rawDoc(t, memoryFields(func(f map[string]any) { delete(f, keyID) })), ErrMalformed},
		{"bad actor", "not hex", valid, ErrInvalidActor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := LoadMemoryDoc(tt.actor, tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if d != nil {
				t.Error("got a document with the error")
			}
		})
	}
}

func TestMaterializeMalformed(t *testing.T) {
	base := map[string]any{
		keyType: typeMemory, keySchema: int64(schemaVersion), keyID: NewID(),
		keyTier: string(model.TierAuto), keyStatus: string(model.StatusActive),
	}
	tests := []struct {
		name  string
		key   string
		value any
	}{
		{"title not a string", keyTitle, int64(3)},
		{"confidence out of range", keyConfidence, 7.0},
		{"unknown tier", keyTier, "god"},
		{"unknown status", keyStatus, "gone"},
		{"compacted without target", keyStatus, "compacted"},
		{"target on active", keyStatus, "active:" + NewID()},
		{"tags not a map", keyTags, "a,b"},
		{"no revisions", keyRevisions, map[string]any{}},
		{"revision not a map", keyRevisions, map[string]any{NewID(): "text"}},
		{"bad revision id", keyRevisions, map[string]any{"r1": map[string]any{keyText: "x"}}},
		{"revision text not a string", keyRevisions, map[string]any{NewID(): map[string]any{keyText: int64(1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields := maps.Clone(base)
			fields[tt.key] = tt.value
			d, err := LoadMemoryDoc(actorA, rawDoc(t, fields))
			if err != nil {
				t.Fatalf("LoadMemoryDoc: %v", err)
			}
			defer d.Close()
			if _, err := d.Materialize(); !errors.Is(err, ErrMalformed) {
				t.Errorf("Materialize: err = %v, want %v", err, ErrMalformed)
			}
		})
	}
}

// loadErrors are the errors LoadMemoryDoc may return for bad bytes.
var loadErrors = []error{ErrEmpty, ErrTooLarge, ErrNotAutomerge, ErrCorrupt, ErrWrongType, ErrSchemaVersion, ErrMalformed}

func FuzzLoadMemoryDoc(f *testing.F) {
	d, err := NewMemoryDoc(actorA, testMemory())
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	other, err := d.Fork(actorB)
	if err != nil {
		f.Fatal(err)
	}
	defer other.Close()
	for _, doc := range []*MemoryDoc{d, other} {
		if _, err := doc.AppendRevision("edited", "dev", "", time.Now()); err != nil {
			f.Fatal(err)
		}
		if err := doc.AddTags("fuzz"); err != nil {
			f.Fatal(err)
		}
	}
	if err := d.Merge(other); err != nil {
		f.Fatal(err)
	}
	valid := d.Save()
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(savedEdge(f))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		loadAndUse(t, data)
		if fixed := withChecksum(data); fixed != nil {
			loadAndUse(t, fixed)
		}
	})
}

// loadAndUse loads data and, if it is a readable memory, edits, saves and
// reloads it: none of which may crash, and a readable memory must stay
// readable.
func loadAndUse(t *testing.T, data []byte) {
	d, err := LoadMemoryDoc(actorA, data)
	if err != nil {
		if !slices.ContainsFunc(loadErrors, func(e error) bool { return errors.Is(err, e) }) {
			t.Fatalf("LoadMemoryDoc: unexpected error %v", err)
		}
		return
	}
	defer d.Close()
	if _, err := d.Materialize(); err != nil {
		return
	}
	rev, err := d.AppendRevision("fuzzed", "dev", "", time.Now())
	if err != nil {
		t.Fatalf("AppendRevision on a readable memory: %v", err)
	}
	if err := d.Commit("fuzz"); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	again, err := LoadMemoryDoc(actorB, d.Save())
	if err != nil {
		t.Fatalf("reloading a saved memory: %v", err)
	}
	defer again.Close()
	m, err := again.Materialize()
	if err != nil {
		t.Fatalf("Materialize after reload: %v", err)
	}
	if m.Content != rev.Text || m.Conflict != nil {
		t.Fatalf("after an edit: Content %q, Conflict %v; want %q and no conflict", m.Content, m.Conflict, rev.Text)
	}
}
