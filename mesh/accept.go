package mesh

import (
	"log/slog"

	"github.com/memmesh/memmesh/transport"
)

// The accept loop serves every stream a peer opens (a join, a pull, a
// push, an appeal) on a goroutine of its own.

// acceptLoop serves the streams peers open.
func (m *Mesh) acceptLoop() {
	for {
		s, err := m.ep.Accept(m.ctx)
		if err != nil {
			return
		}
		m.goLoop(func() { m.serve(s) })
	}
}

func (m *Mesh) serve(s *transport.Stream) {
	log := m.log.With("peer", s.Peer, "addr", s.Addr.String())
	switch s.Type {
	case transport.StreamJoin:
		if err := m.serveJoin(s); err != nil {
			log.Warn("join refused", "err", err)
		}
	case transport.StreamAppeal:
		m.serveStream(s.Type, s, log)
	default:
		// A member that restarted elsewhere is reachable where it dials
		// from, before memberlist learns its new address.
		m.mu.Lock()
		m.peer(s.Peer).addr = s.Addr.String()
		m.mu.Unlock()
		m.serveStream(s.Type, s, log)
	}
}

// serveStream serves a member's sync or push stream s of type typ.
func (m *Mesh) serveStream(typ transport.StreamType, s transport.FrameStream, log *slog.Logger) {
	peer := s.PeerDevice()
	switch typ {
	case transport.StreamSync:
		r := &servedReplica{replica: replica{m}}
		req, err := transport.ServePull(m.ctx, s, r)
		if err != nil {
			log.Warn("serving a pull failed", "err", err)
			return
		}
		m.served(peer, req, r)
		if m.pullBack(peer, req) {
			m.kickPull(peer)
		}
	case transport.StreamPush:
		r := &pushedReplica{replica: replica{m}}
		n, err := transport.ServePush(s, r)
		if err != nil {
			log.Warn("receiving a push failed", "err", err, "applied", n)
			m.kickPull(peer)
		}
		m.relay(peer, r.docs)
	case transport.StreamAppeal:
		if err := m.serveAppeal(s); err != nil {
			log.Warn("appeal of a device held for revoked", "err", err)
		}
	default:
		s.Close()
	}
}

// pullBack reports whether serving a pull to peer should start a pull
// from it, since the puller may hold what we lack: only in steady state
// (after a first contact the puller is catching up, and membership's join
// event already starts a pull each way), when its digest differs from
// ours, and when no pull from it started within the sync interval. Two
// nodes whose digests differ for good would otherwise pull from each
// other without end, each served pull kicking the next.
func (m *Mesh) pullBack(peer string, req transport.PullRequest) bool {
	if req.Since.Epoch != m.epoch || req.Since.Seq == 0 {
		return false
	}
	m.mu.Lock()
	recent := m.clock.Now().Sub(m.peer(peer).pulledAt) < m.cfg.SyncInterval
	m.mu.Unlock()
	if recent {
		return false
	}
	digest, err := m.Digest()
	return err == nil && digest != req.Digest
}
