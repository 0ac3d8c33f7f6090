package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Get returns the latest record of a document, without its document bytes.
// It returns ErrNotFound if the document was never committed.
func (s *Store) Get(kind Kind, id string) (Record, error) {
	if err := checkKindID(kind, id); err != nil {
		return Record{}, err
	}
	if err := s.enter(); err != nil {
		return Record{}, err
	}
	defer s.leave()
	if !s.held[kind].Load() {
		return Record{}, ErrNotFound
	}
	return getRecord(s.db, kind, id)
}

func getRecord(r pebble.Reader, kind Kind, id string) (Record, error) {
	v, closer, err := r.Get(recordKey(kind, id))
	if errors.Is(err, pebble.ErrNotFound) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("storage: get %v %s: %w", kind, id, err)
	}
	defer closer.Close()
	e, err := decodeEnvelope(v)
	if err != nil {
		return Record{}, fmt.Errorf("storage: get %v %s: %w", kind, id, err)
	}
	return e.toRecord(kind, id), nil
}

// GetDoc returns a document's Automerge bytes. It returns ErrNotFound if no
// document bytes were ever committed for it.
func (s *Store) GetDoc(kind Kind, id string) ([]byte, error) {
	return s.getKindID(kind, id, docKey)
}

// getKindID reads the value of a document's key in one keyspace (key
// builds it).
func (s *Store) getKindID(kind Kind, id string, key func(Kind, string) []byte) ([]byte, error) {
	if err := checkKindID(kind, id); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	return s.getValue(key(kind, id))
}

// PutLocal stores per-device data (access statistics and the like) under
// key. It is never replicated, in no digest, and written without fsync: a
// crash may lose the latest local writes.
func (s *Store) PutLocal(key string, value []byte) error {
	return s.putLocal(key, value, false)
}

// PutLocalDurable is PutLocal for data that must survive a crash (an
// invite marked used, a sync position): it returns once the write is
// synced.
func (s *Store) PutLocalDurable(key string, value []byte) error {
	return s.putLocal(key, value, true)
}

func (s *Store) putLocal(key string, value []byte, sync bool) error {
	return s.writeLocal(map[string][]byte{key: value}, nil, sync)
}

// WriteLocal deletes the local keys del, then stores set, in one batch
// written like PutLocal's (no fsync): derived data that many keys hold
// at once, such as an index of a working tree's symbols.
func (s *Store) WriteLocal(set map[string][]byte, del []string) error {
	return s.writeLocal(set, del, false)
}

// writeLocal deletes del, then stores set, in one batch; sync waits for
// the batch to be durable.
func (s *Store) writeLocal(set map[string][]byte, del []string, sync bool) error {
	for k, v := range set {
		if k == "" || len(k) > MaxIDLen {
			return fmt.Errorf("%w: local key of %d bytes, want 1 to %d", ErrInvalid, len(k), MaxIDLen)
		}
		if len(v) > MaxValueSize {
			return fmt.Errorf("%w: local value of %d bytes exceeds %d", ErrInvalid, len(v), MaxValueSize)
		}
	}
	return s.writeBatch(sync, func(b *pebble.Batch) {
		for _, k := range del {
			b.Delete(localKey(k), nil)
		}
		for k, v := range set {
			b.Set(localKey(k), v, nil)
		}
	})
}

// writeBatch applies one batch that fill writes, outside Commit: local
// data and what is kept aside, in no change log or digest.
func (s *Store) writeBatch(sync bool, fill func(*pebble.Batch)) error {
	if err := s.recover(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	b := s.db.NewBatch()
	defer b.Close()
	fill(b)
	return s.apply(b, int64(b.Len()), sync, nil)
}

// DeleteLocalPrefix removes every key PutLocal stored under prefix (a
// non-empty one), durably.
func (s *Store) DeleteLocalPrefix(prefix string) error {
	if prefix == "" || len(prefix) > MaxIDLen {
		return fmt.Errorf("%w: local prefix of %d bytes, want 1 to %d", ErrInvalid, len(prefix), MaxIDLen)
	}
	start := localKey(prefix)
	return s.writeBatch(true, func(b *pebble.Batch) { b.DeleteRange(start, prefixEnd(start), nil) })
}

// GetLocal returns what PutLocal stored under key, or ErrNotFound.
func (s *Store) GetLocal(key string) ([]byte, error) {
	if key == "" || len(key) > MaxIDLen {
		return nil, fmt.Errorf("%w: local key of %d bytes, want 1 to %d", ErrInvalid, len(key), MaxIDLen)
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	return s.getValue(localKey(key))
}

// ScanLocal calls fn with every key PutLocal stored under prefix, and its
// value, in key order. The value is valid only during the call. An error
// from fn stops ScanLocal and is returned as is.
func (s *Store) ScanLocal(prefix string, fn func(key string, value []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return forEach(s.db, "scan local", prefixOptions(localKey(prefix)), func(k, v []byte) error {
		return fn(string(k[1:]), v)
	})
}

// ScanLocalFrom is ScanLocal of the keys under prefix from prefix+from
// on.
func (s *Store) ScanLocalFrom(prefix, from string, fn func(key string, value []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	opts := prefixOptions(localKey(prefix))
	opts.LowerBound = localKey(prefix + from)
	return forEach(s.db, "scan local", opts, func(k, v []byte) error {
		return fn(string(k[1:]), v)
	})
}

// getValue returns a copy of the value under key, or ErrNotFound.
func (s *Store) getValue(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get %q: %w", key, err)
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

// errStop ends an iteration early without an error.
var errStop = errors.New("stop")

// Changes calls fn with the latest record of every document changed after
// sequence number after, in sequence order, up to DurableSeq: a document
// changed again appears only under its newest sequence number. It stops
// after limit records (limit <= 0: no limit), but never inside a Commit: a
// Commit of several records is delivered whole, even past limit. It returns
// the last sequence number whose records fn all accepted, or after if
// there was none; pass it back as after to resume. An error from fn stops
// Changes and is returned as is.
func (s *Store) Changes(after uint64, limit int, fn func(Record) error) (last uint64, err error) {
	return s.ChangeLog(after, limit, func(c Change) error {
		rec, err := c.Record()
		if err != nil {
			return err
		}
		return fn(rec)
	})
}

// Change is an entry of the change log: the document changed at Seq, or
// was erased then (Erased: a Record with Logged set).
type Change struct {
	Seq    uint64
	Kind   Kind
	ID     string
	Erased bool
	snap   pebble.Reader
}

// Record reads the document's record as of the change: for an erasure,
// a Record with Kind, ID, Seq and Erase set. It is valid only inside the
// ChangeLog call that gave c.
func (c Change) Record() (Record, error) {
	if c.Erased {
		return Record{Kind: c.Kind, ID: c.ID, Seq: c.Seq, Erase: true}, nil
	}
	rec, err := getRecord(c.snap, c.Kind, c.ID)
	if err != nil {
		return Record{}, fmt.Errorf("storage: changes: %w", err)
	}
	return rec, nil
}

// ChangeLog is Changes without reading the records: fn gets each entry of
// the change log and reads its record with Change.Record if it needs it.
func (s *Store) ChangeLog(after uint64, limit int, fn func(Change) error) (last uint64, err error) {
	if err := s.enter(); err != nil {
		return after, err
	}
	defer s.leave()
	last = after
	durable := s.durable.Load()
	if after >= durable {
		return last, nil
	}
	// Every seq <= durable is visible; the snapshot makes each record read
	// below the version its change-log entry points at.
	snap := s.db.NewSnapshot()
	defer snap.Close()
	opts := &pebble.IterOptions{LowerBound: seqKey(after + 1), UpperBound: seqKey(durable + 1)}
	var cur uint64 // the seq being delivered; last is the one before it
	n := 0
	err = forEach(snap, "changes", opts, func(k, v []byte) error {
		if len(k) <= changeKindAt+1 {
			return fmt.Errorf("storage: changes: corrupt entry %x", k)
		}
		kind, id := Kind(k[changeKindAt]), string(k[changeKindAt+1:])
		erased := bytes.Equal(v, erasedEntry)
		if erased {
			// Stored again since: its newer entry follows.
			if _, err := getRecord(snap, kind, id); err == nil {
				return nil
			} else if !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		// A Commit's records share a seq: deliver all of them or none.
		if seq := binary.BigEndian.Uint64(k[1:changeKindAt]); seq != cur {
			if cur != 0 {
				last = cur
			}
			if limit > 0 && n >= limit {
				return errStop
			}
			cur = seq
		}
		n++
		return fn(Change{Seq: cur, Kind: kind, ID: id, Erased: erased, snap: snap})
	})
	switch {
	case err == nil && cur != 0:
		last = cur
	case errors.Is(err, errStop):
		err = nil
	}
	return last, err
}

// Scan calls fn with the id of every document of kind that has term t, in
// id order. An error from fn stops Scan and is returned as is.
func (s *Store) Scan(kind Kind, t Term, fn func(id string) error) error {
	return s.ScanTerms(kind, t.Field, []string{t.Value}, func(_, id string) error { return fn(id) })
}

// ScanTerms calls fn with every document of kind that has a term in field
// with one of values, in (value, id) order, reading them all through one
// iterator: many values cost one seek each rather than an iterator each.
// An error from fn stops ScanTerms and is returned as is.
func (s *Store) ScanTerms(kind Kind, field string, values []string, fn func(value, id string) error) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	for _, v := range values {
		if err := checkTerm(field, v); err != nil {
			return err
		}
	}
	if len(values) == 0 {
		return nil
	}
	values = slices.Clone(values)
	slices.Sort(values)
	values = slices.Compact(values)
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	it, err := s.db.NewIter(prefixOptions(termPrefix(kind, field)))
	if err != nil {
		return fmt.Errorf("storage: scan: %w", err)
	}
	var fnErr error
	for _, v := range values {
		prefix := termKey(kind, Term{Field: field, Value: v}, "")
		for ok := it.SeekGE(prefix); ok && fnErr == nil && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
			fnErr = fn(v, string(it.Key()[len(prefix):]))
		}
		if fnErr != nil {
			break
		}
	}
	if err := it.Close(); err != nil && fnErr == nil {
		return fmt.Errorf("storage: scan: %w", err)
	}
	return fnErr
}

// ScanPrefix calls fn for every document of kind having a term in field
// whose value starts with valuePrefix, in (value, id) order. Values are
// compared as bytes, so callers encode ordered values (times, say) as
// sortable strings. An error from fn stops ScanPrefix and is returned as is.
func (s *Store) ScanPrefix(kind Kind, field, valuePrefix string, fn func(t Term, id string) error) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	if err := checkTerm(field, valuePrefix); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	prefix := append(termPrefix(kind, field), valuePrefix...)
	valueAt := len(prefix) - len(valuePrefix)
	return forEach(s.db, "scan", prefixOptions(prefix), func(k, _ []byte) error {
		value, id, ok := bytes.Cut(k[valueAt:], []byte{sep})
		if !ok {
			return fmt.Errorf("storage: scan: corrupt term key %x", k)
		}
		return fn(Term{Field: field, Value: string(value)}, string(id))
	})
}

// IDsWithPrefix returns the ids of documents of kind that start with
// prefix, in id order, at most limit of them (limit <= 0: no limit).
func (s *Store) IDsWithPrefix(kind Kind, prefix string, limit int) ([]string, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	if len(prefix) > MaxIDLen || strings.IndexByte(prefix, 0) >= 0 {
		return nil, fmt.Errorf("%w: id prefix %q", ErrInvalid, prefix)
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	var ids []string
	err := forEach(s.db, "ids", prefixOptions(recordKey(kind, prefix)), func(k, _ []byte) error {
		ids = append(ids, string(k[2:]))
		if limit > 0 && len(ids) >= limit {
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return ids, err
}

// All calls fn with the latest record of every document of kind, in id
// order, without document bytes. An error from fn stops All and is
// returned as is.
func (s *Store) All(kind Kind, fn func(Record) error) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return forEach(s.db, "all", prefixOptions(recordKey(kind, "")), func(k, v []byte) error {
		e, err := decodeEnvelope(v)
		if err != nil {
			return fmt.Errorf("storage: all: %s: %w", k, err)
		}
		return fn(e.toRecord(kind, string(k[2:])))
	})
}

// Docs calls fn with the id and Automerge bytes of every document of
// kind, in id order; the bytes are valid only during the call. An error
// from fn stops Docs and is returned as is.
func (s *Store) Docs(kind Kind, fn func(id string, doc []byte) error) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return forEach(s.db, "docs", prefixOptions(docKey(kind, "")), func(k, v []byte) error {
		return fn(string(k[2:]), v)
	})
}

// Count returns the number of documents of kind.
func (s *Store) Count(kind Kind) (int, error) {
	if err := checkKind(kind); err != nil {
		return 0, err
	}
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	n := 0
	err := forEach(s.db, "count", prefixOptions(recordKey(kind, "")), func(_, _ []byte) error {
		n++
		return nil
	})
	return n, err
}

// forEach calls fn with each key and value within opts' bounds, in key
// order; both are valid only during the call. An error from fn stops the
// iteration and is returned as is; Pebble's errors are wrapped with what.
func forEach(r pebble.Reader, what string, opts *pebble.IterOptions, fn func(key, value []byte) error) error {
	it, err := r.NewIter(opts)
	if err != nil {
		return fmt.Errorf("storage: %s: %w", what, err)
	}
	var fnErr error
	for ok := it.First(); ok && fnErr == nil; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			break // Close reports it
		}
		fnErr = fn(it.Key(), v)
	}
	if err := it.Close(); err != nil && fnErr == nil {
		return fmt.Errorf("storage: %s: %w", what, err)
	}
	return fnErr
}

// Aside returns what a record kept aside for a document (Record.Aside),
// or ErrNotFound.
func (s *Store) Aside(kind Kind, id string) ([]byte, error) {
	return s.getKindID(kind, id, asideKey)
}

// Asides calls fn with every document something is kept aside for, and
// what is, in key order. doc is valid only during the call. An error from
// fn stops Asides and is returned as is.
func (s *Store) Asides(fn func(kind Kind, id string, doc []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return forEach(s.db, "scan aside", prefixOptions([]byte{prefixAside}), func(k, v []byte) error {
		return fn(Kind(k[1]), string(k[2:]), v)
	})
}

// DropAside removes, durably, what was kept aside for a document: it was
// put back.
func (s *Store) DropAside(kind Kind, id string) error {
	if err := checkKindID(kind, id); err != nil {
		return err
	}
	return s.writeBatch(true, func(b *pebble.Batch) { b.Delete(asideKey(kind, id), nil) })
}
