package mesh

import (
	"context"
	"crypto/ed25519"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/transport"
)

// onceHost is a recordHost whose unlock may be called more than once, as
// Host.Lock allows: the mesh releases a pull's locks once applied, and
// again on its way out.
type onceHost struct{ *recordHost }

func (h onceHost) Lock(ids ...string) func() { return sync.OnceFunc(h.recordHost.Lock(ids...)) }

// newDevice makes the mesh of a new device on a loopback port, its
// registry holding itself and the devices others (added by it), over a
// store and a host of its own. It is not started.
func newDevice(t *testing.T, name string, key ed25519.PrivateKey, others ...string) *Mesh {
	t.Helper()
	cert, err := transport.Certificate(key)
	if err != nil {
		t.Fatal(err)
	}
	self := transport.DeviceID(key.Public().(ed25519.PublicKey))
	st, host := testStore(t), onceHost{&recordHost{}}
	reg, err := NewRegistry(self, crdt.ActorID(self), host, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]string{self}, others...) {
		if _, err := reg.AddDevice(d, "device-"+d[:6], self); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(Config{Listen: "127.0.0.1:0", Name: name, SyncInterval: time.Hour}, Identity{Key: key, Cert: cert, Device: self, Actor: crdt.ActorID(self)},
		host, st, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func start(t *testing.T, m *Mesh) {
	t.Helper()
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop() })
}

// TestPeerJoinsWhileTheMeshStarts: a peer joins the moment memberlist
// listens, before the mesh's loops start. The membership event starts
// the peer's sender, which runs at once (it sends what is queued for the
// peer) and must find the mesh's context set: it used to be set after
// memberlist started, and the sender's select on a nil context panicked.
func TestPeerJoinsWhileTheMeshStarts(t *testing.T) {
	keyA, keyB := newKey(t), newKey(t)
	idA, idB := transport.DeviceID(keyA.Public().(ed25519.PublicKey)), transport.DeviceID(keyB.Public().(ed25519.PublicKey))
	a, b := newDevice(t, "a", keyA, idB), newDevice(t, "b", keyB, idA)
	start(t, b)

	sent := make(chan struct{})
	a.send = func(ctx context.Context, device, addr string, batch []transport.Entry) error {
		close(sent)
		return nil
	}
	a.listening = func() {
		if _, err := b.ml.Load().Join([]string{a.ep.Addr().String()}); err != nil {
			t.Errorf("b joins a: %v", err)
			return
		}
		deadline := time.Now().Add(time.Minute)
		for {
			a.mu.Lock()
			p := a.peers[idB]
			a.mu.Unlock()
			if p != nil {
				break // a's membership event noted b, and started its sender
			}
			if time.Now().After(deadline) {
				t.Error("a never heard of b joining")
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		a.queuePush([]transport.Entry{{Kind: 'm', ID: "x"}}, []string{idB})
		select {
		case <-sent:
		case <-time.After(time.Minute):
			t.Error("a's sender to b never ran")
		}
	}
	start(t, a)
}
