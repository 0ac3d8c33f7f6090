package crdt

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/automerge/automerge-go"
)

// MaxDocSize is the largest serialised document LoadMemoryDoc and
// LoadEdgeDoc accept.
const MaxDocSize = 16 << 20

// schemaVersion is the document layout version, stored under keySchema.
// Documents with a newer version are refused.
const schemaVersion = 1

// Root keys every document has.
const (
	keyType   = "type"   // typeMemory or typeEdge
	keySchema = "schema" // int64 schemaVersion
	keyID     = "id"
)

// Values of keyType.
const (
	typeMemory = "memory"
	typeEdge   = "edge"
	typeMesh   = "mesh"
)

// magic starts every serialised Automerge document.
var magic = []byte{0x85, 0x6f, 0x4a, 0x83}

// document is what memory and edge documents share: the Automerge document,
// whether it has uncommitted operations, and an estimate of the C memory it
// holds (see release.go).
type document struct {
	am    *automerge.Doc
	dirty bool
	cost  int64
}

func newDocument(actor string) (document, error) {
	if err := checkActor(actor); err != nil {
		return document{}, err
	}
	am := automerge.New()
	if err := am.SetActorID(actor); err != nil {
		return document{}, fmt.Errorf("%w: %w", ErrInvalidActor, err)
	}
	return document{am: am, cost: docOverhead}, nil
}

// loadDocument checks data before Automerge sees it (Automerge aborts the
// process on some bad input; see checkSaved), loads it, and checks that it
// is a document of type typ with a schema version and a valid id.
func loadDocument(actor, typ string, data []byte) (document, error) {
	if err := checkActor(actor); err != nil {
		return document{}, err
	}
	if err := checkBytes(data); err != nil {
		return document{}, err
	}
	am, err := automerge.Load(data)
	if err != nil {
		return document{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	d := document{am: am, cost: docOverhead + loadedByteCost*int64(len(data))}
	if err := d.checkRoot(typ); err != nil {
		d.close()
		return document{}, err
	}
	if err := am.SetActorID(actor); err != nil {
		d.close()
		return document{}, fmt.Errorf("%w: %w", ErrInvalidActor, err)
	}
	return d, nil
}

// checkBytes checks a saved document before Automerge sees it: its size,
// its magic, and the format checks of checkSaved.
func checkBytes(data []byte) error {
	switch {
	case len(data) == 0:
		return ErrEmpty
	case len(data) > MaxDocSize:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxDocSize)
	case !bytes.HasPrefix(data, magic):
		return ErrNotAutomerge
	}
	return checkSaved(data)
}

func (d *document) checkRoot(typ string) error {
	root := d.am.RootMap()
	v, err := root.Get(keyType)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if v.Kind() != automerge.KindStr {
		return fmt.Errorf("%w: no type, want %q", ErrWrongType, typ)
	}
	if v.Str() != typ {
		return fmt.Errorf("%w: %q, want %q", ErrWrongType, v.Str(), typ)
	}
	v, err = root.Get(keySchema)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if v.Kind() != automerge.KindInt64 || v.Int64() < 1 || v.Int64() > schemaVersion {
		return fmt.Errorf("%w: %v, want 1..%d", ErrSchemaVersion, v.Interface(), schemaVersion)
	}
	id, err := d.id()
	if err != nil {
		return err
	}
	if !ValidID(id) {
		return fmt.Errorf("%w: id %q", ErrMalformed, id)
	}
	return nil
}

// id returns the document's id field.
func (d *document) id() (string, error) {
	if d.am == nil {
		return "", ErrClosed
	}
	v, err := d.am.RootMap().Get(keyID)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if v.Kind() != automerge.KindStr {
		return "", fmt.Errorf("%w: id is %v", ErrMalformed, v.Kind())
	}
	return v.Str(), nil
}

func (d *document) commit(msg string) error {
	if d.am == nil {
		return ErrClosed
	}
	if !d.dirty {
		return nil
	}
	if err := checkText("commit message", msg); err != nil {
		return err
	}
	if _, err := d.am.Commit(msg); err != nil {
		return fmt.Errorf("crdt: commit: %w", err)
	}
	d.dirty = false
	return nil
}

// heads returns the heads as sorted hex strings. Automerge commits pending
// operations (without a message) before it reads heads, saves, forks or
// merges, so heads, save, fork and merge clear dirty.
func (d *document) heads() []string {
	if d.am == nil {
		return nil
	}
	hs := d.am.Heads()
	d.dirty = false
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	slices.Sort(out)
	return out
}

func (d *document) save() []byte {
	if d.am == nil {
		return nil
	}
	b := d.am.Save()
	d.dirty = false
	// Automerge keeps its own copy of b until a finalizer frees it.
	noteGarbage(int64(len(b)))
	return b
}

func (d *document) fork(actor string) (document, error) {
	if d.am == nil {
		return document{}, ErrClosed
	}
	if err := checkActor(actor); err != nil {
		return document{}, err
	}
	am, err := d.am.Fork()
	if err != nil {
		return document{}, fmt.Errorf("crdt: fork: %w", err)
	}
	d.dirty = false
	f := document{am: am, cost: d.cost}
	if err := am.SetActorID(actor); err != nil {
		f.close()
		return document{}, fmt.Errorf("%w: %w", ErrInvalidActor, err)
	}
	return f, nil
}

// merge applies the changes of o that d lacks. Both must have the same id.
// Automerge refuses changes that cannot be merged (the same actor and
// sequence number on two different changes: two copies that edited as
// one actor) only when it reaches them, after applying the ones before,
// so on such an error d holds part of o and is closed.
func (d *document) merge(o *document) error {
	if d.am == nil || o.am == nil {
		return ErrClosed
	}
	if d.am == o.am {
		return nil
	}
	id, err := d.id()
	if err != nil {
		return err
	}
	oid, err := o.id()
	if err != nil {
		return err
	}
	if id != oid {
		return fmt.Errorf("%w: %s and %s", ErrIDMismatch, id, oid)
	}
	// Automerge commits the pending operations of both documents first,
	// whether the merge succeeds or not.
	_, err = d.am.Merge(o.am)
	d.dirty, o.dirty = false, false
	if err != nil {
		d.close()
		return fmt.Errorf("%w: %w", ErrUnmergeable, err)
	}
	d.cost = max(d.cost, o.cost)
	return nil
}

// close drops the Automerge document and counts its memory as garbage.
func (d *document) close() {
	if d.am == nil {
		return
	}
	d.am = nil
	noteGarbage(d.cost)
}
