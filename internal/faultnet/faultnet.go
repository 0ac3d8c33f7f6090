// Package faultnet injects network faults under real protocols: it wraps
// UDP sockets so that tests can partition nodes, drop or delay packets
// while QUIC, memberlist and sync run unchanged on top.
package faultnet

import (
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Net is a set of wrapped sockets sharing one fault plan. The zero value
// is not usable; call New.
type Net struct {
	mu       sync.Mutex
	group    map[string]int // address -> partition group; absent: group 0
	cut      map[[2]string]bool
	dropRate float64
	delay    time.Duration
	rng      *rand.Rand
}

// New returns a network without faults; seed drives random drops.
func New(seed uint64) *Net {
	return &Net{group: make(map[string]int), cut: make(map[[2]string]bool), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Partition splits the network: each argument is a group of addresses
// (as "ip:port"), and packets flow only within a group. Addresses in no
// group are in group 0 with each other.
func (n *Net) Partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.group)
	for i, g := range groups {
		for _, a := range g {
			n.group[a] = i + 1
		}
	}
}

// Cut stops packets between the addresses a and b, both ways, while
// each still reaches the others (partial connectivity).
func (n *Net) Cut(a, b string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]string{a, b}] = true
	n.cut[[2]string{b, a}] = true
}

// Heal removes every partition and cut.
func (n *Net) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.group)
	clear(n.cut)
}

// SetDrop drops each packet with probability p.
func (n *Net) SetDrop(p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropRate = p
}

// SetDelay delays every packet sent by d.
func (n *Net) SetDelay(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.delay = d
}

// pass decides whether a packet from src to dst gets through, and after
// what delay.
func (n *Net) pass(src, dst string) (bool, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.group[src] != n.group[dst] || n.cut[[2]string{src, dst}] {
		return false, 0
	}
	if n.dropRate > 0 && n.rng.Float64() < n.dropRate {
		return false, 0
	}
	return true, n.delay
}

// Wrap returns pc with this network's faults applied to what it sends.
func (n *Net) Wrap(pc net.PacketConn) net.PacketConn {
	return &conn{PacketConn: pc, net: n}
}

type conn struct {
	net.PacketConn
	net *Net
}

func (c *conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ok, delay := c.net.pass(c.LocalAddr().String(), addr.String())
	if !ok {
		return len(b), nil // lost on the way, as UDP may
	}
	if delay > 0 {
		p := append([]byte(nil), b...)
		time.AfterFunc(delay, func() { c.PacketConn.WriteTo(p, addr) })
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, addr)
}

// ReadFrom drops packets from the other side of a partition too, so that
// a partition holds even for packets already in flight.
func (c *conn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		k, addr, err := c.PacketConn.ReadFrom(b)
		if err != nil {
			return k, addr, err
		}
		c.net.mu.Lock()
		src, dst := addr.String(), c.LocalAddr().String()
		blocked := c.net.group[src] != c.net.group[dst] || c.net.cut[[2]string{src, dst}]
		c.net.mu.Unlock()
		if !blocked {
			return k, addr, nil
		}
	}
}
