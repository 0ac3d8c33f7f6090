package mesh

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/transport"
)

// memberlist's configuration and callbacks: what this node gossips about
// itself, which nodes may be alive, and each peer's state.

func (m *Mesh) memberlistConfig() *memberlist.Config {
	c := memberlist.DefaultLANConfig()
	c.Name = m.self
	c.Transport = m.ep.Memberlist(m.advertise)
	c.UDPBufferSize = transport.MaxPacket
	c.ProbeInterval = m.cfg.ProbeInterval
	c.ProbeTimeout = m.cfg.ProbeInterval / 2
	c.SuspicionMult = m.cfg.SuspicionMult
	c.GossipInterval = 100 * time.Millisecond
	c.PushPullInterval = 5 * time.Second
	c.TCPTimeout = 3 * time.Second
	// A device's address changes (DHCP, a restart on another port); its
	// identity is its key, proven at every connection, so a dead node's
	// name is free for its new address at once.
	c.DeadNodeReclaimTime = time.Second
	c.Delegate = &meshDelegate{m}
	c.Events = &meshEvents{m}
	c.Alive = &meshAlive{m}
	c.Ping = meshPing{m}
	c.Logger = slog.NewLogLogger(m.log.With("component", "memberlist").Handler(), slog.LevelDebug)
	return c
}

func (m *Mesh) aliveDevices() []string { return m.members.Alive() }

// nodeMeta is what each node gossips about itself.
type nodeMeta struct {
	Name    string `json:"n"`
	Version string `json:"v"`
	Leaving bool   `json:"l,omitempty"` // stopping cleanly: what follows is a leave, not a death
}

type meshDelegate struct{ m *Mesh }

func (d *meshDelegate) NodeMeta(limit int) []byte {
	leaving := d.m.leaving.Load()
	b, _ := json.Marshal(nodeMeta{Name: d.m.cfg.Name, Version: api.Version(), Leaving: leaving})
	if len(b) > limit {
		b, _ = json.Marshal(nodeMeta{Version: api.Version(), Leaving: leaving})
	}
	return b
}
func (d *meshDelegate) NotifyMsg(msg []byte) {
	defer d.m.evMu.RUnlock()
	if d.m.live() {
		d.m.heardReach(msg)
	}
}
func (d *meshDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *meshDelegate) LocalState(join bool) []byte                { return nil }
func (d *meshDelegate) MergeRemoteState(buf []byte, join bool)     {}

// meshAlive refuses gossip about devices that are not members.
type meshAlive struct{ m *Mesh }

func (a *meshAlive) NotifyAlive(node *memberlist.Node) error {
	if node.Name == a.m.self {
		return nil
	}
	return a.m.Authorize(node.Name)
}

// meshEvents follows memberlist's view of each peer.
type meshEvents struct{ m *Mesh }

// live holds off stop while a delegate runs; it reports false once the
// mesh is stopping. Callers defer e.m.evMu.RUnlock().
func (m *Mesh) live() bool {
	m.evMu.RLock()
	return !m.closed
}

func (e *meshEvents) NotifyJoin(node *memberlist.Node) {
	defer e.m.evMu.RUnlock()
	if !e.m.live() || node.Name == e.m.self {
		return
	}
	addr := node.Address()
	e.m.note(node, "alive")
	e.m.remember(node.Name, addr)
	e.m.log.Info("peer alive", "peer", node.Name, "addr", addr)
	e.m.kickPull(node.Name)
}

func (e *meshEvents) NotifyLeave(node *memberlist.Node) {
	defer e.m.evMu.RUnlock()
	if !e.m.live() {
		return
	}
	state := "dead"
	var meta nodeMeta
	if json.Unmarshal(node.Meta, &meta) == nil && meta.Leaving {
		state = "left"
	}
	e.m.note(node, state)
	e.m.log.Info("peer "+state, "peer", node.Name, "addr", node.Address())
}

func (e *meshEvents) NotifyUpdate(node *memberlist.Node) {
	defer e.m.evMu.RUnlock()
	if e.m.live() {
		e.m.note(node, "alive")
	}
}

func (m *Mesh) note(node *memberlist.Node, state string) {
	var meta nodeMeta
	json.Unmarshal(node.Meta, &meta) // a peer's bad meta only loses its name
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.peer(node.Name)
	if state == "alive" && p.state != "alive" {
		p.joined = m.clock.Now()
	}
	p.addr, p.state, p.version, p.name = node.Address(), state, meta.Version, peerDeviceName(meta.Name, "")
}

// memberAddr is a member's device id and address.
type memberAddr struct{ device, addr string }

// memberAddrs returns the members memberlist holds (alive or suspect) but
// this node, with their addresses as its event callbacks told them (note).
// Of the nodes Members returns only Name is read: memberlist rewrites the
// other fields (address, port, meta, versions) in place when an alive
// message arrives, holding its node lock, which it holds too while it
// calls the callbacks, and nowhere else can a caller take it.
func (m *Mesh) memberAddrs() []memberAddr {
	nodes := m.ml.Load().Members()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]memberAddr, 0, len(nodes))
	for _, node := range nodes {
		if p := m.peers[node.Name]; node.Name != m.self && p != nil && p.addr != "" {
			out = append(out, memberAddr{node.Name, p.addr})
		}
	}
	return out
}
