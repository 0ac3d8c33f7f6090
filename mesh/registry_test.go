package mesh

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// recordHost is a Host for the registry alone: it locks, and counts the
// commits it is told of; it takes no document from a peer.
type recordHost struct {
	mu        sync.Mutex
	committed int
}

var errNoPeers = errors.New("this host takes no documents from peers")

func (h *recordHost) Lock(...string) func() { h.mu.Lock(); return h.mu.Unlock }
func (h *recordHost) MemoryRecord(*model.Memory, []byte) (storage.Record, error) {
	return storage.Record{}, errNoPeers
}
func (h *recordHost) EdgeRecord(*model.Edge, []byte) (storage.Record, error) {
	return storage.Record{}, errNoPeers
}
func (h *recordHost) TombstoneRecords(crdt.Tombstone) ([]storage.Record, error) {
	return nil, errNoPeers
}
func (h *recordHost) Purged(string) bool                { return false }
func (h *recordHost) PurgedEndpoint(string) bool        { return false }
func (h *recordHost) HoldIndex() func()                 { return func() {} }
func (h *recordHost) Committed(uint64, []*model.Memory) { h.committed++ }

// TestRegistryWithoutTheMesh adds, lists and revokes devices and sets a
// namespace's policy with no mesh running, at the times of the
// registry's clock: a revoked device cannot be added again.
func TestRegistryWithoutTheMesh(t *testing.T) {
	st := testStore(t)
	host := &recordHost{}
	clock := newFakeClock()
	self, other := strings.Repeat("A", 52), strings.Repeat("B", 52)
	g, err := NewRegistry(self, crdt.ActorID(self), host, st, clock, nil)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := g.AddDevice(self, "laptop", self); err != nil {
		t.Fatal(err)
	}
	added, err := g.AddDevice(other, "desktop", self)
	if err != nil {
		t.Fatal(err)
	}
	if !added.AddedAt.Equal(clock.Now()) || added.AddedBy != self {
		t.Errorf("added %+v, want by %s at %v", added, self, clock.Now())
	}
	if again, err := g.AddDevice(other, "renamed", self); err != nil || again.Name != "desktop" {
		t.Errorf("adding a device twice: %+v, %v; want the first record", again, err)
	}
	devices, err := g.Devices()
	if err != nil || len(devices) != 2 || !devices[0].Self || devices[1].Self {
		t.Fatalf("devices %+v, %v: want this one, then the other", devices, err)
	}

	clock.Advance(time.Minute)
	revoked, err := g.Revoke("desktop")
	if err != nil || !revoked.Revoked() || !revoked.RevokedAt.Equal(clock.Now()) {
		t.Fatalf("revoke: %+v, %v", revoked, err)
	}
	if _, err := g.AddDevice(other, "desktop", self); !errors.Is(err, transport.ErrUnauthorized) {
		t.Errorf("adding a revoked device: %v, want ErrUnauthorized", err)
	}
	if _, err := g.Revoke("laptop"); err == nil {
		t.Error("this device revoked itself")
	}

	local := model.SyncLocal
	ns, err := g.SetNamespace("private", &local, nil)
	if err != nil || ns.Sync != model.SyncLocal || ns.Key != "private" {
		t.Fatalf("set namespace: %+v, %v", ns, err)
	}
	if host.committed != 4 { // two devices, a revocation, a namespace
		t.Errorf("the host was told of %d commits, want 4", host.committed)
	}
}
