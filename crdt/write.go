package crdt

import (
	"fmt"
	"unicode/utf8"

	"github.com/automerge/automerge-go"
)

// field is one key and scalar value to write.
type field struct {
	key string
	val any // string, int64, float64, bool, or []byte (written by set only)
}

// put writes fields into m, skipping any that already hold the value so
// that re-setting an unchanged field makes nothing to sync.
func (d *document) put(m *automerge.Map, fields ...field) error {
	if d.am == nil {
		return ErrClosed
	}
	for _, f := range fields {
		cur, err := m.Get(f.key)
		if err != nil {
			return fmt.Errorf("crdt: read %s: %w", f.key, err)
		}
		if holds(cur, f.val) {
			continue
		}
		if err := d.set(m, f); err != nil {
			return err
		}
	}
	return nil
}

// putRoot puts one field into the root map.
func (d *document) putRoot(f field) error {
	if d.am == nil {
		return ErrClosed
	}
	return d.put(d.am.RootMap(), f)
}

// init writes the fields of a new map, leaving out zero values: a missing
// key reads as the zero value, and each operation costs time and space.
func (d *document) init(m *automerge.Map, fields ...field) error {
	for _, f := range fields {
		switch f.val {
		case "", int64(0), 0.0, false:
			continue
		}
		if err := d.set(m, f); err != nil {
			return err
		}
	}
	return nil
}

// set writes fields into m without reading them first. (Automerge makes no
// operation for a write of the current value, and Commit would then fail
// on an empty change, so rewrites go through put.)
func (d *document) set(m *automerge.Map, fields ...field) error {
	if d.am == nil {
		return ErrClosed
	}
	for _, f := range fields {
		if err := m.Set(f.key, f.val); err != nil {
			return fmt.Errorf("crdt: write %s: %w", f.key, err)
		}
		d.wrote(f.key, f.val)
	}
	return nil
}

// holds reports whether cur is the scalar v.
func holds(cur *automerge.Value, v any) bool {
	switch v := v.(type) {
	case string:
		return cur.Kind() == automerge.KindStr && cur.Str() == v
	case int64:
		return cur.Kind() == automerge.KindInt64 && cur.Int64() == v
	case float64:
		return cur.Kind() == automerge.KindFloat64 && cur.Float64() == v
	case bool:
		return cur.Kind() == automerge.KindBool && cur.Bool() == v
	}
	return false
}

// wrote records an operation: the document now has something to commit,
// and holds more C memory.
func (d *document) wrote(key string, val any) {
	d.dirty = true
	n := len(key)
	switch v := val.(type) {
	case string:
		n += len(v)
	case []byte:
		n += len(v)
	}
	d.cost += opCost + writtenByteCost*int64(n)
}

// newMap creates an empty map under key in parent.
func (d *document) newMap(parent *automerge.Map, key string) (*automerge.Map, error) {
	if d.am == nil {
		return nil, ErrClosed
	}
	m := automerge.NewMap()
	if err := parent.Set(key, m); err != nil {
		return nil, fmt.Errorf("crdt: create %s: %w", key, err)
	}
	d.wrote(key, nil)
	return m, nil
}

// rootMap returns the map under key in the root.
func (d *document) rootMap(key string) (*automerge.Map, error) {
	if d.am == nil {
		return nil, ErrClosed
	}
	v, err := d.am.RootMap().Get(key)
	if err != nil {
		return nil, fmt.Errorf("crdt: read %s: %w", key, err)
	}
	if v.Kind() != automerge.KindMap {
		return nil, fmt.Errorf("%w: %s is %v, want a map", ErrMalformed, key, v.Kind())
	}
	return v.Map(), nil
}

// addToSet adds elems to the set stored as the keys of the map under key.
// Concurrent adds and removes of different elements merge per element.
func (d *document) addToSet(key string, elems []string) error {
	if err := checkElems(key, elems); err != nil {
		return err
	}
	m, err := d.rootMap(key)
	if err != nil {
		return err
	}
	for _, e := range elems {
		if err := d.put(m, field{e, true}); err != nil {
			return err
		}
	}
	return nil
}

// removeFromSet removes elems from the set under key.
func (d *document) removeFromSet(key string, elems []string) error {
	if err := checkElems(key, elems); err != nil {
		return err
	}
	m, err := d.rootMap(key)
	if err != nil {
		return err
	}
	for _, e := range elems {
		v, err := m.Get(e)
		if err != nil {
			return fmt.Errorf("crdt: read %s: %w", key, err)
		}
		if v.IsVoid() {
			continue
		}
		if err := m.Delete(e); err != nil {
			return fmt.Errorf("crdt: remove from %s: %w", key, err)
		}
		d.wrote(e, nil)
	}
	return nil
}

func checkElems(set string, elems []string) error {
	for _, e := range elems {
		if e == "" || !utf8.ValidString(e) {
			return fmt.Errorf("%w: %s element %q", ErrInvalidString, set, e)
		}
	}
	return nil
}

// checkText checks that strings are valid UTF-8. Its arguments are pairs
// of a name (for the error) and a value.
func checkText(nameValue ...string) error {
	for i := 0; i+1 < len(nameValue); i += 2 {
		if !utf8.ValidString(nameValue[i+1]) {
			return fmt.Errorf("%w: %s is not UTF-8", ErrInvalidString, nameValue[i])
		}
	}
	return nil
}
