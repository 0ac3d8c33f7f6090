package mesh

import (
	"math"
	"time"

	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// How many of our documents a peer lacks (behind, which `peers` shows):
// the documents of the digest peers compare (those that may go to it, less
// private ones) whose version here it is not known to hold. A node knows
// what it gave a peer and what the peer told it, and keeps it per peer
// (knowledge):
//   - a checkpoint: the peer held our version of every such document
//     whose change-log entry is at or before a seq, but a few (dirty).
//     Anti-entropy gives it: a peer that completed a pull from us got
//     every change up to the pull's end (its pulls from us start where
//     its last one ended, and a pull by buckets, or one whose digests
//     were equal, leaves no difference). So does a digest sum the peer
//     reported lately that equals ours.
//   - the versions the peer holds of documents since (holds): those we
//     pushed and it applied, those it sent us, those offered or sent in
//     a pull it completed.
//   - the documents that stopped being private (a namespace shared again,
//     an edge whose memory arrived), which the checkpoint does not cover
//     (dirty). No checkpoint covers a private document: the version a
//     peer held of one as it became private, or got since, stays among
//     the holds.
// behind walks the change log from the checkpoint (short: checkpoints
// come with every pull and every equal sum) and counts what the peer is
// not known to hold. It is exact as far as the two nodes' exchanges
// tell: what a peer got of ours through a third node counts until the
// peer next pulls from us or reports an equal sum, and what a peer
// refused (its namespace made local-only before we heard) counts as held,
// since the protocol does not tell the sender.

// maxHolds bounds the documents remembered as held by one peer; past it,
// behind counts more than the peer lacks rather than growing.
const maxHolds = 100_000

// knowledge is what this node knows of which of its documents a peer
// holds. Guarded by Mesh.mu.
type knowledge struct {
	// synced is set once the peer is known to have held our version of
	// every document that may go to it whose change-log entry is at or
	// before seq, but those in dirty; gen counts the checkpoints.
	synced bool
	seq    uint64
	gen    uint64
	dirty  map[docKey]bool
	// holds are the versions (headsKey) of documents the peer is known
	// to hold.
	holds map[docKey]string
}

// has reports whether the peer is known to hold this version of a
// document whose change-log entry is at seq.
func (k *knowledge) has(key docKey, seq uint64, heads string) bool {
	if h, ok := k.holds[key]; ok {
		return h == heads
	}
	return k.synced && seq <= k.seq && !k.dirty[key]
}

// hold records that the peer holds e's version.
func (k *knowledge) hold(e transport.Entry) {
	key := docKey{storage.Kind(e.Kind), e.ID}
	if _, ok := k.holds[key]; ok || len(k.holds) < maxHolds {
		k.holds[key] = headsKey(e.Heads)
	}
}

// checkpoint records that the peer held our version of every document
// up to seq that is not private (isPrivate), but those still dirty (none
// when clean). A clean checkpoint also forgets the holds of documents it
// covers, learned before it (but for a commit racing with it, of the
// versions it covers).
func (k *knowledge) checkpoint(seq uint64, clean bool, isPrivate func(docKey) bool) {
	k.synced, k.seq = true, seq
	k.gen++
	if !clean {
		return
	}
	k.dirty = nil
	for key := range k.holds {
		if !isPrivate(key) {
			delete(k.holds, key)
		}
	}
}

// holding records that the peer device holds these documents' versions:
// pushed to it and applied, or received from it.
func (m *Mesh) holding(device string, docs []transport.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := &m.peer(device).know
	for _, d := range docs {
		k.hold(d)
	}
}

// served records what a pull the peer completed from us tells: it holds
// every document sent or offered, and, past the end of the pull, every
// change up to it (see knowledge). A pull since a position leaves dirty
// the documents made public before it, unless the digests were equal.
func (m *Mesh) served(peer string, req transport.PullRequest, r *servedReplica) {
	byChanges := req.Since.Epoch == r.pos.Epoch && req.Since.Seq > 0 && req.Since.Seq <= r.pos.Seq
	clean := !byChanges || req.Digest == r.digest
	m.mu.Lock()
	defer m.mu.Unlock()
	k := &m.peer(peer).know
	if clean || k.synced {
		k.checkpoint(r.pos.Seq, clean, m.private.isPrivate)
	}
	for _, e := range r.offered {
		k.hold(e)
	}
	for _, e := range r.sent {
		k.hold(e)
	}
}

// becamePrivate records that a document is left out of the digest peers
// compare (its namespace made local-only, say), which no checkpoint
// covers: the version each peer is known to hold of it then stays among
// its holds.
func (m *Mesh) becamePrivate(rec storage.Record) {
	key, heads := docKey{rec.Kind, rec.ID}, headsKey(rec.Heads)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.peers {
		if k := &p.know; k.has(key, rec.Seq, heads) {
			k.hold(transport.Entry{Kind: byte(rec.Kind), ID: rec.ID, Heads: rec.Heads})
		}
	}
}

// becamePublic records that a private document is private no more: no
// checkpoint covers it; the peers hold it only as their holds say.
func (m *Mesh) becamePublic(key docKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.peers {
		if k := &p.know; k.synced {
			if k.dirty == nil {
				k.dirty = make(map[docKey]bool)
			}
			k.dirty[key] = true
		}
	}
}

// behind counts the documents the peer device lacks, as far as this node
// knows (see knowledge). seq is our change log's end and sum our digest's
// sum (digestSum), read after it: a sum the peer sent lately that equals
// it makes a checkpoint at seq.
func (m *Mesh) behind(device string, seq uint64, sum string, now time.Time) (int, error) {
	m.mu.Lock()
	p := m.peers[device]
	if peerSum := m.sumOf(device, now); peerSum == sum && sum != "" {
		if p != nil {
			p.know.checkpoint(seq, true, m.private.isPrivate)
		}
		m.mu.Unlock()
		return 0, nil
	}
	var k knowledge
	if p != nil {
		k = p.know
		k.holds = make(map[docKey]string, len(p.know.holds))
		for key, h := range p.know.holds {
			k.holds[key] = h
		}
		k.dirty = make(map[docKey]bool, len(p.know.dirty))
		for key := range p.know.dirty {
			k.dirty[key] = true
		}
	}
	m.mu.Unlock()

	after := uint64(0)
	if k.synced {
		after = k.seq
	}
	n := 0
	still := make(map[docKey]bool) // holds that still count
	walked := make(map[docKey]bool)
	held := func(key docKey, heads []string) bool {
		h, ok := k.holds[key]
		ok = ok && h == headsKey(heads)
		if ok {
			still[key] = true
		}
		return ok
	}
	err := replica{m}.Changed(device, after, math.MaxUint64, func(e transport.Entry) error {
		key := docKey{storage.Kind(e.Kind), e.ID}
		if len(k.dirty) > 0 {
			walked[key] = true
		}
		// held first: the hold of a private document stays.
		if !held(key, e.Heads) && !m.private.isPrivate(key) {
			n++
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	settled := make(map[docKey]bool) // dirty documents no longer so
	for key := range k.dirty {
		if walked[key] {
			continue
		}
		rec, err := m.store.Get(key.kind, key.id)
		switch {
		case notFound(err):
			settled[key] = true
		case err != nil:
			return n, err
		case held(key, rec.Heads):
			settled[key] = true
		case m.private.isPrivate(key):
		default:
			n++
		}
	}
	if p != nil {
		m.forget(p, &k, still, settled)
	}
	return n, nil
}

// forget drops from p's knowledge what a count found no longer matters:
// the holds of documents changed since or covered by the checkpoint (all
// but still), and dirty documents now held or gone (settled). k is the knowledge the count
// read; nothing is dropped when a checkpoint came since.
func (m *Mesh) forget(p *peerState, k *knowledge, still, settled map[docKey]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.know.gen != k.gen || p.know.synced != k.synced {
		return
	}
	for key, h := range k.holds {
		// No checkpoint covers a private document: its hold stays.
		if !still[key] && p.know.holds[key] == h && !m.private.isPrivate(key) {
			delete(p.know.holds, key)
		}
	}
	for key := range settled {
		delete(p.know.dirty, key)
	}
}

// servedReplica is the replica as a served pull sees it: it keeps where
// the pull ends, our digest then, and the documents it offered (since a
// position) and sent, which the puller holds once the pull completes.
type servedReplica struct {
	replica
	pos     transport.Position
	digest  [256][32]byte
	offered []transport.Entry
	sent    []transport.Entry
}

func (r *servedReplica) Position() (transport.Position, error) {
	pos, err := r.replica.Position()
	r.pos = pos
	return pos, err
}

func (r *servedReplica) Digest() ([256][32]byte, error) {
	d, err := r.replica.Digest()
	r.digest = d
	return d, err
}

func (r *servedReplica) Changed(peer string, after, end uint64, fn func(transport.Entry) error) error {
	return r.replica.Changed(peer, after, end, func(e transport.Entry) error {
		r.offered = append(r.offered, e)
		return fn(e)
	})
}

func (r *servedReplica) Docs(peer string, want []transport.Entry) ([]transport.Entry, error) {
	docs, err := r.replica.Docs(peer, want)
	for _, d := range docs {
		r.sent = append(r.sent, transport.Entry{Kind: d.Kind, ID: d.ID, Heads: d.Heads})
	}
	return docs, err
}
