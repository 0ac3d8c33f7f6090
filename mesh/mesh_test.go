package mesh

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/secrets/secretstest"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// testStore opens a store in a temporary directory, closed at the end of
// the test.
func testStore(t *testing.T) *storage.Store {
	t.Helper()
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testMesh is a mesh over store that is not started: no endpoint, no
// membership, only the state its scheduling and pushing read.
func testMesh(t testing.TB, store Store, clk clock.Clock) *Mesh {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	self := strings.Repeat("A", 52)
	host := &recordHost{}
	reg, err := NewRegistry(self, crdt.ActorID(self), host, store, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Name: "test", SyncInterval: time.Hour, Clock: clk}, Identity{Key: key, Device: self},
		host, store, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// What Start does besides the network: the loops a peer starts stop
	// with the test.
	m.ctx, m.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() {
		m.cancel()
		m.wg.Wait()
	})
	return m
}

// commit stores one version of the memory id and returns its seq.
func commit(t *testing.T, st *storage.Store, id, head string) uint64 {
	t.Helper()
	seq, err := st.Commit(storage.Record{Kind: storage.KindMemory, ID: id, Heads: []string{head}, Value: []byte("{}"), Doc: []byte(head)})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestPushGoesPastReceivedCommits: a memory changed twice keeps only its
// newest change-log entry, so a commit received from a peer can sit where
// the pusher stands, with local changes after it. The pusher reads past
// it to them instead of stopping there for good.
func TestPushGoesPastReceivedCommits(t *testing.T) {
	st := testStore(t)
	m := testMesh(t, st, nil)
	start := st.DurableSeq()
	commit(t, st, "x", "x1")             // edited locally
	received := commit(t, st, "r", "r1") // a commit received from a peer
	commit(t, st, "x", "x2")             // edited locally again: x's first entry is gone
	m.remote[received] = true

	var pushed []string
	for after := start; ; {
		after = m.skipRemote(after)
		batch, last, err := m.nextPush(after)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range batch {
			pushed = append(pushed, e.ID)
		}
		if last == after {
			break
		}
		after = last
	}
	if !slices.Contains(pushed, "x") {
		t.Fatalf("the local edit after a received commit was never pushed (pushed %v)", pushed)
	}
	if slices.Contains(pushed, "r") {
		t.Fatal("a commit received from a peer was pushed on")
	}
}

// TestPullBackOncePerInterval: serving a pull to a peer whose digest
// differs from ours starts a pull back, but not when one from that peer
// started within the sync interval. The mesh's clock is a fake one: the
// intervals pass without sleeping.
func TestPullBackOncePerInterval(t *testing.T) {
	st := testStore(t)
	clock := newFakeClock()
	m := testMesh(t, st, clock)
	const peer = "B"
	pulled := func() { // a pull from the peer starts
		m.mu.Lock()
		m.peer(peer).pulledAt = clock.Now()
		m.mu.Unlock()
	}
	pulled()                                                                        // the pull of the join
	commit(t, st, "x", "x1")                                                        // a difference between the two
	req := transport.PullRequest{Since: transport.Position{Epoch: m.epoch, Seq: 1}} // a digest unlike ours

	clock.Advance(m.cfg.SyncInterval)
	if !m.pullBack(peer, req) {
		t.Fatal("no pull back from a peer whose digest differs, none pulled lately")
	}
	pulled()
	if m.pullBack(peer, req) {
		t.Fatal("a pull back from a peer pulled from just now: two nodes whose digests differ for good pull from each other without end")
	}
	clock.Advance(m.cfg.SyncInterval - time.Millisecond)
	if m.pullBack(peer, req) {
		t.Fatal("a pull back before the sync interval passed")
	}
	clock.Advance(time.Millisecond)
	if !m.pullBack(peer, req) {
		t.Fatal("no pull back once the sync interval passed")
	}
	if _, err := st.Commit(storage.Record{Kind: storage.KindMemory, ID: "x", Erase: true}); err != nil {
		t.Fatal(err)
	}
	same, err := st.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if m.pullBack(peer, transport.PullRequest{Since: req.Since, Digest: same}) {
		t.Fatal("a pull back from a peer whose digest is ours")
	}
}

// TestPeerDeviceName: a device name a peer sends that holds a secret, a
// control or bidi character, or too many characters is replaced.
func TestPeerDeviceName(t *testing.T) {
	for _, c := range secretstest.Cases(t) {
		for _, line := range strings.Split(c.Input, "\n") {
			if !strings.Contains(line, c.Secrets[0]) {
				continue
			}
			if got := peerDeviceName(strings.TrimSpace(line), "ABCDEFGH"); got != "ABCDEFGH" {
				t.Errorf("%s: a peer's device name %q was kept as %q", c.Name, line, got)
			}
		}
	}
	for name, want := range map[string]string{"laptop": "laptop", " Anna's desktop ": "Anna's desktop", "": "ABCDEFGH",
		"evil\x1b]0;x\x07": "ABCDEFGH", "rtl\u202egpj.exe": "ABCDEFGH", strings.Repeat("x", 65): "ABCDEFGH"} {
		if got := peerDeviceName(name, "ABCDEFGH"); got != want {
			t.Errorf("peerDeviceName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestSteppedNeedsBoth: a mesh the caller steps needs both its network
// and its membership.
func TestSteppedNeedsBoth(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Name: "test", Network: endpointNetwork{}}, Identity{Key: key, Device: strings.Repeat("A", 52)},
		nil, testStore(t), nil, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("a mesh with a network and no membership was made")
	}
}

// TestFailedPushRetried: a push that fails (a network blip) is sent again
// with backoff, read from the mesh's clock, until the peer has it; and no
// longer once the peer is dead, anti-entropy then carries it.
func TestFailedPushRetried(t *testing.T) {
	clock := newFakeClock()
	m := testMesh(t, testStore(t), clock)
	sent := make(chan string, 16) // the first id of each batch sent
	var failures atomic.Int32
	failures.Store(3)
	m.send = func(_ context.Context, _, _ string, batch []transport.Entry) error {
		// The outcome is drawn before the test hears of the send, so that
		// what the test sets after it hears applies to the next send.
		fail := failures.Add(-1) >= 0
		sent <- batch[0].ID
		if fail {
			return errors.New("network is unreachable")
		}
		return nil
	}
	m.mu.Lock()
	p := m.peer("B")
	p.state, p.addr = "alive", "127.0.0.2:7420"
	m.mu.Unlock()
	expect := func(id string) {
		t.Helper()
		select {
		case got := <-sent:
			if got != id {
				t.Fatalf("sent %s, want %s", got, id)
			}
		case <-time.After(testwait.Limit):
			t.Fatalf("%s was not sent", id)
		}
	}
	none := func() {
		t.Helper()
		select {
		case got := <-sent:
			t.Fatalf("%s sent before its time", got)
		default:
		}
	}

	p.push <- []transport.Entry{{ID: "x"}}
	expect("x")
	for _, wait := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second} {
		waitPending(t, clock, 1)
		clock.Advance(wait - time.Millisecond)
		none()
		clock.Advance(time.Millisecond)
		expect("x") // the third retry succeeds
	}
	p.push <- []transport.Entry{{ID: "y"}}
	expect("y") // the next batch: x is not sent again

	// A dead peer's push is given up after the attempt in flight.
	failures.Store(100)
	p.push <- []transport.Entry{{ID: "z"}}
	expect("z")
	waitPending(t, clock, 1)
	m.mu.Lock()
	p.state = "dead"
	m.mu.Unlock()
	clock.Advance(time.Second)
	p.push <- []transport.Entry{{ID: "w"}}
	expect("w")
}

// TestPeersTellSuspectAndIndirect: a peer that stops answering direct
// probes is suspect, unless a peer that reaches it says so: it is then
// alive, reached through that peer. Reports age out, and only members'
// count.
func TestPeersTellSuspectAndIndirect(t *testing.T) {
	clock := newFakeClock()
	m := testMesh(t, testStore(t), clock)
	const b, c = "B", "C"
	for _, d := range []string{b, c} {
		m.noteRecord(model.MeshRecord{What: model.MeshDevice, Key: d})
		m.note(&memberlist.Node{Name: d, Addr: net.IPv4(127, 0, 0, 2), Port: 7420}, "alive")
	}
	ping := meshPing{m}
	acked := func(d string) { ping.NotifyPingComplete(&memberlist.Node{Name: d}, time.Millisecond, nil) }
	check := func(d, wantState string, wantVia ...string) {
		t.Helper()
		m.mu.Lock()
		state, via := m.reach(d, m.peers[d], clock.Now())
		m.mu.Unlock()
		if state != wantState || !slices.Equal(via, wantVia) {
			t.Fatalf("%s: %s via %v, want %s via %v", d, state, via, wantState, wantVia)
		}
	}
	check(c, "alive") // joined just now: not probed yet

	// A peer that reaches c has a probe window to probe it and a retry
	// interval to tell: c is not suspect before its report could come.
	step := m.cfg.ProbeInterval
	m.mu.Lock()
	before := m.probeWindow() + m.cfg.RetryInterval
	m.mu.Unlock()
	for elapsed := time.Duration(0); elapsed < before; elapsed += step {
		clock.Advance(step)
		acked(b)
	}
	check(c, "alive")
	for range 20 { // b answers every probe, c none, and nobody vouches
		clock.Advance(step)
		acked(b)
	}
	check(b, "alive")
	check(c, "suspect")

	m.heardReach([]byte(`{"f":"C","d":["B"]}`)) // c's report does not vouch for c
	m.heardReach([]byte(`{"f":"X","d":["C"]}`)) // nor does a stranger's
	check(c, "suspect")
	m.heardReach([]byte(`{"f":"B","d":["C"]}`))
	check(c, "alive", b)
	if !strings.Contains(string(m.reachReport()), `"B"`) || strings.Contains(string(m.reachReport()), `"C"`) {
		t.Fatalf("reach report %s, want b listed and c not", m.reachReport())
	}

	for range 20 { // b's report ages out
		clock.Advance(step)
		acked(b)
	}
	check(c, "suspect")
	m.heardReach([]byte(`{"f":"B","d":["C"]}`))
	check(c, "alive", b)
	acked(c) // c answers again
	check(c, "alive")

	m.note(&memberlist.Node{Name: c}, "dead")
	check(c, "dead")
}

// slowSyncStore is a store whose durable local writes wait until release
// is closed, as an fsync on a busy disk does.
type slowSyncStore struct {
	*storage.Store
	release chan struct{}
	wrote   chan string
}

func (s slowSyncStore) PutLocalDurable(key string, value []byte) error {
	<-s.release
	err := s.Store.PutLocalDurable(key, value)
	s.wrote <- key
	return err
}

// TestMembershipEventsDoNotWaitForTheDisk: memberlist calls its event
// delegates holding its node lock; a join event returns before the new
// peer's address is durable, which is written after.
func TestMembershipEventsDoNotWaitForTheDisk(t *testing.T) {
	st := slowSyncStore{Store: testStore(t), release: make(chan struct{}), wrote: make(chan string, 1)}
	m := testMesh(t, st, nil)
	m.goLoop(m.saveLoop)
	returned := make(chan struct{})
	go func() {
		(&meshEvents{m}).NotifyJoin(&memberlist.Node{Name: "B", Addr: net.IPv4(127, 0, 0, 2), Port: 7420})
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(testwait.Limit):
		close(st.release)
		t.Fatal("a join event waited for a durable write")
	}
	close(st.release)
	if key := <-st.wrote; key != localKnown {
		t.Fatalf("wrote %s, want %s", key, localKnown)
	}
	data, err := st.GetLocal(localKnown)
	if err != nil || !strings.Contains(string(data), "127.0.0.2:7420") {
		t.Fatalf("known peers saved as %s (%v), want the new peer's address", data, err)
	}
}

// TestRevokedDeviceStopsSyncing: once told it was revoked, a device gives
// up the push in flight, sends no other and starts no pull; a member
// would refuse each.
func TestRevokedDeviceStopsSyncing(t *testing.T) {
	clock := newFakeClock()
	m := testMesh(t, testStore(t), clock)
	sent := make(chan string, 16)
	m.send = func(_ context.Context, _, _ string, batch []transport.Entry) error {
		sent <- batch[0].ID
		return errors.New("refused")
	}
	m.mu.Lock()
	p := m.peer("B")
	p.state, p.addr = "alive", "127.0.0.2:7420"
	m.mu.Unlock()
	p.push <- []transport.Entry{{ID: "x"}}
	<-sent
	waitPending(t, clock, 1)
	by := "B"
	m.revokedBy.Store(&by)
	clock.Advance(time.Minute)
	p.push <- []transport.Entry{{ID: "y"}}
	p.push <- []transport.Entry{{ID: "z"}}
	testwait.Until(t, "the pushes taken", func() bool { return len(p.push) == 0 }) // y is done once z is taken
	select {
	case got := <-sent:
		t.Fatalf("a revoked device sent %s", got)
	default:
	}
	m.startPull("B")
	m.mu.Lock()
	pulling := p.pulling
	m.mu.Unlock()
	if pulling {
		t.Fatal("a revoked device started a pull")
	}
}

// refusingNetwork opens nothing.
type refusingNetwork struct{}

func (refusingNetwork) Open(context.Context, string, string, transport.StreamType) (transport.FrameStream, error) {
	return nil, errors.New("unreachable")
}

// TestSlowPullHoldsBackOthersNoLongerThanAWait: a pull that a peer keeps
// alive without end (a trickle) holds the one pull slot; the pull from
// another peer waits pullSlotWait for it, then runs beside it.
func TestSlowPullHoldsBackOthersNoLongerThanAWait(t *testing.T) {
	clock := newFakeClock()
	m := testMesh(t, testStore(t), clock)
	m.net = refusingNetwork{}
	m.pullSlot <- struct{}{} // the slow pull
	done := make(chan error, 1)
	go func() {
		_, err := m.pull(context.Background(), "B", "127.0.0.2:7420")
		done <- err
	}()
	waitPending(t, clock, 1)
	clock.Advance(pullSlotWait)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a pull over a network that opens nothing succeeded")
		}
	case <-time.After(testwait.Limit):
		t.Fatal("the pull still waits for the slow one")
	}
}

// TestPullEndsWithItsContext: a pull whose caller gives up (a CLI's sync
// interrupted) ends with the context's error, even while it waits for the
// pull slot a slow pull holds.
func TestPullEndsWithItsContext(t *testing.T) {
	clock := newFakeClock()
	m := testMesh(t, testStore(t), clock)
	m.net = refusingNetwork{}
	m.mu.Lock()
	m.peer("B").addr = "127.0.0.2:7420"
	m.mu.Unlock()
	m.pullSlot <- struct{}{} // the slow pull
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.PullFrom(ctx, "B")
		done <- err
	}()
	waitPending(t, clock, 1) // waiting for the slot
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a pull given up: %v, want context.Canceled", err)
		}
	case <-time.After(testwait.Limit):
		t.Fatal("a pull given up goes on")
	}
}
