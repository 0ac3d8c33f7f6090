package mesh

import (
	"context"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/api"
)

// What the mesh reports of its peers and of itself.

// Peers lists every other device in the registry with its state, how it
// is reached (see reach) and how many documents it lacks (see behind).
func (m *Mesh) Peers(ctx context.Context) ([]api.Peer, error) {
	now := m.clock.Now()
	m.mu.Lock()
	var out []api.Peer
	for device, rec := range m.devices {
		if device == m.self {
			continue
		}
		p := api.Peer{Device: device, Name: rec.Name, State: "unknown"}
		if st := m.peers[device]; st != nil {
			p.Addr, p.LastSync, p.Version, p.LastErr, p.Pulls = st.addr, st.lastSync, st.version, st.lastErr, st.pulls
			if st.state != "" {
				p.State, p.Via = m.reach(device, st, now)
			}
			if st.name != "" {
				p.Name = st.name
			}
		}
		if p.Addr == "" {
			p.Addr = m.known[device]
		}
		if m.registry.Revoked(device) {
			p.State = "revoked"
		}
		out = append(out, p)
	}
	m.mu.Unlock()
	// The change log's end before the digest: the digest holds every
	// change up to it.
	seq := m.store.DurableSeq()
	ours, err := m.Digest()
	if err != nil {
		return nil, err
	}
	sum := digestSum(ours)
	for i := range out {
		if out[i].State == "alive" || out[i].State == "suspect" {
			out[i].RTT = m.ep.RTT(out[i].Addr)
		}
		behind, err := m.behind(out[i].Device, seq, sum, now)
		if err != nil {
			return nil, err
		}
		out[i].Behind = behind
	}
	slices.SortFunc(out, func(a, b api.Peer) int { return strings.Compare(a.Name+a.Device, b.Name+b.Device) })
	return out, nil
}

// Status reports this node's part in the mesh: its name, addresses and
// the health of its peers. The registry's size is the caller's to add.
func (m *Mesh) Status(ctx context.Context) (api.MeshStatus, error) {
	st := api.MeshStatus{Device: m.self, Enabled: true, Name: m.cfg.Name}
	if by := m.revokedBy.Load(); by != nil {
		st.Errors = append(st.Errors, "this device was revoked from the mesh (as "+*by+" said): it no longer syncs")
	}
	st.Listen, st.Advertise = m.Addr().String(), m.advertise.String()
	peers, err := m.Peers(ctx)
	if err != nil {
		return st, err
	}
	for _, p := range peers {
		if p.State == "revoked" {
			continue
		}
		st.Peers++
		if p.State == "alive" {
			st.Alive++
		}
		if p.LastSync.After(st.LastSync) {
			st.LastSync = p.LastSync
		}
		st.Behind = max(st.Behind, p.Behind)
		if p.LastErr != "" {
			st.Errors = append(st.Errors, p.Device+": "+p.LastErr)
		}
	}
	return st, nil
}
