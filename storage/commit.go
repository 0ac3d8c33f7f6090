package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Commit stores recs as one atomic batch and returns the sequence number
// they share, which it also sets in each recs[i].Seq. For each record the
// batch holds the document (a nil Doc keeps the stored one), the record,
// its index terms and change-log entry (replacing the previous version's)
// and its digest update; a record with Erase set removes all of these
// instead (see Expunge). Commit returns once the batch is durable;
// concurrent Commits share fsyncs. Invalid records fail with ErrInvalid
// and change nothing.
//
// Callers must not commit the same document from two goroutines at once:
// Commit reads the previous version to replace it.
func (s *Store) Commit(recs ...Record) (uint64, error) {
	p, err := s.CommitNoSyncWait(recs...)
	if err != nil {
		return 0, err
	}
	return p.SyncWait()
}

// Pending is a commit applied but maybe not yet durable (see
// CommitNoSyncWait).
type Pending struct {
	s      *Store
	b      *pebble.Batch
	seq    uint64
	recs   []Record
	erased [][]byte
	shares []share // the digest's changes
}

// CommitNoSyncWait is Commit up to the fsync: it returns once the batch
// is applied, visible to reads and to the next Commit of its documents,
// and its fsync requested. The caller must call the result's SyncWait,
// which returns once the batch is durable: a write is acknowledged only
// then. Until then the change log (Changes, DurableSeq) does not show it.
//
// A caller that serialises the Commits of a document need hold its lock
// only until CommitNoSyncWait returns: the order of a document's versions
// is the order of their applies, and the fsyncs of concurrent commits
// are shared.
func (s *Store) CommitNoSyncWait(recs ...Record) (*Pending, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: commit of no records", ErrInvalid)
	}
	seen := make(map[string]bool, len(recs))
	for i := range recs {
		if err := recs[i].validate(); err != nil {
			return nil, err
		}
		k := string(recordKey(recs[i].Kind, recs[i].ID))
		if seen[k] {
			return nil, fmt.Errorf("%w: %v %s twice in one commit", ErrInvalid, recs[i].Kind, recs[i].ID)
		}
		seen[k] = true
	}
	if err := s.recover(); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	p := &Pending{s: s, b: s.db.NewBatch(), recs: recs}
	if err := p.apply(); err != nil {
		p.b.Close()
		s.leave()
		return nil, err
	}
	s.applied.Add(1)
	return p, nil
}

// apply stages the records in the batch and applies it.
func (p *Pending) apply() error {
	s, b, recs := p.s, p.b, p.recs
	// Batch writes fail only once a batch is committing, so their errors
	// are not checked.
	envs := make([][]byte, len(recs))
	changes := make([][]byte, len(recs))
	extra := 0 // the records and change-log entries, added under commitMu
	for i := range recs {
		r := &recs[i]
		keys, sh, err := s.stage(b, r)
		if err != nil {
			return err
		}
		if sh.xor != ([sha256.Size]byte{}) {
			p.shares = append(p.shares, sh)
		}
		if r.Erase {
			p.erased = append(p.erased, keys...)
			if r.Logged && keys != nil {
				changes[i] = changeKey(0, r.Kind, r.ID)
				extra += 2 * len(changes[i])
			}
			continue
		}
		envs[i] = appendEnvelope(nil, 0, r)
		changes[i] = changeKey(0, r.Kind, r.ID)
		extra += len(envs[i]) + 2*len(changes[i])
	}
	if len(p.erased) > 0 {
		// Durable with the erasure: a crash before Expunge has run makes
		// the next Open expunge everything.
		b.Set(metaKey(metaErasePending), nil, nil)
	}

	// Under commitMu, take the next seq and hand the batch to Pebble's
	// commit pipeline: ApplyNoSyncWait writes it to the WAL, queues a sync
	// request and returns once the batch is applied and visible. Holding
	// the mutex across both makes WAL order seq order, so the WAL sync that
	// covers seq covers every smaller one. The sync is awaited outside the
	// mutex (SyncWait), where Pebble's WAL flusher serves all the requests
	// queued meanwhile with one fsync.
	for i := range recs {
		if !recs[i].Erase {
			s.held[recs[i].Kind].Store(true)
		}
	}
	return s.applyNoSyncWait(b, int64(b.Len()+extra), true, func() {
		p.seq = s.nextSeq
		s.nextSeq++
		for i := range recs {
			if changes[i] != nil {
				binary.BigEndian.PutUint64(changes[i][1:], p.seq)
			}
			if recs[i].Erase {
				if changes[i] != nil {
					b.Set(changes[i], erasedEntry, nil)
				}
				continue
			}
			binary.BigEndian.PutUint64(envs[i], p.seq)
			b.Set(recordKey(recs[i].Kind, recs[i].ID), envs[i], nil)
			b.Set(changes[i], nil, nil)
		}
	}, func() { s.addShares(p.shares) })
}

// erasedEntry is the value of the change-log entry of a logged erasure;
// a stored version's entry has none.
var erasedEntry = []byte{1}

// Seq is the sequence number the commit's records share.
func (p *Pending) Seq() uint64 { return p.seq }

// SyncWait returns once the commit is durable, with its sequence number,
// which it also sets in each record's Seq; only then do the change log
// and DurableSeq show it. Call it once.
func (p *Pending) SyncWait() (uint64, error) {
	s := p.s
	defer s.leave()
	defer p.b.Close()
	if err := p.b.SyncWait(); err != nil {
		return 0, s.failedWrite(err)
	}
	s.erased(p.erased)

	// Concurrent Commits finish in any order: DurableSeq only moves up.
	for {
		d := s.durable.Load()
		if d >= p.seq || s.durable.CompareAndSwap(d, p.seq) {
			break
		}
	}
	for i := range p.recs {
		p.recs[i].Seq = p.seq
	}
	return p.seq, nil
}

// apply hands b, of about need bytes once fill has run, to Pebble's
// commit pipeline, and with sync returns once it is durable. fill, when
// set, runs under commitMu just before: it adds what depends on the order
// of batches. Callers are between enter and leave. A write that would
// leave less free space than the reserve, or that follows a failed log
// write, is refused and changes nothing.
func (s *Store) apply(b *pebble.Batch, need int64, sync bool, fill func()) error {
	if err := s.applyNoSyncWait(b, need, sync, fill, nil); err != nil {
		return err
	}
	if sync {
		if err := b.SyncWait(); err != nil {
			return s.failedWrite(err)
		}
	}
	return nil
}

// applyNoSyncWait is apply up to the fsync: with sync, it returns once b
// is applied and its fsync requested, and b.SyncWait awaits it. applied,
// when set, runs under commitMu once b is applied.
func (s *Store) applyNoSyncWait(b *pebble.Batch, need int64, sync bool, fill, applied func()) error {
	if err := s.space.admit(need); err != nil {
		return err
	}
	s.commitMu.Lock()
	if err := s.blocked(); err != nil {
		s.commitMu.Unlock()
		return err
	}
	if fill != nil {
		fill()
	}
	var err error
	if sync {
		err = s.db.ApplyNoSyncWait(b, pebble.Sync)
	} else {
		err = s.db.Apply(b, pebble.NoSync)
	}
	if err == nil && applied != nil {
		applied()
	}
	s.commitMu.Unlock()
	if err != nil {
		return s.failedWrite(err)
	}
	return nil
}

// stage adds to b the parts of r that do not depend on its sequence
// number: the document, the index terms that changed, the removal of the
// previous change-log entry and the digest update, which it returns. For
// an erasure it removes every key of the stored version and returns those
// keys.
func (s *Store) stage(b *pebble.Batch, r *Record) (erased [][]byte, sh share, err error) {
	var old envelope
	found := false
	if r.NoneAt == 0 || r.NoneAt != s.applied.Load() {
		if old, found, err = s.envelope(r.Kind, r.ID); err != nil {
			return nil, sh, err
		}
	}
	sh.bucket = Bucket(r.Kind, r.ID)
	if r.Aside != nil {
		b.Set(asideKey(r.Kind, r.ID), r.Aside, nil)
	}
	if r.Erase {
		if r.Aside == nil {
			if erased, err = s.dropAside(b, r.Kind, r.ID); err != nil {
				return nil, sh, err
			}
		}
		if !found {
			return erased, sh, nil
		}
		// Every key goes; Expunge compacts those that held text.
		for _, k := range [][]byte{docKey(r.Kind, r.ID), recordKey(r.Kind, r.ID)} {
			b.Delete(k, nil)
			erased = append(erased, k)
		}
		b.Delete(changeKey(old.seq, r.Kind, r.ID), nil)
		for _, t := range old.terms {
			k := termKey(r.Kind, t, r.ID)
			b.Delete(k, nil)
			if s.opts.TextTerms == nil || slices.Contains(s.opts.TextTerms, t.Field) {
				erased = append(erased, k)
			}
		}
		sh.xor = DocHash(r.Kind, r.ID, old.heads)
		b.Merge(digestKey(sh.bucket), sh.xor[:], nil)
		return erased, sh, nil
	}
	if r.Doc != nil {
		b.Set(docKey(r.Kind, r.ID), r.Doc, nil)
	}

	oldTerms := termSet(old.terms)
	newTerms := termSet(r.Terms)
	for t := range oldTerms {
		if !newTerms[t] {
			b.Delete(termKey(r.Kind, t, r.ID), nil)
		}
	}
	for t := range newTerms {
		if !oldTerms[t] {
			b.Set(termKey(r.Kind, t, r.ID), nil, nil)
		}
	}

	sh.xor = DocHash(r.Kind, r.ID, r.Heads)
	if found {
		b.Delete(changeKey(old.seq, r.Kind, r.ID), nil)
		prev := DocHash(r.Kind, r.ID, old.heads)
		for i := range sh.xor {
			sh.xor[i] ^= prev[i]
		}
	}
	if sh.xor != ([sha256.Size]byte{}) {
		b.Merge(digestKey(sh.bucket), sh.xor[:], nil)
	}
	return nil, sh, nil
}

// dropAside adds to b the removal of what was kept aside for a document,
// and returns its key when there was some, for Expunge to compact.
func (s *Store) dropAside(b *pebble.Batch, kind Kind, id string) ([][]byte, error) {
	k := asideKey(kind, id)
	_, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get %q: %w", k, err)
	}
	closer.Close()
	b.Delete(k, nil)
	return [][]byte{k}, nil
}

// envelope reads the stored envelope of a document, without its value.
func (s *Store) envelope(kind Kind, id string) (e envelope, found bool, err error) {
	v, closer, err := s.db.Get(recordKey(kind, id))
	if errors.Is(err, pebble.ErrNotFound) {
		return envelope{}, false, nil
	}
	if err != nil {
		return envelope{}, false, fmt.Errorf("storage: commit: read %v %s: %w", kind, id, err)
	}
	defer closer.Close()
	if e, err = decodeEnvelope(v); err != nil {
		return envelope{}, false, fmt.Errorf("storage: commit: read %v %s: %w", kind, id, err)
	}
	e.value = nil // aliases Pebble's buffer, released by closer
	return e, true, nil
}

func termSet(terms []Term) map[Term]bool {
	set := make(map[Term]bool, len(terms))
	for _, t := range terms {
		set[t] = true
	}
	return set
}
