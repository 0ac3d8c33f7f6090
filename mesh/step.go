package mesh

import (
	"context"

	"github.com/hashicorp/memberlist"

	"github.com/memmesh/memmesh/transport"
)

// Network opens streams to members: the QUIC endpoint in production, an
// in-memory network (transport.Pipe) in a simulation.
type Network interface {
	// Open opens a stream of type typ to device, last seen at addr.
	Open(ctx context.Context, device, addr string, typ transport.StreamType) (transport.FrameStream, error)
}

// Members is the membership the mesh pulls from and pushes to.
type Members interface {
	// Alive lists the other devices that are alive.
	Alive() []string
}

// endpointNetwork is the QUIC endpoint as a Network.
type endpointNetwork struct{ ep *transport.Endpoint }

func (n endpointNetwork) Open(ctx context.Context, device, addr string, typ transport.StreamType) (transport.FrameStream, error) {
	var s *transport.Stream
	var err error
	if typ == transport.StreamAppeal {
		s, err = n.ep.DialAppeal(ctx, addr, device) // a member that refuses this device serves it
	} else {
		s, err = n.ep.Open(ctx, addr, typ)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// memberlistMembers is memberlist's view of the mesh as Members.
type memberlistMembers struct{ m *Mesh }

func (l memberlistMembers) Alive() []string {
	var out []string
	for _, node := range l.m.ml.Load().Members() {
		if node.Name != l.m.self && node.State == memberlist.StateAlive {
			out = append(out, node.Name)
		}
	}
	return out
}

// The steps below are the bodies of the mesh's loops, for a mesh whose
// Config.Network drives it (a simulation): the caller runs them one at a
// time, in an order of its choosing, instead of the loops.

// Serve serves one stream a member opened: a pull (StreamSync), a push
// (StreamPush) or an appeal (StreamAppeal). It is what the accept loop
// runs for each stream.
func (m *Mesh) Serve(typ transport.StreamType, s transport.FrameStream) {
	m.serveStream(typ, s, m.log.With("peer", s.PeerDevice()))
}

// PullFrom runs one anti-entropy pull from device, as the pull loop does.
func (m *Mesh) PullFrom(ctx context.Context, device string) (transport.SyncStats, error) {
	m.mu.Lock()
	addr := m.peer(device).addr
	m.mu.Unlock()
	return m.pull(ctx, device, addr)
}

// Kicked returns, in order, the devices that the mesh asked to pull from
// soon (a pull served that showed differences, a failed push) and that
// the pull loop would pull from next.
func (m *Mesh) Kicked() []string {
	var out []string
	for {
		select {
		case device := <-m.kick:
			out = append(out, device)
		default:
			return out
		}
	}
}

// QueuePushes reads the local changes made durable since the last call
// and queues them for every live peer, as the push loop does when woken.
func (m *Mesh) QueuePushes() { m.queuePending() }

// NextPush takes the oldest batch queued for device, if any.
func (m *Mesh) NextPush(device string) ([]transport.Entry, bool) {
	m.mu.Lock()
	p := m.peer(device)
	m.mu.Unlock()
	select {
	case batch := <-p.push:
		return batch, true
	default:
		return nil, false
	}
}

// PushTo sends a batch of pushes to device once, as the peer's sender's
// first attempt does (a stepped mesh does not retry: the caller does, or
// anti-entropy carries the batch).
func (m *Mesh) PushTo(device string, batch []transport.Entry) error {
	m.mu.Lock()
	addr := m.peer(device).addr
	m.mu.Unlock()
	err := m.send(m.ctx, device, addr, batch)
	if err == nil {
		m.holding(device, batch)
	}
	return err
}
