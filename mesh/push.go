package mesh

import (
	"context"
	"fmt"
	"time"

	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// Pushes: the push loop queues every durable local change for every live
// peer, and each peer's sender (pushTo) delivers its queue in order.

// pushLoop sends every local change to every live peer as soon as it is
// durable. Changes received from peers are not pushed on: each node
// pushes its own, and anti-entropy covers the rest.
func (m *Mesh) pushLoop() {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.pushWake:
		}
		m.queuePending()
	}
}

// queuePending queues for every live peer the local changes made durable
// since the last call.
func (m *Mesh) queuePending() {
	after := m.pushed.Load()
	defer func() { m.pushed.Store(after) }()
	for {
		after = m.skipRemote(after)
		batch, last, err := m.nextPush(after)
		if err != nil {
			m.log.Warn("reading changes to push", "err", err)
			return
		}
		if len(batch) > 0 {
			m.queuePush(batch, m.aliveDevices())
		}
		if last == after {
			return
		}
		after = last
	}
}

// nextPush reads the change log after seq after, up to a batch, and
// returns the local changes that may be sent and the last seq it read.
func (m *Mesh) nextPush(after uint64) (batch []transport.Entry, last uint64, err error) {
	last = after
	_, err = m.store.Changes(after, 256, func(rec storage.Record) error {
		last = rec.Seq
		// A commit received from a peer is not pushed on. It is not always
		// where skipRemote leaves off: a document changed again keeps only
		// its newest entry, which leaves gaps in the log.
		if m.isRemote(rec.Seq) || rec.Erase || !m.sendable(rec) {
			return nil
		}
		doc, err := m.store.GetDoc(rec.Kind, rec.ID)
		if err != nil {
			return err
		}
		batch = append(batch, transport.Entry{Kind: byte(rec.Kind), ID: rec.ID, Heads: rec.Heads, Doc: doc})
		return nil
	})
	return batch, last, err
}

// isRemote reports whether the commit seq holds changes received from a
// peer (which are not pushed on).
func (m *Mesh) isRemote(seq uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.remote[seq]
}

// skipRemote returns the seq after which the pusher continues: past every
// commit received from peers that directly follows after, without reading
// them, and forgets those commits.
func (m *Mesh) skipRemote(after uint64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.remote[after+1] {
		after++
	}
	for seq := range m.remote {
		if seq <= after {
			delete(m.remote, seq)
		}
	}
	return after
}

// queuePush hands a batch to the senders of the devices; a peer whose
// queue is full misses it and is pulled from instead (anti-entropy both
// ways).
func (m *Mesh) queuePush(batch []transport.Entry, devices []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, device := range devices {
		select {
		case m.peer(device).push <- batch:
		default:
			m.kickPull(device)
		}
	}
}

// Backoff of a push that failed: the first retry after pushRetryFirst,
// each wait twice the last, up to pushRetryMax.
const (
	pushRetryFirst = 250 * time.Millisecond
	pushRetryMax   = 8 * time.Second
)

// pushTo sends queued batches to one peer, in order.
func (m *Mesh) pushTo(device string, p *peerState) {
	for {
		var batch []transport.Entry
		select {
		case <-m.ctx.Done():
			return
		case batch = <-p.push:
		}
		m.deliver(device, p, batch)
	}
}

// deliver sends a batch to one peer until the peer has applied it: a
// push that fails (a network blip, a peer busy restarting) is retried
// with backoff, read from the mesh's clock, for as long as the peer is
// alive or suspect. A peer that died or left gets the batch from
// anti-entropy when it returns.
func (m *Mesh) deliver(device string, p *peerState, batch []transport.Entry) {
	wait := pushRetryFirst
	for attempt := 1; ; attempt++ {
		m.mu.Lock()
		addr, state := p.addr, p.state
		m.mu.Unlock()
		if m.revokedBy.Load() != nil || attempt > 1 && state != "alive" && state != "suspect" {
			m.log.Debug("push given up; anti-entropy will carry it", "peer", device, "state", state, "attempts", attempt-1)
			return
		}
		err := m.send(m.ctx, device, addr, batch)
		if err == nil {
			m.holding(device, batch)
			return
		}
		m.log.Debug("push failed; retrying", "peer", device, "err", err, "attempt", attempt, "wait", wait)
		select {
		case <-m.ctx.Done():
			return
		case <-m.clock.After(wait):
		}
		wait = min(2*wait, pushRetryMax)
	}
}

// pushTimeout bounds one push, its answer included.
const pushTimeout = 10 * time.Second

// push sends a batch to the device at addr and waits until it applied it.
func (m *Mesh) push(ctx context.Context, device, addr string, batch []transport.Entry) error {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	s, err := m.net.Open(ctx, device, addr, transport.StreamPush)
	if err != nil {
		return err
	}
	if s.PeerDevice() != device {
		s.Close()
		return fmt.Errorf("%s answered at %s, expected %s", s.PeerDevice(), addr, device)
	}
	if err := transport.Push(ctx, s, batch); err != nil {
		return err
	}
	size := 0
	for _, e := range batch {
		size += transport.EntrySize(e)
	}
	m.pushes.Add(1)
	m.pushedBytes.Add(int64(size))
	return nil
}

// Pushed returns how many pushes peers applied since the mesh started,
// relayed ones included, the encoded bytes of their documents, and how
// many pushes it queued to relay others' pushes.
func (m *Mesh) Pushed() (pushes, bytes, relays int64) {
	return m.pushes.Load(), m.pushedBytes.Load(), m.relays.Load()
}

// Notify tells the pusher that changes are durable.
func (m *Mesh) Notify() {
	select {
	case m.pushWake <- struct{}{}:
	default:
	}
}
