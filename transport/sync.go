package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Replica is what the sync protocol needs from the node that runs it.
// peer is always the device at the other end; implementations enforce
// their replication policy with it (a local-only namespace is neither
// offered, sent, nor accepted).
type Replica interface {
	// Digest returns the 256 anti-entropy buckets.
	Digest() ([256][32]byte, error)
	// Position is the local change log's epoch and durable end.
	Position() (Position, error)
	// Changed calls fn with every document that may go to peer and was
	// changed after seq, up to end: kind, id and heads.
	Changed(peer string, after, end uint64, fn func(Entry) error) error
	// InBuckets calls fn with every document that may go to peer in the
	// given digest buckets.
	InBuckets(peer string, buckets []byte, fn func(Entry) error) error
	// Lacks reports whether the local replica lacks a document's version
	// (the document is missing or its heads differ).
	Lacks(e Entry) (bool, error)
	// Docs fills in the documents of want that may go to peer, leaving
	// out the others.
	Docs(peer string, want []Entry) ([]Entry, error)
	// Apply merges documents received from peer and stores the results
	// durably before it returns. A document that fails validation is
	// rejected (and reported) without affecting the others: Apply then
	// returns a *RejectedError, and the sync goes on. Any other error
	// stops it.
	Apply(peer string, docs []Entry) error
}

// RejectedError is what Replica.Apply returns, alone or wrapped, when it
// rejected some documents of a batch and applied the others.
type RejectedError struct {
	Peer         string
	Rejected, Of int
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%d of %d documents from %s rejected (see the log)", e.Rejected, e.Of, e.Peer)
}

// apply is r.Apply, with rejections counted instead of returned.
func apply(r Replica, peer string, docs []Entry) (rejected int, err error) {
	err = r.Apply(peer, docs)
	if rej, ok := errors.AsType[*RejectedError](err); ok {
		return rej.Rejected, nil
	}
	return 0, err
}

// Batch sizes: entries per offer or want frame, and bytes of documents per
// frame (a larger document goes alone in its frame).
const (
	entriesPerFrame  = 2000
	docBytesPerFrame = 1 << 20
)

// SyncStats describe one pull.
type SyncStats struct {
	Offered    int           // documents the peer offered
	Received   int           // documents received and applied
	Rejected   int           // documents received and rejected (logged by the replica)
	Bytes      int64         // frame bytes read and written
	RoundTrips int           // request/response exchanges
	Duration   time.Duration // whole pull
	End        Position      // the peer's change-log position the pull reached
	// ByBuckets is set when the peer offered every document of the digest
	// buckets that differed, rather than its changes since the position.
	ByBuckets bool
	// Differ counts the digest buckets in which the puller, once it
	// applied what it received, still differs from the peer's digest as
	// the peer made its offers: writes in flight on either side, or
	// documents that changes since the position could not bring (see
	// Reconcile). Zero when the peer sent no digest.
	Differ int
}

// Reconcile reports whether a pull left differences that a pull by
// buckets (Pull with a zero position) would repair: the digests still
// differ after the peer offered only its changes since the position.
func (st *SyncStats) Reconcile() bool { return st.Differ > 0 && !st.ByBuckets }

// Add adds the figures of a later pull from the same peer: the sums, and
// the later one's end and differences.
func (st *SyncStats) Add(later SyncStats) {
	st.Offered += later.Offered
	st.Received += later.Received
	st.Rejected += later.Rejected
	st.Bytes += later.Bytes
	st.RoundTrips += later.RoundTrips
	st.Duration += later.Duration
	st.End, st.ByBuckets, st.Differ = later.End, later.ByBuckets, later.Differ
}

// sinceValid reports whether a puller's position since names the change
// log whose end is pos: the responder then offers its changes since it.
func sinceValid(since, pos Position) bool {
	return since.Epoch == pos.Epoch && since.Seq > 0 && since.Seq <= pos.Seq
}

// differing lists the buckets in which two digests differ.
func differing(a, b *[256][32]byte) []byte {
	var out []byte
	for i := range a {
		if a[i] != b[i] {
			out = append(out, byte(i))
		}
	}
	return out
}

// Pull runs anti-entropy from the peer on s: it sends since (where the last
// complete pull from this peer ended) and the local digest, receives the
// peer's offers, asks for the documents the replica lacks and applies
// them; then it compares the replica's digest with the one the peer sent
// (SyncStats.Differ, Reconcile). s is closed on return.
func Pull(ctx context.Context, s FrameStream, r Replica, since Position) (SyncStats, error) {
	start := time.Now()
	stats := SyncStats{}
	defer s.Close()
	stop := context.AfterFunc(ctx, s.Abort)
	defer stop()

	digest, err := r.Digest()
	if err != nil {
		return stats, err
	}
	req := AppendPull(nil, &PullRequest{Since: since, Digest: digest})
	if err := s.WriteFrame(FramePull, req); err != nil {
		return stats, fmt.Errorf("sync: send pull: %w", err)
	}
	stats.Bytes += int64(len(req) + 5)
	stats.RoundTrips++

	var want []Entry
	var end OffersEnd
	for {
		typ, p, err := s.ReadFrame(MaxFrame)
		if err != nil {
			return stats, fmt.Errorf("sync: read offers: %w", unexpected(err))
		}
		stats.Bytes += int64(len(p) + 5)
		if typ == FrameOffersEnd {
			if end, err = DecodeOffersEnd(p); err != nil {
				return stats, err
			}
			stats.End, stats.ByBuckets = end.End, !sinceValid(since, end.End)
			break
		}
		if err := checkFrame(typ, p, FrameOffers); err != nil {
			return stats, err
		}
		offers, err := DecodeEntries(p)
		if err != nil {
			return stats, err
		}
		stats.Offered += len(offers)
		for _, o := range offers {
			lacks, err := r.Lacks(o)
			if err != nil {
				return stats, err
			}
			if lacks {
				want = append(want, Entry{Kind: o.Kind, ID: o.ID})
			}
		}
	}

	// Wants go out from a second goroutine while documents come back, so
	// that neither side waits for the other's flow-control window.
	if len(want) > 0 {
		stats.RoundTrips++
	}
	type result struct {
		bytes int64
		err   error
	}
	sent := make(chan result, 1)
	go func() {
		var n int64
		for len(want) > 0 {
			batch := want[:min(len(want), entriesPerFrame)]
			want = want[len(batch):]
			p := AppendEntries(nil, batch)
			if err := s.WriteFrame(FrameWant, p); err != nil {
				sent <- result{n, err}
				return
			}
			n += int64(len(p) + 5)
		}
		sent <- result{n + 5, s.WriteFrame(FrameWantEnd, nil)}
	}()
	var readErr error
	for readErr == nil {
		typ, p, err := s.ReadFrame(MaxFrame)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("sync: read documents: %w", err)
			break
		}
		stats.Bytes += int64(len(p) + 5)
		if readErr = checkFrame(typ, p, FrameDocs); readErr != nil {
			break
		}
		docs, err := DecodeEntries(p)
		rejected := 0
		if err == nil {
			rejected, err = apply(r, s.PeerDevice(), docs)
		}
		readErr = err
		stats.Received += len(docs) - rejected
		stats.Rejected += rejected
	}
	if readErr != nil {
		s.Abort() // unblocks the writer
	}
	res := <-sent
	stats.Bytes += res.bytes
	if readErr != nil {
		return stats, readErr
	}
	if res.err != nil {
		return stats, fmt.Errorf("sync: send wants: %w", res.err)
	}
	if end.Digest != nil {
		if digest, err = r.Digest(); err != nil {
			return stats, err
		}
		stats.Differ = len(differing(&digest, end.Digest))
	}
	stats.Duration = time.Since(start)
	return stats, nil
}

// checkFrame turns an error frame or an unexpected frame type into an error.
func checkFrame(typ byte, p []byte, want byte) error {
	switch typ {
	case want:
		return nil
	case FrameError:
		return fmt.Errorf("%w: %s", ErrRefused, p)
	}
	return fmt.Errorf("%w: frame type %d, want %d", ErrMalformed, typ, want)
}

// ServePull answers a pull on s: it offers what the puller may lack and
// sends the documents it asks for. It reports the request, so that the
// caller can pull back when the digests differ. s is closed on return.
func ServePull(ctx context.Context, s FrameStream, r Replica) (PullRequest, error) {
	defer s.Close()
	stop := context.AfterFunc(ctx, s.Abort)
	defer stop()
	fail := func(err error) (PullRequest, error) {
		s.WriteFrame(FrameError, []byte(err.Error()))
		return PullRequest{}, err
	}
	typ, p, err := s.ReadFrame(MaxFrame)
	if err != nil {
		return PullRequest{}, fmt.Errorf("sync: read pull: %w", unexpected(err))
	}
	if err := checkFrame(typ, p, FramePull); err != nil {
		return fail(err)
	}
	req, err := DecodePull(p)
	if err != nil {
		return fail(err)
	}
	// The position first: every change up to it is in the digest read
	// after it, so a pull by buckets that ends there misses nothing.
	pos, err := r.Position()
	if err != nil {
		return fail(err)
	}
	digest, err := r.Digest()
	if err != nil {
		return fail(err)
	}
	if digest != req.Digest {
		if err := offer(s, r, &req, &digest, pos); err != nil {
			return fail(err)
		}
	}
	if err := s.WriteFrame(FrameOffersEnd, AppendOffersEnd(nil, &OffersEnd{End: pos, Digest: &digest})); err != nil {
		return req, err
	}
	for {
		typ, p, err := s.ReadFrame(MaxFrame)
		if err != nil {
			return req, fmt.Errorf("sync: read wants: %w", unexpected(err))
		}
		if typ == FrameWantEnd {
			return req, s.CloseWrite()
		}
		if err := checkFrame(typ, p, FrameWant); err != nil {
			return fail(err)
		}
		want, err := DecodeEntries(p)
		if err != nil {
			return fail(err)
		}
		if err := sendWanted(s, r, want); err != nil {
			return fail(err)
		}
	}
}

// sendWanted sends the documents of want as FrameDocs frames of about
// 1 MiB, reading each as its frame fills: a puller that names large
// documents makes the server hold at most a frame and one document, not
// every document it named.
func sendWanted(s FrameStream, r Replica, want []Entry) error {
	f := docFramer{s: s}
	for i := range want {
		docs, err := r.Docs(s.PeerDevice(), want[i:i+1])
		if err != nil {
			return err
		}
		for _, d := range docs {
			if err := f.add(d); err != nil {
				return err
			}
		}
	}
	return f.flush()
}

// offer sends offers: the changes since the puller's last pull when it
// names this change log, otherwise every document in the digest buckets
// that differ.
func offer(s FrameStream, r Replica, req *PullRequest, digest *[256][32]byte, pos Position) error {
	var batch []Entry
	emit := func(e Entry) error {
		batch = append(batch, e)
		if len(batch) < entriesPerFrame {
			return nil
		}
		err := s.WriteFrame(FrameOffers, AppendEntries(nil, batch))
		batch = batch[:0]
		return err
	}
	var err error
	if sinceValid(req.Since, pos) {
		err = r.Changed(s.PeerDevice(), req.Since.Seq, pos.Seq, emit)
	} else {
		err = r.InBuckets(s.PeerDevice(), differing(digest, &req.Digest), emit)
	}
	if err != nil {
		return err
	}
	if len(batch) > 0 {
		return s.WriteFrame(FrameOffers, AppendEntries(nil, batch))
	}
	return nil
}

// SendDocs writes documents as FrameDocs frames of about 1 MiB each.
func SendDocs(s FrameStream, docs []Entry) error {
	f := docFramer{s: s}
	for _, d := range docs {
		if err := f.add(d); err != nil {
			return err
		}
	}
	return f.flush()
}

// docFramer gathers documents into FrameDocs frames of about 1 MiB (a
// larger document goes alone in its frame).
type docFramer struct {
	s     FrameStream
	batch []Entry
	size  int
}

func (f *docFramer) add(d Entry) error {
	n := EntrySize(d)
	if len(f.batch) > 0 && f.size+n > docBytesPerFrame {
		if err := f.flush(); err != nil {
			return err
		}
	}
	f.batch = append(f.batch, d)
	f.size += n
	return nil
}

func (f *docFramer) flush() error {
	if len(f.batch) == 0 {
		return nil
	}
	err := f.s.WriteFrame(FrameDocs, AppendEntries(nil, f.batch))
	f.batch, f.size = f.batch[:0], 0
	return err
}

// Push sends documents to the peer on s, waits until the peer has
// applied them (it closes its side) and closes s. A peer that fails to
// apply them answers with an error frame: Push returns ErrRefused. A
// stream that ends otherwise, or ctx ending first, is an error too: the
// peer may not have the documents.
func Push(ctx context.Context, s FrameStream, docs []Entry) error {
	defer s.Close()
	stop := context.AfterFunc(ctx, s.Abort)
	defer stop()
	if err := SendDocs(s, docs); err != nil {
		return err
	}
	if err := s.CloseWrite(); err != nil {
		return err
	}
	typ, p, err := s.ReadFrame(MaxFrame)
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("push: no answer: %w", err)
	case typ == FrameError:
		return fmt.Errorf("%w: %s", ErrRefused, p)
	}
	return fmt.Errorf("%w: frame type %d after a push", ErrMalformed, typ)
}

// ServePush applies the documents a peer pushes on s, skipping those the
// replica already has, and tells the pusher an error that stops it. s is
// closed on return.
func ServePush(s FrameStream, r Replica) (int, error) {
	defer s.Close()
	applied, err := servePush(s, r)
	if err != nil {
		s.WriteFrame(FrameError, []byte(err.Error()))
	}
	return applied, err
}

func servePush(s FrameStream, r Replica) (int, error) {
	applied := 0
	for {
		typ, p, err := s.ReadFrame(MaxFrame)
		if errors.Is(err, io.EOF) {
			return applied, nil
		}
		if err != nil {
			return applied, fmt.Errorf("push: %w", err)
		}
		if err := checkFrame(typ, p, FrameDocs); err != nil {
			return applied, err
		}
		docs, err := DecodeEntries(p)
		if err != nil {
			return applied, err
		}
		fresh := docs[:0]
		for _, d := range docs {
			lacks, err := r.Lacks(d)
			if err != nil {
				return applied, err
			}
			if lacks {
				fresh = append(fresh, d)
			}
		}
		if len(fresh) == 0 {
			continue
		}
		rejected, err := apply(r, s.PeerDevice(), fresh)
		if err != nil {
			return applied, err
		}
		applied += len(fresh) - rejected
	}
}
