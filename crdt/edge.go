package crdt

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memmesh/memmesh/model"
)

// Root keys of an edge document, besides keyType, keySchema, keyID,
// keyCreatedAt and keyUpdatedAt.
const (
	keyFrom     = "from"
	keyRel      = "rel"
	keyTo       = "to"
	keyNotes    = "notes"
	keyStrength = "strength"
	keyOrigin   = "origin"
	keyValidity = "validity" // see validityValue
	keyDeleted  = "deleted"
)

// EdgeDoc is the Automerge document of one edge. It is not safe for
// concurrent use. Setters record operations; Commit turns them into one
// change. After Close the document must not be used.
type EdgeDoc struct {
	document
}

// NewEdgeDoc creates the document of e and commits it as one change.
// e.ID must be EdgeID(e.From, e.Rel, e.To); e.Heads is ignored.
func NewEdgeDoc(actor string, e *model.Edge) (*EdgeDoc, error) {
	if err := checkEdge(e); err != nil {
		return nil, err
	}
	base, err := newDocument(actor)
	if err != nil {
		return nil, err
	}
	d := &EdgeDoc{base}
	err = d.init(d.am.RootMap(),
		field{keyType, typeEdge},
		field{keySchema, int64(schemaVersion)},
		field{keyID, e.ID},
		field{keyFrom, e.From},
		field{keyRel, e.Rel},
		field{keyTo, e.To},
		field{keyNotes, e.Notes},
		field{keyStrength, e.Strength},
		field{keyOrigin, e.Origin},
		field{keyValidity, validityValue(e.ValidFrom, e.ValidTo)},
		field{keyDeleted, e.Deleted},
		field{keyCreatedAt, millis(e.CreatedAt)},
		field{keyUpdatedAt, millis(e.UpdatedAt)},
	)
	if err == nil {
		err = d.Commit("create")
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// LoadEdgeDoc loads a saved edge document, with the same checks as
// LoadMemoryDoc; in addition the id must match the endpoints.
func LoadEdgeDoc(actor string, data []byte) (*EdgeDoc, error) {
	base, err := loadDocument(actor, typeEdge, data)
	if err != nil {
		return nil, err
	}
	d := &EdgeDoc{base}
	if _, err := d.Materialize(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// SetNotes sets the notes.
func (d *EdgeDoc) SetNotes(s string) error {
	if err := checkText(keyNotes, s); err != nil {
		return err
	}
	return d.putRoot(field{keyNotes, s})
}

// SetStrength sets the strength, which must be in [0, 1].
func (d *EdgeDoc) SetStrength(s float64) error {
	if err := checkUnit("strength", s); err != nil {
		return err
	}
	return d.putRoot(field{keyStrength, s})
}

// SetValidity sets when the edge holds; a zero time leaves that end open.
func (d *EdgeDoc) SetValidity(from, to time.Time) error {
	if err := checkValidity(from, to); err != nil {
		return err
	}
	return d.putRoot(field{keyValidity, validityValue(from, to)})
}

// validityValue encodes both ends of the validity as one value, "<from>,<to>"
// in Unix milliseconds (0 for an open end; "" when both are), so that
// concurrent changes merge to one replica's interval rather than a mix.
func validityValue(from, to time.Time) string {
	if from.IsZero() && to.IsZero() {
		return ""
	}
	return strconv.FormatInt(millis(from), 10) + "," + strconv.FormatInt(millis(to), 10)
}

func parseValidity(v string) (from, to time.Time, err error) {
	if v == "" {
		return time.Time{}, time.Time{}, nil
	}
	f, t, ok := strings.Cut(v, ",")
	fms, err1 := strconv.ParseInt(f, 10, 64)
	tms, err2 := strconv.ParseInt(t, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: validity %q", ErrMalformed, v)
	}
	return fromMillis(fms), fromMillis(tms), nil
}

// SetDeleted sets the deleted flag.
func (d *EdgeDoc) SetDeleted(b bool) error { return d.putRoot(field{keyDeleted, b}) }

// SetUpdated sets updated_at.
func (d *EdgeDoc) SetUpdated(at time.Time) error { return d.putRoot(field{keyUpdatedAt, millis(at)}) }

// Commit turns the operations made since the last commit into one change
// with message msg. It does nothing if there are none.
func (d *EdgeDoc) Commit(msg string) error { return d.commit(msg) }

// Materialize returns the edge as a plain value, with Heads sorted.
// Pending operations are committed first, without a message.
func (d *EdgeDoc) Materialize() (model.Edge, error) {
	if d.am == nil {
		return model.Edge{}, ErrClosed
	}
	var r reader
	root := r.all(d.am.RootMap())
	e := model.Edge{
		ID:        r.str(root, keyID),
		From:      r.str(root, keyFrom),
		Rel:       r.str(root, keyRel),
		To:        r.str(root, keyTo),
		Notes:     r.str(root, keyNotes),
		Strength:  r.float(root, keyStrength),
		Origin:    r.str(root, keyOrigin),
		Deleted:   r.bool(root, keyDeleted),
		CreatedAt: r.time(root, keyCreatedAt),
		UpdatedAt: r.time(root, keyUpdatedAt),
	}
	validity := r.str(root, keyValidity)
	if err := r.done(); err != nil {
		return model.Edge{}, err
	}
	from, to, err := parseValidity(validity)
	if err != nil {
		return model.Edge{}, err
	}
	e.ValidFrom, e.ValidTo = from, to
	if err := checkEdge(&e); err != nil {
		return model.Edge{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	e.Heads = d.heads()
	return e, nil
}

// Heads returns the document's heads as sorted hex strings. Pending
// operations are committed first, without a message.
func (d *EdgeDoc) Heads() []string { return d.heads() }

// Save returns the whole document in Automerge's binary format. Pending
// operations are committed first, without a message.
func (d *EdgeDoc) Save() []byte { return d.save() }

// Merge applies the changes of other that d lacks. Both documents must
// be of the same edge. If Automerge refuses the changes
// (ErrUnmergeable; see document.merge), d is closed.
func (d *EdgeDoc) Merge(other *EdgeDoc) error { return d.merge(&other.document) }

// Fork returns an independent copy of d that makes changes as actor.
func (d *EdgeDoc) Fork(actor string) (*EdgeDoc, error) {
	f, err := d.fork(actor)
	if err != nil {
		return nil, err
	}
	return &EdgeDoc{f}, nil
}

// Close releases the document; see the package documentation. It is safe
// to call more than once.
func (d *EdgeDoc) Close() { d.close() }

func checkEdge(e *model.Edge) error {
	for _, f := range []struct{ name, val string }{{keyFrom, e.From}, {keyRel, e.Rel}, {keyTo, e.To}} {
		if f.val == "" || strings.ContainsRune(f.val, 0) {
			return fmt.Errorf("%w: edge %s %q must be non-empty without NUL", ErrInvalidString, f.name, f.val)
		}
	}
	if want := EdgeID(e.From, e.Rel, e.To); e.ID != want {
		return fmt.Errorf("%w: edge id %q, want EdgeID(from, rel, to) = %q", ErrInvalidID, e.ID, want)
	}
	err := checkText(keyFrom, e.From, keyRel, e.Rel, keyTo, e.To, keyNotes, e.Notes, keyOrigin, e.Origin)
	if err != nil {
		return err
	}
	if err := checkUnit("strength", e.Strength); err != nil {
		return err
	}
	return checkValidity(e.ValidFrom, e.ValidTo)
}

func checkValidity(from, to time.Time) error {
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		return fmt.Errorf("%w: %v < %v", ErrInvalidValidity, to, from)
	}
	return nil
}
