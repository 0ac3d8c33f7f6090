package transport

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/memmesh/memmesh/internal/testwait"
)

// members is a set of authorised devices that tests change.
type members struct {
	mu  sync.Mutex
	set map[string]bool
}

func (m *members) add(ids ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		m.set[id] = true
	}
}

func (m *members) authorize(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.set[id] {
		return fmt.Errorf("%w: %s", ErrUnauthorized, id)
	}
	return nil
}

func newEndpoint(t *testing.T, m *members) *Endpoint {
	t.Helper()
	cfg := identity(t)
	cfg.Authorize = m.authorize
	return listen(t, cfg)
}

// identity is the configuration of an endpoint on a loopback port with a
// new device key.
func identity(t *testing.T) Config {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := Certificate(key)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Listen: "127.0.0.1:0", Key: key, Cert: cert}
}

// listen starts an endpoint with cfg, closed when the test ends.
func listen(t *testing.T, cfg Config) *Endpoint {
	t.Helper()
	e, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	t.Cleanup(cancel)
	return ctx
}

func TestStreamBetweenMembers(t *testing.T) {
	m := &members{set: map[string]bool{}}
	a, b := newEndpoint(t, m), newEndpoint(t, m)
	m.add(a.Device(), b.Device())
	ctx := ctxT(t)

	go func() {
		s, err := b.Accept(ctx)
		if err != nil {
			return
		}
		defer s.Close()
		typ, p, err := s.ReadFrame(MaxFrame)
		if err != nil {
			return
		}
		s.WriteFrame(typ+1, append(p, []byte(" back from "+s.Peer)...))
		s.CloseWrite()
	}()
	s, err := a.Open(ctx, b.Addr().String(), StreamSync)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Peer != b.Device() || s.Version != MaxVersion {
		t.Fatalf("stream peer %s version %d, want %s %d", s.Peer, s.Version, b.Device(), MaxVersion)
	}
	if err := s.WriteFrame(7, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	typ, p, err := s.ReadFrame(MaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello back from " + a.Device(); typ != 8 || string(p) != want {
		t.Fatalf("got frame %d %q, want 8 %q", typ, p, want)
	}
	if _, _, err := s.ReadFrame(MaxFrame); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestUnknownDeviceRefusedAtHandshake(t *testing.T) {
	m := &members{set: map[string]bool{}}
	a, b := newEndpoint(t, m), newEndpoint(t, m)
	m.add(b.Device()) // a is not a member
	ctx := ctxT(t)
	if _, err := a.Open(ctx, b.Addr().String(), StreamSync); err == nil {
		t.Fatal("a non-member opened a stream")
	}
	accepted := make(chan *Stream, 1)
	go func() {
		if s, err := b.Accept(ctx); err == nil {
			accepted <- s
		}
	}()
	select {
	case s := <-accepted:
		t.Fatalf("b accepted a stream from non-member %s", s.Peer)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestJoinConnectionOnlyCarriesJoin(t *testing.T) {
	m := &members{set: map[string]bool{}}
	a, b := newEndpoint(t, m), newEndpoint(t, m)
	m.add(b.Device())
	ctx := ctxT(t)

	// The wrong device id in the token: the dialer refuses the inviter.
	if _, err := a.DialJoin(ctx, b.Addr().String(), a.Device()); err == nil {
		t.Fatal("join to the wrong device succeeded")
	}
	got := make(chan *Stream, 1)
	go func() {
		if s, err := b.Accept(ctx); err == nil {
			got <- s
		}
	}()
	s, err := a.DialJoin(ctx, b.Addr().String(), b.Device())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := <-got
	if in.Type != StreamJoin || in.Peer != a.Device() {
		t.Fatalf("accepted %v from %s, want join from %s", in.Type, in.Peer, a.Device())
	}
	in.Close()
	// The join connection cannot carry anything else.
	if _, err := b.openStream(ctx, &peerConn{conn: s.conn, device: b.Device()}, StreamSync); err == nil {
		t.Fatal("a second stream on a join connection was accepted")
	}
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, 3, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	if want := []byte{0, 0, 0, 4, 3, 'a', 'b', 'c'}; !bytes.Equal(raw, want) {
		t.Fatalf("frame bytes %x, want %x", raw, want)
	}
	for _, tc := range []struct {
		name  string
		in    []byte
		limit int
		want  error
	}{
		{"oversized", []byte{0, 0, 0, 100, 1}, 10, ErrFrameTooLarge},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}, MaxFrame, ErrFrameTooLarge},
		{"empty", []byte{0, 0, 0, 0}, 10, ErrMalformed},
		{"truncated payload", []byte{0, 0, 0, 4, 3, 'a'}, 10, io.ErrUnexpectedEOF},
		{"truncated length", []byte{0, 0}, 10, io.ErrUnexpectedEOF},
		{"nothing", nil, 10, io.EOF},
	} {
		if _, _, err := ReadFrame(bytes.NewReader(tc.in), tc.limit); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestHello(t *testing.T) {
	h := hello{Type: StreamPush, Min: 1, Max: 3, Device: "DEV"}
	got, err := readHello(bytes.NewReader(h.appendTo(nil)))
	if err != nil || got != h {
		t.Fatalf("round trip: %+v %v, want %+v", got, err, h)
	}
	if v, err := negotiate(h); err != nil || v != MaxVersion {
		t.Fatalf("negotiate %+v: %d %v", h, v, err)
	}
	if _, err := negotiate(hello{Min: MaxVersion + 1, Max: MaxVersion + 2}); !errors.Is(err, ErrVersion) {
		t.Fatalf("newer peer: %v, want ErrVersion", err)
	}
	bad := h.appendTo(nil)
	bad[1] = 'X'
	if _, err := readHello(bytes.NewReader(bad)); !errors.Is(err, ErrUnknownMagic) {
		t.Fatalf("bad magic: %v", err)
	}
	if _, err := readReply(bytes.NewReader(appendReply(nil, helloRefused, 0, "not a member"))); !errors.Is(err, ErrRefused) {
		t.Fatalf("refusal: %v", err)
	}
}

func TestMemberlistOverQUIC(t *testing.T) {
	m := &members{set: map[string]bool{}}
	var lists []*memberlist.Memberlist
	var eps []*Endpoint
	for i := range 3 {
		e := newEndpoint(t, m)
		m.add(e.Device())
		eps = append(eps, e)
		conf := memberlist.DefaultLocalConfig()
		conf.Name = fmt.Sprintf("node-%d", i)
		conf.Transport = e.Memberlist(e.Addr())
		conf.UDPBufferSize = MaxPacket
		conf.LogOutput = io.Discard
		conf.ProbeInterval = 200 * time.Millisecond
		conf.ProbeTimeout = 100 * time.Millisecond
		conf.SuspicionMult = 2
		ml, err := memberlist.Create(conf)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ml.Shutdown() })
		lists = append(lists, ml)
	}
	for _, ml := range lists[1:] {
		if _, err := ml.Join([]string{eps[0].Addr().String()}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return lists[2].NumMembers() == 3 && lists[0].NumMembers() == 3 })
	// A member that goes away is detected as dead by the others.
	lists[2].Shutdown()
	eps[2].Close()
	waitFor(t, func() bool { return lists[0].NumMembers() == 2 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testwait.Limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached in %s", testwait.Limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestImpostorHelloRefused: a member whose hello names another device than
// its certificate proves is refused, and nothing reaches Accept.
func TestImpostorHelloRefused(t *testing.T) {
	m := &members{set: map[string]bool{}}
	a, b, c := newEndpoint(t, m), newEndpoint(t, m), newEndpoint(t, m)
	m.add(a.Device(), b.Device(), c.Device())
	ctx := ctxT(t)
	a.device = c.Device() // a claims to be c in its hellos
	accepted := make(chan *Stream, 1)
	go func() {
		if s, err := b.Accept(ctx); err == nil {
			accepted <- s
		}
	}()
	if _, err := a.Open(ctx, b.Addr().String(), StreamSync); !errors.Is(err, ErrRefused) {
		t.Fatalf("impostor hello: %v, want ErrRefused", err)
	}
	select {
	case s := <-accepted:
		t.Fatalf("b accepted a stream claiming %s from %s", c.Device(), s.Peer)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestReadFrameHoldsWhatArrived: a frame that announces the largest size
// and sends a little of it costs about what it sent, not what it
// announced; frames of every size in between still read whole.
func TestReadFrameHoldsWhatArrived(t *testing.T) {
	const sent = 100 << 10
	in := binary.BigEndian.AppendUint32(nil, MaxFrame)
	in = append(append(in, FrameDocs), make([]byte, sent)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := ReadFrame(bytes.NewReader(in), MaxFrame)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a frame cut short: %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("reading %d bytes of a frame announcing %d allocated %d bytes", sent, MaxFrame, got)
	}
	for _, n := range []int{0, 1, frameChunk - 1, frameChunk, frameChunk + 1, 5*frameChunk + 3, MaxFrame - 1} {
		payload := bytes.Repeat([]byte{byte(n)}, n)
		var buf bytes.Buffer
		if err := WriteFrame(&buf, FrameDocs, payload); err != nil {
			t.Fatal(err)
		}
		typ, p, err := ReadFrame(iotest.HalfReader(&buf), MaxFrame)
		if err != nil || typ != FrameDocs || !bytes.Equal(p, payload) {
			t.Fatalf("frame of %d bytes: type %d, %d bytes, %v", n, typ, len(p), err)
		}
	}
}
