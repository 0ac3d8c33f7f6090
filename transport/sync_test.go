package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/testwait"
)

// memReplica is an in-memory Replica: documents by id, a change log, and
// documents it refuses (those whose bytes start with "bad").
type memReplica struct {
	mu    sync.Mutex
	epoch [EpochSize]byte
	docs  map[string]Entry
	log   []string // log[i] is the id changed at seq i+1
}

func newMemReplica(epoch byte) *memReplica {
	return &memReplica{epoch: [EpochSize]byte{epoch}, docs: map[string]Entry{}}
}

// put stores a document with the given content, as a local write.
func (r *memReplica) put(id, content string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.store(Entry{Kind: 'm', ID: id, Heads: []string{headOf(content)}, Doc: []byte(content)})
}

func (r *memReplica) store(e Entry) {
	r.docs[e.ID] = e
	r.log = append(r.log, e.ID)
}

func headOf(content string) string {
	h := sha256.Sum256([]byte(content))
	return fmt.Sprintf("%x", h[:8])
}

func bucketOf(id string) byte { return sha256.Sum256([]byte(id))[0] }

// content returns a document's content, "" when it is missing.
func (r *memReplica) content(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.docs[id].Doc)
}

func (r *memReplica) Digest() ([256][32]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var d [256][32]byte
	for id, e := range r.docs {
		h := sha256.Sum256([]byte(id + "\x00" + e.Heads[0]))
		b := &d[bucketOf(id)]
		for i := range b {
			b[i] ^= h[i]
		}
	}
	return d, nil
}

func (r *memReplica) Position() (Position, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Position{Epoch: r.epoch, Seq: uint64(len(r.log))}, nil
}

func (r *memReplica) Changed(_ string, after, end uint64, fn func(Entry) error) error {
	r.mu.Lock()
	var ids []string
	for seq := after + 1; seq <= end && seq <= uint64(len(r.log)); seq++ {
		if id := r.log[seq-1]; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	es := r.entries(ids)
	r.mu.Unlock()
	return each(es, fn)
}

func (r *memReplica) InBuckets(_ string, buckets []byte, fn func(Entry) error) error {
	r.mu.Lock()
	var ids []string
	for id := range r.docs {
		if slices.Contains(buckets, bucketOf(id)) {
			ids = append(ids, id)
		}
	}
	es := r.entries(ids)
	r.mu.Unlock()
	return each(es, fn)
}

// entries returns the offers (kind, id, heads) of ids.
func (r *memReplica) entries(ids []string) []Entry {
	es := make([]Entry, len(ids))
	for i, id := range ids {
		e := r.docs[id]
		es[i] = Entry{Kind: e.Kind, ID: e.ID, Heads: e.Heads}
	}
	return es
}

func each(es []Entry, fn func(Entry) error) error {
	for _, e := range es {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func (r *memReplica) Lacks(e Entry) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	have, ok := r.docs[e.ID]
	return !ok || !slices.Equal(have.Heads, e.Heads), nil
}

func (r *memReplica) Docs(_ string, want []Entry) ([]Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Entry
	for _, w := range want {
		if e, ok := r.docs[w.ID]; ok {
			out = append(out, e)
		}
	}
	return out, nil
}

func (r *memReplica) Apply(peer string, docs []Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rejected := 0
	for _, d := range docs {
		if bytes.HasPrefix(d.Doc, []byte("bad")) {
			rejected++
			continue
		}
		d.Doc = bytes.Clone(d.Doc) // entries alias the frame
		r.store(d)
	}
	if rejected > 0 {
		return fmt.Errorf("apply: %w", &RejectedError{Peer: peer, Rejected: rejected, Of: len(docs)})
	}
	return nil
}

var _ Replica = (*memReplica)(nil)

// runPull runs Pull by puller against ServePull by server over a pipe,
// and returns both results.
func runPull(t *testing.T, puller, server Replica, since Position) (SyncStats, PullRequest) {
	t.Helper()
	ctx := ctxT(t)
	a, b := Pipe("puller", "server")
	served := make(chan PullRequest, 1)
	go func() {
		req, err := ServePull(ctx, b, server)
		if err != nil {
			t.Errorf("ServePull: %v", err)
		}
		served <- req
	}()
	stats, err := Pull(ctx, a, puller, since)
	if err != nil {
		t.Fatalf("Pull: %v", err)
	}
	return stats, <-served
}

// TestPullSinceMovesOnlyLaterChanges: a pull from a position gets the
// changes after it and nothing before, even what the puller lacks; a pull
// from no position compares digests and gets the rest; a pull between
// equal replicas offers nothing.
func TestPullSinceMovesOnlyLaterChanges(t *testing.T) {
	server, puller := newMemReplica(1), newMemReplica(2)
	for i := 1; i <= 10; i++ {
		server.put(fmt.Sprint("doc", i), fmt.Sprint("v1 of doc", i))
	}
	for _, i := range []int{1, 2, 4, 5} { // doc3 went missing on the puller
		puller.put(fmt.Sprint("doc", i), fmt.Sprint("v1 of doc", i))
	}
	since := Position{Epoch: server.epoch, Seq: 5}
	stats, req := runPull(t, puller, server, since)
	if stats.Offered != 5 || stats.Received != 5 || stats.Rejected != 0 {
		t.Errorf("pull since seq 5 of 10: offered %d, received %d, rejected %d; want 5, 5, 0", stats.Offered, stats.Received, stats.Rejected)
	}
	if want := (Position{Epoch: server.epoch, Seq: 10}); stats.End != want {
		t.Errorf("pull ended at %+v, want %+v", stats.End, want)
	}
	if req.Since != since {
		t.Errorf("server saw since %+v, want %+v", req.Since, since)
	}
	if got := puller.content("doc3"); got != "" {
		t.Errorf("a change before the position reached the puller: doc3 = %q", got)
	}
	if stats.ByBuckets || stats.Differ != 1 || !stats.Reconcile() {
		t.Errorf("pull since a position past a missing document: by buckets %v, %d buckets differ; want changes, 1 bucket, a pull by buckets to follow", stats.ByBuckets, stats.Differ)
	}
	for i := 6; i <= 10; i++ {
		if got, want := puller.content(fmt.Sprint("doc", i)), fmt.Sprint("v1 of doc", i); got != want {
			t.Errorf("doc%d on the puller = %q, want %q", i, got, want)
		}
	}

	stats, _ = runPull(t, puller, server, Position{})
	if stats.Received != 1 || puller.content("doc3") != "v1 of doc3" {
		t.Errorf("pull by digest: received %d, doc3 = %q; want 1 document, doc3", stats.Received, puller.content("doc3"))
	}
	if !stats.ByBuckets || stats.Differ != 0 || stats.Reconcile() {
		t.Errorf("pull by digest: by buckets %v, %d buckets differ after it; want by buckets, none", stats.ByBuckets, stats.Differ)
	}
	stats, _ = runPull(t, puller, server, Position{})
	if stats.Offered != 0 || stats.Received != 0 {
		t.Errorf("pull between equal replicas: offered %d, received %d; want nothing", stats.Offered, stats.Received)
	}
}

// TestOffersEndFromOlderPeers: the end of offers carries the responder's
// digest; one from a version that sent only its position decodes with no
// digest, and a pull from such a peer reports no difference.
func TestOffersEndFromOlderPeers(t *testing.T) {
	pos := Position{Epoch: [EpochSize]byte{7}, Seq: 42}
	var digest [256][32]byte
	digest[3][0] = 1
	got, err := DecodeOffersEnd(AppendOffersEnd(nil, &OffersEnd{End: pos, Digest: &digest}))
	if err != nil || got.End != pos || got.Digest == nil || *got.Digest != digest {
		t.Fatalf("round trip: %+v, %v", got.End, err)
	}
	old, err := DecodeOffersEnd(AppendPosition(nil, pos))
	if err != nil || old.End != pos || old.Digest != nil {
		t.Fatalf("an older peer's end of offers: %+v, digest %v, %v", old.End, old.Digest != nil, err)
	}
}

// TestPullCountsRejectedAndAppliesTheRest: documents the puller refuses
// are counted, and the others of the same frames are applied.
func TestPullCountsRejectedAndAppliesTheRest(t *testing.T) {
	server, puller := newMemReplica(1), newMemReplica(2)
	for i := range 10 {
		content := fmt.Sprint("good ", i)
		if i%4 == 1 {
			content = fmt.Sprint("bad ", i)
		}
		server.put(fmt.Sprint("doc", i), content)
	}
	stats, _ := runPull(t, puller, server, Position{})
	if stats.Offered != 10 || stats.Received != 7 || stats.Rejected != 3 {
		t.Errorf("offered %d, received %d, rejected %d; want 10, 7, 3", stats.Offered, stats.Received, stats.Rejected)
	}
	for i := range 10 {
		got, want := puller.content(fmt.Sprint("doc", i)), fmt.Sprint("good ", i)
		if i%4 == 1 {
			want = ""
		}
		if got != want {
			t.Errorf("doc%d on the puller = %q, want %q", i, got, want)
		}
	}
}

// oversized is a frame header announcing one byte more than MaxFrame.
func oversized() []byte { return binary.BigEndian.AppendUint32(nil, MaxFrame+1) }

// TestFrameOverLimitRefused: a frame announcing more than MaxFrame is
// refused by its header, on each side of a pull and on a push.
func TestFrameOverLimitRefused(t *testing.T) {
	ctx := ctxT(t)
	t.Run("pull request", func(t *testing.T) {
		a, b := Pipe("puller", "server")
		go a.Write(oversized())
		_, err := ServePull(ctx, b, newMemReplica(1))
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("ServePull: %v, want %v", err, ErrFrameTooLarge)
		}
	})
	t.Run("offers", func(t *testing.T) {
		a, b := Pipe("puller", "server")
		go func() {
			b.ReadFrame(MaxFrame)
			b.Write(oversized())
		}()
		_, err := Pull(ctx, a, newMemReplica(1), Position{})
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("Pull: %v, want %v", err, ErrFrameTooLarge)
		}
	})
	t.Run("push", func(t *testing.T) {
		a, b := Pipe("pusher", "server")
		go func() {
			a.Write(oversized())
			io.Copy(io.Discard, a) // the server's answer
		}()
		_, err := ServePush(b, newMemReplica(1))
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("ServePush: %v, want %v", err, ErrFrameTooLarge)
		}
	})
	t.Run("write", func(t *testing.T) {
		a, _ := Pipe("pusher", "server")
		err := Push(ctx, a, []Entry{{Kind: 'm', ID: "big", Doc: make([]byte, MaxFrame)}})
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("Push of a document over the cap: %v, want %v", err, ErrFrameTooLarge)
		}
	})
}

// TestPeerThatStopsDoesNotHang: a peer that stops answering at any point
// of a pull, without closing its stream, leaves the other side waiting
// only until its context ends.
func TestPeerThatStopsDoesNotHang(t *testing.T) {
	server := newMemReplica(1)
	for i := range 50 {
		server.put(fmt.Sprint("doc", i), fmt.Sprint("content ", i))
	}
	// Each case is the server's (or the puller's) part until it stops.
	cases := map[string]func(s *PipeEnd){
		"before offers": func(s *PipeEnd) { s.ReadFrame(MaxFrame) },
		"amid offers": func(s *PipeEnd) {
			s.ReadFrame(MaxFrame)
			s.WriteFrame(FrameOffers, AppendEntries(nil, []Entry{{Kind: 'm', ID: "doc1", Heads: []string{"h"}}}))
		},
		"before documents": func(s *PipeEnd) {
			s.ReadFrame(MaxFrame)
			s.WriteFrame(FrameOffers, AppendEntries(nil, []Entry{{Kind: 'm', ID: "doc1", Heads: []string{"h"}}}))
			s.WriteFrame(FrameOffersEnd, AppendPosition(nil, Position{}))
		},
	}
	for name, stop := range cases {
		t.Run("server stops "+name, func(t *testing.T) {
			a, b := Pipe("puller", "server")
			go stop(b)
			endsWithContext(t, "Pull", func(ctx context.Context) error {
				_, err := Pull(ctx, a, newMemReplica(2), Position{})
				return err
			})
		})
	}
	t.Run("puller stops amid documents", func(t *testing.T) {
		a, b := Pipe("puller", "server")
		go func() {
			a.WriteFrame(FramePull, AppendPull(nil, &PullRequest{}))
			for {
				typ, _, err := a.ReadFrame(MaxFrame)
				if err != nil {
					return
				}
				if typ == FrameOffersEnd {
					break
				}
			}
			a.WriteFrame(FrameWant, AppendEntries(nil, []Entry{{Kind: 'm', ID: "doc1"}}))
		}()
		endsWithContext(t, "ServePull", func(ctx context.Context) error {
			_, err := ServePull(ctx, b, server)
			return err
		})
	})
}

// endsWithContext runs fn with a context that ends after 200 ms and fails
// the test if fn succeeds, or still runs testwait.Limit later.
func endsWithContext(t *testing.T, what string, fn func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("%s with a peer that stopped succeeded", what)
		}
	case <-time.After(testwait.Limit):
		t.Fatalf("%s still waits %s after its context ended", what, testwait.Limit)
	}
}

// TestPushAppliesWhatTheReplicaLacks: a push applies the documents the
// receiver lacks, skips those it has and counts neither those nor the
// refused ones.
func TestPushAppliesWhatTheReplicaLacks(t *testing.T) {
	pusher, receiver := newMemReplica(1), newMemReplica(2)
	for i := range 6 {
		pusher.put(fmt.Sprint("doc", i), fmt.Sprint("content ", i))
	}
	pusher.put("doc5", "bad content")
	receiver.put("doc0", "content 0")
	receiver.put("doc1", "older content")
	docs, _ := pusher.Docs("receiver", []Entry{{ID: "doc0"}, {ID: "doc1"}, {ID: "doc2"}, {ID: "doc3"}, {ID: "doc4"}, {ID: "doc5"}})
	a, b := Pipe("pusher", "receiver")
	pushed := make(chan error, 1)
	go func() { pushed <- Push(ctxT(t), a, docs) }()
	applied, err := ServePush(b, receiver)
	if err != nil {
		t.Fatalf("ServePush: %v", err)
	}
	if err := <-pushed; err != nil {
		t.Fatalf("Push: %v", err)
	}
	if applied != 4 {
		t.Errorf("applied %d, want 4 (doc1 to doc4)", applied)
	}
	for i := range 5 {
		if got, want := receiver.content(fmt.Sprint("doc", i)), fmt.Sprint("content ", i); got != want {
			t.Errorf("doc%d on the receiver = %q, want %q", i, got, want)
		}
	}
	if got := receiver.content("doc5"); got != "" {
		t.Errorf("a refused document was stored: %q", got)
	}
	if n := len(receiver.log); n != 6 { // 2 local writes, 4 applied
		t.Errorf("receiver's change log has %d entries, want 6: a document it had was applied again", n)
	}
}

// TestSendDocsFillsFramesToAboutOneMiB: documents go in frames of about
// docBytesPerFrame, a larger document alone in its frame.
func TestSendDocsFillsFramesToAboutOneMiB(t *testing.T) {
	docs := []Entry{
		{Kind: 'm', ID: "a", Doc: make([]byte, 600<<10)},
		{Kind: 'm', ID: "b", Doc: make([]byte, 300<<10)},
		{Kind: 'm', ID: "c", Doc: make([]byte, 200<<10)},
		{Kind: 'm', ID: "d", Doc: make([]byte, 3<<20)},
		{Kind: 'm', ID: "e", Doc: make([]byte, 10)},
	}
	a, b := Pipe("pusher", "receiver")
	go func() {
		SendDocs(a, docs)
		a.CloseWrite()
	}()
	var frames [][]string
	for {
		typ, p, err := b.ReadFrame(MaxFrame)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || typ != FrameDocs {
			t.Fatalf("frame %d: type %d, err %v", len(frames), typ, err)
		}
		es, err := DecodeEntries(p)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range es {
			ids = append(ids, e.ID)
		}
		frames = append(frames, ids)
	}
	want := [][]string{{"a", "b"}, {"c"}, {"d"}, {"e"}}
	if !slices.EqualFunc(frames, want, slices.Equal) {
		t.Errorf("frames %v, want %v", frames, want)
	}
}

// failingReplica is a memReplica whose Apply fails as a full disk does.
type failingReplica struct{ *memReplica }

func (failingReplica) Apply(string, []Entry) error { return errors.New("no space left on device") }

// TestPushTellsAFailedApply: a push the receiver cannot store fails on
// the pusher's side too, so that it tries again; one it stored succeeds
// only once the receiver has applied it.
func TestPushTellsAFailedApply(t *testing.T) {
	docs := []Entry{{Kind: 'm', ID: "doc", Heads: []string{headOf("x")}, Doc: []byte("x")}}
	a, b := Pipe("pusher", "receiver")
	pushed := make(chan error, 1)
	go func() { pushed <- Push(ctxT(t), a, docs) }()
	if _, err := ServePush(b, failingReplica{newMemReplica(2)}); err == nil {
		t.Fatal("ServePush stored nothing and reported no error")
	}
	if err := <-pushed; !errors.Is(err, ErrRefused) {
		t.Fatalf("Push to a receiver that failed to apply it: %v, want %v", err, ErrRefused)
	}

	// A receiver that reads the documents and never answers: the push
	// waits for it until its context ends.
	a, b = Pipe("pusher", "receiver")
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() { pushed <- Push(ctx, a, docs) }()
	for {
		if _, _, err := b.ReadFrame(MaxFrame); err != nil {
			break // the pusher's end of the documents
		}
	}
	select {
	case err := <-pushed:
		t.Fatalf("Push returned %v before the receiver answered", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-pushed; err == nil {
		t.Fatal("Push whose receiver never answered succeeded")
	}
}

// heldReplica is a memReplica that counts the document bytes its Docs
// handed out, and the largest count not yet written by the stream the
// pull is served on (written).
type heldReplica struct {
	*memReplica
	fetched, most atomic.Int64
	written       *atomic.Int64
}

func (r *heldReplica) Docs(peer string, want []Entry) ([]Entry, error) {
	docs, err := r.memReplica.Docs(peer, want)
	for _, d := range docs {
		held := r.fetched.Add(int64(len(d.Doc))) - r.written.Load()
		if held > r.most.Load() {
			r.most.Store(held)
		}
	}
	return docs, err
}

// writeCounter counts the bytes of the frames written on a stream.
type writeCounter struct {
	FrameStream
	n *atomic.Int64
}

func (w writeCounter) WriteFrame(typ byte, p []byte) error {
	w.n.Add(int64(len(p)))
	return w.FrameStream.WriteFrame(typ, p)
}

// TestServePullHoldsAFrameOfWants: a puller that wants many large
// documents at once makes the server hold about a frame of them, not
// all it named.
func TestServePullHoldsAFrameOfWants(t *testing.T) {
	var written atomic.Int64
	server := &heldReplica{memReplica: newMemReplica(1), written: &written}
	for i := range 40 {
		server.put(fmt.Sprintf("big%02d", i), strings.Repeat(fmt.Sprint(i%10), 512<<10))
	}
	ctx := ctxT(t)
	a, b := Pipe("puller", "server")
	done := make(chan error, 1)
	go func() {
		_, err := ServePull(ctx, writeCounter{b, &written}, server)
		done <- err
	}()
	stats, err := Pull(ctx, a, newMemReplica(2), Position{})
	if err != nil || stats.Received != 40 {
		t.Fatalf("pull: %d received, %v", stats.Received, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if most := server.most.Load(); most > docBytesPerFrame+(512<<10) {
		t.Fatalf("the server held %d bytes of wanted documents at once, want at most a frame and a document", most)
	}
}
