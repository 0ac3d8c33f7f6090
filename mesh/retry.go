package mesh

import (
	"sync"

	"github.com/hashicorp/memberlist"
)

// The retry loop contacts again the known peers that are not alive.

// retryLoop contacts known peers that are not alive: memberlist does not
// reconnect by itself, and a returning laptop or a healed partition must
// re-merge with no manual step. While this device is revoked it appeals
// to them instead (see appeal.go).
func (m *Mesh) retryLoop() {
	m.joinAddrs(m.cfg.Join)
	tick := m.clock.NewTicker(m.cfg.RetryInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.Chan():
		}
		if m.revokedBy.Load() != nil {
			m.appealAll()
			continue
		}
		m.tellReach()
		alive := make(map[string]bool)
		for _, node := range m.ml.Load().Members() {
			alive[node.Name] = node.State == memberlist.StateAlive
		}
		var addrs []string
		m.mu.Lock()
		for device, addr := range m.known {
			if !alive[device] && !m.registry.Revoked(device) {
				addrs = append(addrs, addr)
			}
		}
		m.mu.Unlock()
		m.joinAddrs(addrs)
	}
}

// joinAddrs asks memberlist to contact each address, concurrently.
func (m *Mesh) joinAddrs(addrs []string) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	joined := 0
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if k, err := m.ml.Load().Join([]string{addr}); err != nil {
				m.log.Debug("peer not reachable", "addr", addr, "err", err)
			} else {
				mu.Lock()
				joined += k
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return joined
}
