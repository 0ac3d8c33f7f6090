package node

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// startMesh makes the mesh over this node and starts it.
func (n *Node) startMesh(ctx context.Context, cfg mesh.Config) error {
	id := mesh.Identity{Key: n.id.Key, Cert: n.id.Cert, Device: n.id.DeviceID, Actor: n.actor}
	if cfg.Clock == nil {
		cfg.Clock = n.clock
	}
	if cfg.Rand == nil && n.cfg.Rand != nil {
		cfg.Rand = lockedReader{&n.randMu, n.cfg.Rand}
	}
	m, err := mesh.New(cfg, id, meshHost{n}, n.store, n.registry, n.log)
	if err != nil {
		return err
	}
	n.mesh = m
	if err := m.Start(ctx); err != nil {
		n.mesh = nil
		return err
	}
	return nil
}

// meshHost is the node as the mesh sees it: remote documents take the
// same path as local writes after the merge (the same records, one
// durable batch, then the search index).
type meshHost struct{ n *Node }

var _ mesh.Host = meshHost{}

func (h meshHost) Lock(ids ...string) func() { return h.n.lockAll(ids) }

func (h meshHost) MemoryRecord(m *model.Memory, doc []byte) (storage.Record, error) {
	rec, err := memoryRecord(m, nil)
	rec.Doc = doc
	return rec, err
}

func (h meshHost) EdgeRecord(e *model.Edge, doc []byte) (storage.Record, error) {
	return edgeRecord(e, doc)
}

func (h meshHost) TombstoneRecords(ts crdt.Tombstone) ([]storage.Record, error) {
	recs, _, err := h.n.tombstoneRecords(ts)
	return recs, err
}

func (h meshHost) Purged(id string) bool          { return h.n.purged(id) }
func (h meshHost) PurgedEndpoint(end string) bool { return h.n.purgedEndpoint(end) }
func (h meshHost) HoldIndex() func()              { return h.n.indexer.hold() }

func (h meshHost) Committed(seq uint64, memories []*model.Memory) {
	h.n.indexer.handed.handOver(seq, memories)
	h.n.changed()
	if h.n.store.ErasePending() {
		signal(h.n.expungeWake)
	}
}

// Pull runs one anti-entropy pull from every live peer and waits for it;
// it returns the first error.
func (n *Node) Pull(ctx context.Context) error {
	if n.mesh == nil {
		return api.ErrNoMesh
	}
	return n.mesh.Pull(ctx)
}

// LastPull returns the figures of the last pull from the peer device
// that brought documents; the zero value when none did or the node runs
// without the mesh.
func (n *Node) LastPull(device string) transport.SyncStats {
	if n.mesh == nil {
		return transport.SyncStats{}
	}
	return n.mesh.LastPull(device)
}

// PulledBytes returns the frame bytes of every anti-entropy pull from
// every peer since the node started (0 without the mesh).
func (n *Node) PulledBytes() int64 {
	if n.mesh == nil {
		return 0
	}
	return n.mesh.PulledBytes()
}

// Digest returns the node's anti-entropy digest: two nodes holding the
// same documents with the same heads have equal digests. With the mesh
// on, documents that never leave this machine (local-only namespaces)
// are left out of it.
func (n *Node) Digest() ([256][32]byte, error) {
	if n.mesh != nil {
		return n.mesh.Digest()
	}
	return n.store.Digest()
}

// Peers lists every other device in the registry with its state.
func (n *Node) Peers(ctx context.Context) ([]api.Peer, error) {
	if n.mesh == nil {
		return nil, api.ErrNoMesh
	}
	return n.mesh.Peers(ctx)
}

// MeshStatus reports this node's device, addresses and the health of its
// peers.
func (n *Node) MeshStatus(ctx context.Context) (api.MeshStatus, error) {
	st := api.MeshStatus{Device: n.id.DeviceID}
	devices, err := n.Devices(ctx)
	if err != nil {
		return st, err
	}
	live := 0
	for _, d := range devices {
		if !d.Revoked() {
			live++
		}
	}
	if n.mesh != nil {
		st, err = n.mesh.Status(ctx)
	}
	st.Devices = live
	return st, err
}

// Invite creates a one-time token another machine passes to Join. It is
// valid for ttl (default one hour, at most a week) and only on this node.
func (n *Node) Invite(ctx context.Context, ttl time.Duration) (api.Invitation, error) {
	if n.mesh == nil {
		return api.Invitation{}, api.ErrNoMesh
	}
	inv, err := n.mesh.Invite(ctx, ttl)
	return inv, storeError(err)
}

// Join uses an invite token: it connects to the inviting member, checks
// that it is the device the token names, proves the token's secret, and
// receives the device registry. Then it joins the membership and starts
// syncing. No private key leaves this machine.
func (n *Node) Join(ctx context.Context, token string) (api.JoinResult, error) {
	if n.mesh == nil {
		return api.JoinResult{}, api.ErrNoMesh
	}
	return n.mesh.Join(ctx, token)
}

// JoinAddr contacts a member at addr, for a device that is already in the
// registry (a re-join after an address change, or a new peer address).
func (n *Node) JoinAddr(ctx context.Context, addr string) (int, error) {
	if n.mesh == nil {
		return 0, api.ErrNoMesh
	}
	return n.mesh.JoinAddr(ctx, addr)
}

// lockedReader serialises the reads of r, a source the node shares.
type lockedReader struct {
	mu *sync.Mutex
	r  io.Reader
}

func (l lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}
