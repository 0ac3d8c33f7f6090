package transport

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// acceptAll hands every stream e accepts to got.
func acceptAll(ctx context.Context, e *Endpoint) <-chan *Stream {
	got := make(chan *Stream, 64)
	go func() {
		for {
			s, err := e.Accept(ctx)
			if err != nil {
				return
			}
			got <- s
		}
	}()
	return got
}

// TestStreamsCappedPerDeviceAndType: a device gets streamCap streams of a
// type open at once; one more is refused with ErrBusy, without reaching
// Accept, while its other types and other devices still get theirs, and
// closing one frees its place.
func TestStreamsCappedPerDeviceAndType(t *testing.T) {
	m := &members{set: map[string]bool{}}
	a, b, c := newEndpoint(t, m), newEndpoint(t, m), newEndpoint(t, m)
	m.add(a.Device(), b.Device(), c.Device())
	ctx := ctxT(t)
	got := acceptAll(ctx, b)
	addr := b.Addr().String()

	var held []*Stream
	for range streamCap(StreamPush) {
		if _, err := a.Open(ctx, addr, StreamPush); err != nil {
			t.Fatal(err)
		}
		held = append(held, <-got)
	}
	if _, err := a.Open(ctx, addr, StreamPush); !errors.Is(err, ErrRefused) {
		t.Fatalf("push stream %d: %v, want a refusal", streamCap(StreamPush)+1, err)
	}
	if _, err := a.Open(ctx, addr, StreamSync); err != nil {
		t.Fatalf("a sync stream beside the pushes: %v", err)
	}
	if s := <-got; s.Type != StreamSync {
		t.Fatalf("accepted a %v stream, want the sync one", s.Type)
	}
	if _, err := c.Open(ctx, addr, StreamPush); err != nil {
		t.Fatalf("another device's push: %v", err)
	}
	if s := <-got; s.Peer != c.Device() {
		t.Fatalf("accepted a stream from %s, want %s's", s.Peer, c.Device())
	}
	held[0].Close()
	if _, err := a.Open(ctx, addr, StreamPush); err != nil {
		t.Fatalf("a push once one closed: %v", err)
	}
	if s := <-got; s.Peer != a.Device() || s.Type != StreamPush {
		t.Fatalf("accepted %v from %s, want a push from %s", s.Type, s.Peer, a.Device())
	}
}

// TestConnectionsCappedPerDevice: a device that opens more than
// maxConnsPerDevice connections (here from as many sockets) loses its
// oldest, and the newest work.
func TestConnectionsCappedPerDevice(t *testing.T) {
	m := &members{set: map[string]bool{}}
	b := newEndpoint(t, m)
	cfg := identity(t)
	cfg.Authorize = m.authorize
	m.add(b.Device(), DeviceID(cfg.Key.Public().(ed25519.PublicKey)))
	ctx := ctxT(t)
	addr := b.Addr().String()
	var conns []*quic.Conn
	for i := range maxConnsPerDevice + 1 {
		pc, err := listen(t, cfg).connect(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, pc.conn)
		if i < maxConnsPerDevice {
			// b registers a connection once its handshake ends there,
			// after the dialer's: the next dial waits for it, so that b
			// sees them in the order they were made.
			waitFor(t, func() bool {
				b.mu.Lock()
				defer b.mu.Unlock()
				return len(b.conns) == i+1
			})
		}
	}
	select {
	case <-conns[0].Context().Done():
	case <-ctx.Done():
		t.Fatal("the oldest connection stays open")
	}
	var closed *quic.ApplicationError
	if cause := context.Cause(conns[0].Context()); !errors.As(cause, &closed) || closed.ErrorCode != codeTooMany {
		t.Fatalf("the oldest connection ended with %v, want code %d", cause, codeTooMany)
	}
	for _, conn := range conns[1:] {
		if conn.Context().Err() != nil {
			t.Fatal("a newer connection was closed")
		}
	}
}

// TestJoinConnectionsCapped: at most maxJoinConns join connections are
// open at once; one that opens no stream is closed after the hello's
// timeout, which makes room for the next.
func TestJoinConnectionsCapped(t *testing.T) {
	m := &members{set: map[string]bool{}}
	a, b := newEndpoint(t, m), newEndpoint(t, m)
	m.add(b.Device())
	ctx := ctxT(t)
	dial := func() *quic.Conn {
		conn, err := a.tr.Dial(ctx, b.Addr(), a.clientTLS(alpnJoin, b.Device()), a.quic)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.CloseWithError(0, "") })
		return conn
	}
	var open []*quic.Conn
	for range maxJoinConns {
		open = append(open, dial())
	}
	waitFor(t, func() bool { // b counts a connection once its handshake ends there
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.joins == maxJoinConns
	})
	extra := dial()
	select {
	case <-extra.Context().Done():
	case <-ctx.Done():
		t.Fatal("a join connection over the cap stays open")
	}
	var closed *quic.ApplicationError
	if !errors.As(context.Cause(extra.Context()), &closed) || closed.ErrorCode != codeTooMany {
		t.Fatalf("the join connection over the cap ended with %v, want code %d", context.Cause(extra.Context()), codeTooMany)
	}
	for _, conn := range open {
		select {
		case <-conn.Context().Done():
		case <-ctx.Done():
			t.Fatal("a join connection that opened no stream stays open")
		}
	}
	if _, err := a.DialJoin(ctx, b.Addr().String(), b.Device()); err != nil {
		t.Fatalf("a join once the others closed: %v", err)
	}
}

// TestStalledStreamDropped: a peer that stops sending in the middle of a
// frame, or stops reading what it is sent, fails the read or the write
// once the idle time passes without progress.
func TestStalledStreamDropped(t *testing.T) {
	ctx := ctxT(t)
	a, b, got := idlePair(t, ctx, 300*time.Millisecond)
	s, err := a.Open(ctx, b.Addr().String(), StreamPush)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	head := binary.BigEndian.AppendUint32(nil, 1000)
	if _, err := s.Write(append(head, FrameDocs, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	in := <-got
	defer in.Close()
	if err := ended(ctx, func() error { _, _, err := in.ReadFrame(MaxFrame); return err }); !isTimeout(err) {
		t.Fatalf("reading a frame its peer stopped sending: %v, want a timeout", err)
	}

	s, err = a.Open(ctx, b.Addr().String(), StreamSync)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in = <-got
	defer in.Close()
	if err := ended(ctx, func() error { return in.WriteFrame(FrameDocs, make([]byte, 16<<20)) }); !isTimeout(err) {
		t.Fatalf("writing to a peer that does not read: %v, want a timeout", err)
	}
}

// TestSlowStreamKept: a frame whose bytes keep coming, however slowly,
// is read whole, long after the idle time.
func TestSlowStreamKept(t *testing.T) {
	ctx := ctxT(t)
	a, b, got := idlePair(t, ctx, 2*time.Second)
	s, err := a.Open(ctx, b.Addr().String(), StreamPush)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 40
	read := make(chan error, 1)
	go func() {
		in := <-got
		defer in.Close()
		_, p, err := in.ReadFrame(MaxFrame)
		if err == nil && len(p) != n {
			err = errors.New("short frame")
		}
		read <- err
	}()
	frame := append(binary.BigEndian.AppendUint32(nil, n+1), FrameDocs)
	frame = append(frame, make([]byte, n)...)
	for _, c := range frame { // 45 bytes, one each 100 ms: 4.5 s in all
		if _, err := s.Write([]byte{c}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := <-read; err != nil {
		t.Fatalf("a frame sent slowly: %v", err)
	}
}

// idlePair makes two members, a and b, where b's streams fail after idle
// without progress; got has the streams b accepts.
func idlePair(t *testing.T, ctx context.Context, idle time.Duration) (a, b *Endpoint, got <-chan *Stream) {
	t.Helper()
	m := &members{set: map[string]bool{}}
	a = newEndpoint(t, m)
	cfg := identity(t)
	cfg.Authorize, cfg.idle = m.authorize, idle
	b = listen(t, cfg)
	m.add(a.Device(), b.Device())
	return a, b, acceptAll(ctx, b)
}

// ended runs fn and returns its error, or errStillRunning once ctx ends
// first.
func ended(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errStillRunning
	}
}

var errStillRunning = errors.New("still running when the test's time ran out")

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestRefusalsKeptBounded: refusals of ever new devices (a stranger makes
// a key per attempt) keep at most maxRefusedKept of them in memory.
func TestRefusalsKeptBounded(t *testing.T) {
	e := newEndpoint(t, &members{set: map[string]bool{}})
	for i := range 3 * maxRefusedKept {
		e.logRefusal(fmt.Sprintf("device-%d", i), "refused connection")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.refused) > maxRefusedKept {
		t.Fatalf("%d refused devices kept, want at most %d", len(e.refused), maxRefusedKept)
	}
}

// TestBlockedWriteKeptWhilePeerSends: a write its peer does not read for
// longer than the idle time is not cut while bytes keep coming the other
// way (a puller's wants wait while it applies the documents it reads).
func TestBlockedWriteKeptWhilePeerSends(t *testing.T) {
	ctx := ctxT(t)
	a, b, got := idlePair(t, ctx, time.Second)
	s, err := a.Open(ctx, b.Addr().String(), StreamSync)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	in := <-got
	defer in.Close()
	wrote := make(chan error, 1)
	go func() { wrote <- in.WriteFrame(FrameDocs, make([]byte, 16<<20)) }()
	go io.Copy(io.Discard, in)
	for range 30 { // 3 s, a byte each 100 ms, while b's write waits
		if _, err := s.Write([]byte{0}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, _, err := s.ReadFrame(MaxFrame); err != nil {
		t.Fatalf("reading the frame at last: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("a write blocked while its peer kept sending: %v", err)
	}
}
