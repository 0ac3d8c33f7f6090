package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// A member refuses a device it holds for revoked, and tells it so. The
// two may not hold the same revocations: the member may have taken a
// stolen device's revocation of this one before this one's revocation of
// the stolen device reached it, and then refuses the very device that
// could tell it. So a device told it is revoked appeals first: over a
// join connection (which a member serves to any device with a valid
// certificate) it gives the member every revocation it holds, and takes
// the member's, with the device record the member holds of it. Both
// judge again with what they then hold (see revocation.go). If this
// device is revoked still, it stops syncing; if not, the member admits it
// at its next connection.

// appealTimeout bounds one appeal.
const appealTimeout = 30 * time.Second

// appealEvery is how often this device appeals to one member (20 s by
// default), and appealServeEvery how often a member serves one device's
// appeals (10 s).
func (m *Mesh) appealEvery() time.Duration      { return 10 * m.cfg.RetryInterval }
func (m *Mesh) appealServeEvery() time.Duration { return 5 * m.cfg.RetryInterval }

// revokedSelf is told by the endpoint that the member by, at addr,
// closed the connection because it holds this device for revoked. The
// device appeals, then stops (no more membership, joins, pushes or pulls,
// each of which the members would refuse and log) if it is revoked by
// what it then holds.
func (m *Mesh) revokedSelf(by, addr string) {
	if m.revokedBy.Load() != nil || !m.due(m.appealed, by, m.appealEvery()) {
		return
	}
	m.goLoop(func() {
		err := m.appeal(by, addr)
		if !m.registry.Revoked(m.self) {
			m.log.Warn("a member holds this device for revoked; gave it this device's revocations", "member", by, "err", err)
			return
		}
		m.stopRevoked(by)
	})
}

// stopRevoked stops the device's part in the mesh: it was revoked, as
// the member by told it. It goes on appealing to the members it knows
// (appealAll), and is reinstated should one of them settle a dispute for
// it.
func (m *Mesh) stopRevoked(by string) {
	m.leaveMu.Lock()
	defer m.leaveMu.Unlock()
	if !m.revokedBy.CompareAndSwap(nil, &by) {
		return
	}
	m.log.Error("this device was revoked from the mesh: it no longer syncs", "told_by", by)
	if ml := m.ml.Load(); ml != nil {
		if err := ml.Shutdown(); err != nil {
			m.log.Debug("stopping membership", "err", err)
		}
	}
}

// appealAll appeals to every member this revoked device knows, each at
// most once every appealEvery, and takes its part in the mesh again if
// what it then holds no longer revokes it.
func (m *Mesh) appealAll() {
	m.mu.Lock()
	known := maps.Clone(m.known)
	m.mu.Unlock()
	for device, addr := range known {
		if m.registry.Revoked(m.self) && m.due(m.appealed, device, m.appealEvery()) {
			if err := m.appeal(device, addr); err != nil {
				m.log.Debug("appeal", "member", device, "err", err)
			}
		}
	}
	if !m.registry.Revoked(m.self) {
		m.reinstate()
	}
}

// reinstate takes this device's part in the mesh again: a member settled
// the dispute that revoked it.
func (m *Mesh) reinstate() {
	m.leaveMu.Lock()
	defer m.leaveMu.Unlock()
	if m.revokedBy.Load() == nil {
		return
	}
	ml, err := memberlist.Create(m.memberlistConfig())
	if err != nil {
		m.log.Error("rejoining the mesh", "err", err)
		return
	}
	m.ml.Store(ml)
	m.revokedBy.Store(nil)
	m.log.Warn("this device is a member again: a member settled the revocations that revoked it")
}

// due reports whether an appeal with device may go ahead, at most one
// every each, and notes it.
func (m *Mesh) due(last map[string]time.Time, device string, each time.Duration) bool {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := last[device]; ok && now.Sub(t) < each {
		return false
	}
	last[device] = now
	return true
}

// appeal gives the member by, at addr, the revocations this device holds
// and takes the member's.
func (m *Mesh) appeal(by, addr string) error {
	ctx, cancel := context.WithTimeout(m.ctx, appealTimeout)
	defer cancel()
	s, err := m.net.Open(ctx, by, addr, transport.StreamAppeal)
	if err != nil {
		return err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, s.Abort)
	defer stop()
	mine, err := m.revocationDocs("")
	if err == nil {
		err = sendAppeal(s, mine)
	}
	if err != nil {
		return fmt.Errorf("appeal to %s: %w", by, err)
	}
	theirs, err := readAppeal(s)
	if err != nil {
		return fmt.Errorf("appeal to %s: %w", by, err)
	}
	return m.Apply(by, theirs)
}

// Appeal runs one appeal to device, as a device told it is revoked does;
// the step of a stepped mesh.
func (m *Mesh) Appeal(device string) error {
	m.mu.Lock()
	addr := m.peer(device).addr
	m.mu.Unlock()
	return m.appeal(device, addr)
}

// serveAppeal serves the appeal of a device of the registry that this
// node holds for revoked (or that holds itself for so): it takes the
// device's revocations, and gives it this node's, with its device record.
func (m *Mesh) serveAppeal(s transport.FrameStream) error {
	defer s.Close()
	ctx, cancel := context.WithTimeout(m.ctx, appealTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, s.Abort)
	defer stop()
	peer := s.PeerDevice()
	m.mu.Lock()
	_, member := m.devices[peer]
	m.mu.Unlock()
	switch {
	case !member:
		return fmt.Errorf("%w: %s is not in the device registry", transport.ErrUnauthorized, peer)
	case !m.due(m.appeals, peer, m.appealServeEvery()):
		return fmt.Errorf("%w: %s appealed less than %v ago", transport.ErrRefused, peer, m.appealServeEvery())
	}
	theirs, err := readAppeal(s)
	if err != nil {
		return err
	}
	// Only revocations: the rest of a device's work comes by the sync
	// protocol, to members that admit it.
	theirs = slices.DeleteFunc(theirs, func(e transport.Entry) bool { return !isRevocation(e.Doc) })
	applyErr := m.Apply(peer, theirs)
	mine, err := m.revocationDocs(peer)
	if err == nil {
		err = sendAppeal(s, mine)
	}
	if err == nil {
		err = s.CloseWrite()
	}
	// Until the device has read it all and closes: closing first would
	// cut off what was just sent.
	for err == nil {
		_, _, err = s.ReadFrame(transport.MaxJoinFrame)
	}
	return applyErr
}

// sendAppeal sends one side's documents of an appeal, then an empty
// frame of documents that ends that side (its stream stays open: the
// side that serves the appeal closes the connection once the other has
// read its answer).
func sendAppeal(s transport.FrameStream, docs []transport.Entry) error {
	if err := transport.SendDocs(s, docs); err != nil {
		return err
	}
	return s.WriteFrame(transport.FrameDocs, transport.AppendEntries(nil, nil))
}

// maxAppealBytes bounds the documents one side of an appeal sends.
const maxAppealBytes = 64 << 20

// readAppeal reads the mesh records the other side of an appeal sends,
// up to the empty frame that ends its side; anything else is left out.
func readAppeal(s transport.FrameStream) ([]transport.Entry, error) {
	var out []transport.Entry
	total := 0
	for {
		typ, p, err := s.ReadFrame(transport.MaxFrame)
		if err != nil {
			return nil, err
		}
		if total += len(p); typ != transport.FrameDocs || total > maxAppealBytes {
			return nil, fmt.Errorf("%w: appeal frame of type %d, %d bytes so far", transport.ErrMalformed, typ, total)
		}
		docs, err := transport.DecodeEntries(p)
		if err != nil {
			return nil, err
		}
		if len(docs) == 0 {
			return out, nil
		}
		for _, d := range docs {
			if storage.Kind(d.Kind) == storage.KindMesh && len(out) < maxRevocations+1 {
				out = append(out, d)
			}
		}
	}
}

// revocationDocs returns the revocation records this node holds, and the
// device record of device when it is not "".
func (m *Mesh) revocationDocs(device string) ([]transport.Entry, error) {
	var out []transport.Entry
	err := m.store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return fmt.Errorf("mesh record %s: %w", rec.ID, err)
		}
		if r.What != model.MeshRevocation && (r.What != model.MeshDevice || r.Key != device || device == "") {
			return nil
		}
		doc, err := m.store.GetDoc(storage.KindMesh, rec.ID)
		if err != nil {
			return err
		}
		out = append(out, transport.Entry{Kind: byte(storage.KindMesh), ID: rec.ID, Heads: rec.Heads, Doc: doc})
		return nil
	})
	return out, err
}
