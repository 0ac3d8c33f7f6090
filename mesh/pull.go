package mesh

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/memmesh/memmesh/transport"
)

// Anti-entropy: the pull loop pulls from every live peer each
// SyncInterval, and at once from a peer that was kicked; one pull runs at
// a time (pullSlot).

// pullLoop runs anti-entropy: with every live peer each SyncInterval, and
// at once with a peer that was kicked (join, reconnection, a failed push,
// a pull from it that showed differences).
func (m *Mesh) pullLoop() {
	tick := m.clock.NewTicker(m.cfg.SyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case device := <-m.kick:
			m.startPull(device)
		case <-tick.Chan():
			for _, device := range m.aliveDevices() {
				m.startPull(device)
			}
		}
	}
}

// kickPull asks for a pull from device soon.
func (m *Mesh) kickPull(device string) {
	select {
	case m.kick <- device:
	default:
	}
}

// startPull starts a pull from device unless one is running.
func (m *Mesh) startPull(device string) {
	m.mu.Lock()
	p := m.peer(device)
	addr := p.addr
	if p.pulling || addr == "" || m.revokedBy.Load() != nil {
		m.mu.Unlock()
		return
	}
	p.pulling = true
	m.mu.Unlock()
	m.goLoop(func() {
		m.pull(m.ctx, device, addr)
		m.mu.Lock()
		p.pulling = false
		m.mu.Unlock()
	})
}

// pullSlotWait is how long a pull waits for the one running to end
// before it runs beside it: a peer that answers a pull slowly (a trickle
// that keeps its stream alive, from a hostile member or a bad link) holds
// the slot up to the pull's time limit, and must not hold back the pulls
// from the others that long.
const pullSlotWait = 30 * time.Second

// pull runs one anti-entropy pull from the device at addr, once no other
// pull runs or the one running has run for pullSlotWait, and records and
// logs how it went. It ends early when ctx or the mesh ends.
func (m *Mesh) pull(ctx context.Context, device, addr string) (transport.SyncStats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.ctx, cancel)()
	held, err := m.takePullSlot(ctx, device)
	if err != nil {
		return transport.SyncStats{}, err
	}
	if held {
		defer func() { <-m.pullSlot }()
	}
	m.mu.Lock()
	p := m.peer(device)
	p.pulls++
	p.pulledAt = m.clock.Now()
	m.mu.Unlock()
	stats, err := m.pullFrom(ctx, device, addr)
	m.pulledBytes.Add(stats.Bytes)
	m.mu.Lock()
	if err != nil {
		p.lastErr = err.Error()
	} else {
		p.lastSync, p.lastErr = m.clock.Now(), ""
		if stats.Received > 0 {
			p.lastStats = stats
		}
	}
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("pull failed", "peer", device, "addr", addr, "err", err)
	} else if stats.Received+stats.Rejected > 0 {
		m.log.Info("pulled", "peer", device, "offered", stats.Offered, "received", stats.Received, "rejected", stats.Rejected, "bytes", stats.Bytes, "took", stats.Duration)
	}
	return stats, err
}

// takePullSlot waits for the pull slot, and reports whether it took it:
// after pullSlotWait the pull from device goes ahead without it.
func (m *Mesh) takePullSlot(ctx context.Context, device string) (bool, error) {
	select {
	case m.pullSlot <- struct{}{}:
		return true, nil
	default:
	}
	select {
	case m.pullSlot <- struct{}{}:
		return true, nil
	case <-m.clock.After(pullSlotWait):
		m.log.Info("a pull is slow; pulling beside it", "peer", device)
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// pullFrom runs one anti-entropy pull from the device at addr and saves
// where it ended. When the peer's changes since the saved position leave
// the digests different, a pull by buckets follows: whatever positions
// were saved (a namespace that became shared, documents lost here), every
// document of the buckets that differ is compared, so any divergence is
// repaired. The peer's own pull back repairs the other direction.
func (m *Mesh) pullFrom(ctx context.Context, device, addr string) (transport.SyncStats, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var since transport.Position
	if data, err := m.store.GetLocal(localPosPrefix + device); err == nil {
		since, _ = transport.DecodePosition(data)
	}
	// Index what the pull brings in large batches, once it ends (a search
	// meanwhile still brings the index up to date first).
	release := m.host.HoldIndex()
	defer release()
	stats, err := m.pullOnce(ctx, device, addr, since)
	if err == nil && stats.Reconcile() {
		var more transport.SyncStats
		more, err = m.pullOnce(ctx, device, addr, transport.Position{})
		stats.Add(more)
	}
	if err != nil {
		return stats, err
	}
	return stats, m.store.PutLocalDurable(localPosPrefix+device, transport.AppendPosition(nil, stats.End))
}

// pullOnce runs one pull from the device at addr since a position of its
// change log (zero: by digest buckets).
func (m *Mesh) pullOnce(ctx context.Context, device, addr string, since transport.Position) (transport.SyncStats, error) {
	s, err := m.net.Open(ctx, device, addr, transport.StreamSync)
	if err != nil {
		return transport.SyncStats{}, err
	}
	if s.PeerDevice() != device {
		s.Close()
		return transport.SyncStats{}, fmt.Errorf("%s answered at %s, expected %s", s.PeerDevice(), addr, device)
	}
	return transport.Pull(ctx, s, replica{m}, since)
}

// Pull runs one anti-entropy pull from every live peer and waits for it,
// or until ctx ends; it returns the first error.
func (m *Mesh) Pull(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for _, device := range m.aliveDevices() {
		m.mu.Lock()
		addr := m.peer(device).addr
		m.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.pull(ctx, device, addr); err != nil {
				select {
				case errs <- fmt.Errorf("pull from %s: %w", device, err):
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// PulledBytes returns the frame bytes of every pull from every peer
// since the mesh started.
func (m *Mesh) PulledBytes() int64 { return m.pulledBytes.Load() }

// LastPull returns the figures of the last pull from the peer device
// that brought documents; the zero value when none did.
func (m *Mesh) LastPull(device string) transport.SyncStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.peers[device]; p != nil {
		return p.lastStats
	}
	return transport.SyncStats{}
}
