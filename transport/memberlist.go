package transport

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/hashicorp/memberlist"
)

// MaxPacket is the largest memberlist packet that fits one QUIC datagram
// on any path QUIC accepts (1200-byte minimum MTU, less QUIC's overhead).
// Set memberlist.Config.UDPBufferSize to at most this.
const MaxPacket = 1100

// Memberlist returns memberlist's Transport over this endpoint: packets
// travel as QUIC datagrams and streams as QUIC streams of type
// StreamMembership, on the same mutually authenticated connections as
// everything else. advertise is the address other members dial.
func (e *Endpoint) Memberlist(advertise *net.UDPAddr) memberlist.Transport {
	return &mlTransport{e: e, advertise: advertise}
}

type mlTransport struct {
	e         *Endpoint
	advertise *net.UDPAddr
}

var _ memberlist.Transport = (*mlTransport)(nil)

func (t *mlTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return t.advertise.IP, t.advertise.Port, nil
}

// WriteTo sends a packet as a datagram. Like UDP it does not wait: with no
// connection to addr yet, it dials in the background and sends the packet
// once connected, or drops it.
func (t *mlTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if len(b) > MaxPacket {
		return time.Time{}, fmt.Errorf("transport: memberlist packet of %d bytes exceeds %d", len(b), MaxPacket)
	}
	dg := append([]byte{datagramMembership}, b...)
	if pc := t.e.live(addr); pc != nil {
		return time.Now(), pc.conn.SendDatagram(dg)
	}
	if !t.e.spawn(func() {
		ctx, cancel := context.WithTimeout(t.e.ctx, dialTimeout)
		defer cancel()
		if pc, err := t.e.connect(ctx, addr); err == nil {
			pc.conn.SendDatagram(dg)
		}
	}) {
		return time.Time{}, ErrClosed
	}
	return time.Now(), nil
}

func (t *mlTransport) PacketCh() <-chan *memberlist.Packet { return t.e.packets }

func (t *mlTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(t.e.ctx, timeout)
	defer cancel()
	s, err := t.e.Open(ctx, addr, StreamMembership)
	if err != nil {
		return nil, err
	}
	return t.e.membershipConn(s), nil
}

func (t *mlTransport) StreamCh() <-chan net.Conn { return t.e.mstreams }

// Shutdown does nothing: the endpoint belongs to the node, which closes it
// after memberlist.
func (t *mlTransport) Shutdown() error { return nil }

// membershipConn is a membership stream as memberlist reads it: the
// peer's message checked before memberlist sees it (readMembership).
func (e *Endpoint) membershipConn(s *Stream) net.Conn {
	return &checkedConn{Conn: &netConn{s: s, local: e.Addr()}, refused: func(err error) {
		e.logRefusal(s.Peer, "refused a membership message", "addr", s.Addr, "device", s.Peer, "err", err)
	}}
}

// netConn is a stream as the net.Conn memberlist wants.
type netConn struct {
	s     *Stream
	local net.Addr
}

func (c *netConn) Read(b []byte) (int, error)         { return c.s.Read(b) }
func (c *netConn) Write(b []byte) (int, error)        { return c.s.Write(b) }
func (c *netConn) Close() error                       { return c.s.Close() }
func (c *netConn) LocalAddr() net.Addr                { return c.local }
func (c *netConn) RemoteAddr() net.Addr               { return c.s.Addr }
func (c *netConn) SetDeadline(t time.Time) error      { return c.s.SetDeadline(t) }
func (c *netConn) SetReadDeadline(t time.Time) error  { return c.s.SetReadDeadline(t) }
func (c *netConn) SetWriteDeadline(t time.Time) error { return c.s.SetWriteDeadline(t) }

// AdvertiseAddr chooses the address peers should dial for a listen
// address: its own host when it names one, otherwise this machine's first
// private (then any non-loopback) IPv4 address, otherwise loopback.
func AdvertiseAddr(listen *net.UDPAddr) (*net.UDPAddr, error) {
	if !listen.IP.IsUnspecified() && listen.IP != nil {
		return listen, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("transport: interface addresses: %w", err)
	}
	var public net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		if ipn.IP.IsPrivate() {
			return &net.UDPAddr{IP: ipn.IP.To4(), Port: listen.Port}, nil
		}
		if public == nil {
			public = ipn.IP.To4()
		}
	}
	if public != nil {
		return &net.UDPAddr{IP: public, Port: listen.Port}, nil
	}
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: listen.Port}, nil
}

// maxLocalAddrs bounds how many addresses LocalAddrs returns.
const maxLocalAddrs = 8

// LocalAddrs lists the addresses at which this machine's endpoint may be
// reached by another machine: advertise first, then, when the endpoint
// listens on every interface, each other non-loopback address (Wi-Fi,
// Ethernet, a VPN), with the port.
func LocalAddrs(listen, advertise *net.UDPAddr) []string {
	out := []string{advertise.String()}
	if !listen.IP.IsUnspecified() && listen.IP != nil {
		return out
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		s := (&net.UDPAddr{IP: ipn.IP, Port: listen.Port}).String()
		if !slices.Contains(out, s) && len(out) < maxLocalAddrs {
			out = append(out, s)
		}
	}
	return out
}
