package mesh

import (
	"errors"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// Store is what the mesh reads and writes of the node's store: the change
// log it pushes and serves, the digest that anti-entropy compares, the
// documents and records it offers, sends and merges (and finds by index
// term), and its own local (never replicated) data. *storage.Store implements it.
type Store interface {
	Digest() ([256][32]byte, error)
	DurableSeq() uint64
	Applied() uint64
	Changes(after uint64, limit int, fn func(storage.Record) error) (last uint64, err error)
	Get(kind storage.Kind, id string) (storage.Record, error)
	GetDoc(kind storage.Kind, id string) ([]byte, error)
	Docs(kind storage.Kind, fn func(id string, doc []byte) error) error
	All(kind storage.Kind, fn func(storage.Record) error) error
	Scan(kind storage.Kind, t storage.Term, fn func(id string) error) error
	Commit(recs ...storage.Record) (uint64, error)
	CommitNoSyncWait(recs ...storage.Record) (*storage.Pending, error)
	GetLocal(key string) ([]byte, error)
	ScanLocal(prefix string, fn func(key string, value []byte) error) error
	PutLocal(key string, value []byte) error
	PutLocalDurable(key string, value []byte) error
	Aside(kind storage.Kind, id string) ([]byte, error)
	Asides(fn func(kind storage.Kind, id string, doc []byte) error) error
	DropAside(kind storage.Kind, id string) error
}

var _ Store = (*storage.Store)(nil)

// Host is what the mesh and the registry need of the node they run in:
// the rules that turn a document into the records the node stores, the
// node's per-document write locks, its erasures, and its reaction to
// commits.
type Host interface {
	// Lock takes the write locks of the documents ids (the ones local
	// writes take) and returns their unlock, which may be called more
	// than once: a commit of the documents releases them once applied,
	// before its fsync (storage.Store.CommitNoSyncWait).
	Lock(ids ...string) (unlock func())
	// MemoryRecord and EdgeRecord build the record the node stores for
	// a materialised document whose bytes are doc.
	MemoryRecord(m *model.Memory, doc []byte) (storage.Record, error)
	EdgeRecord(e *model.Edge, doc []byte) (storage.Record, error)
	// TombstoneRecords returns the records that store ts, merged with
	// the node's own, and erase its memory and edges; none when nothing
	// is new.
	TombstoneRecords(ts crdt.Tombstone) ([]storage.Record, error)
	// Purged reports whether the memory id was purged here, and
	// PurgedEndpoint whether an edge endpoint is such a memory.
	Purged(id string) bool
	PurgedEndpoint(end string) bool
	// Committed tells the node that documents were committed at seq,
	// from peers or to the registry (to index them and erase what they
	// erase); memories are the memories among them, as materialised for
	// their records, so that indexing need not read them back.
	Committed(seq uint64, memories []*model.Memory)
	// HoldIndex holds back indexing while a pull brings documents in,
	// to index them in large batches once it ends.
	HoldIndex() (release func())
}

// notFound reports whether a store error says a record is absent.
func notFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }
