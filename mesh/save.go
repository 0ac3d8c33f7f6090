package mesh

import "encoding/json"

// The save loop writes the known peers' addresses durably when they
// change.

// remember records a peer's address for reconnection. It only tells
// saveLoop to write it durably when it changed: memberlist calls it from
// callbacks that hold its node lock, where an fsync would stall every
// probe and gossip.
func (m *Mesh) remember(device, addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if device == m.self || m.known[device] == addr {
		return
	}
	m.known[device] = addr
	select {
	case m.knownChanged <- struct{}{}:
	default:
	}
}

// saveLoop writes the known peers durably each time they change, and a
// last time as the mesh stops if they changed since.
func (m *Mesh) saveLoop() {
	for {
		select {
		case <-m.ctx.Done():
			select {
			case <-m.knownChanged:
				m.saveKnown()
			default:
			}
			return
		case <-m.knownChanged:
			m.saveKnown()
		}
	}
}

// saveKnown writes the known peers durably.
func (m *Mesh) saveKnown() {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	data, err := json.Marshal(m.known)
	m.mu.Unlock()
	if err == nil {
		err = m.store.PutLocalDurable(localKnown, data)
	}
	if err != nil {
		m.log.Warn("cannot save known peers", "err", err)
	}
}
