package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/quic-go/quic-go"
)

// ALPN protocol names: members speak alpnMesh; a device joining with an
// invite token, or appealing a member's view that it was revoked, speaks
// alpnJoin, whose connections carry one join or appeal stream.
const (
	alpnMesh = "memmesh/1"
	alpnJoin = "memmesh-join/1"
)

// Timeouts of the endpoint.
const (
	dialTimeout  = 3 * time.Second
	helloTimeout = 5 * time.Second
	idleTimeout  = 15 * time.Second
	keepAlive    = 2 * time.Second
)

// datagramMembership marks a QUIC datagram that carries a memberlist packet.
const datagramMembership = 1

// QUIC connection and stream close codes.
const (
	codeClosing      quic.ApplicationErrorCode = 0
	codeUnauthorized quic.ApplicationErrorCode = 1
	codeRevoked      quic.ApplicationErrorCode = 2 // ErrRevoked; only append codes
	codeTooMany      quic.ApplicationErrorCode = 3 // ErrBusy: too many connections
	codeStreamDone   quic.StreamErrorCode      = 0
	codeRefused      quic.StreamErrorCode      = 1
	codeBusy         quic.StreamErrorCode      = 2 // ErrBusy: too many streams of the type
)

// Config configures an Endpoint.
type Config struct {
	// Listen is the UDP address to listen on, e.g. ":7420" or "127.0.0.2:7420".
	Listen string
	// Key is the device's identity key; Cert its certificate (see Certificate).
	Key  ed25519.PrivateKey
	Cert tls.Certificate
	// Authorize decides whether a device is a member of the mesh: it is
	// asked at every TLS handshake of a mesh connection and at every
	// stream a member opens. A non-nil error refuses the device; one
	// that is ErrRevoked also tells the device (see Revoked).
	Authorize func(device string) error
	// Revoked, when set, is called when a member closes the connection
	// to it because this device was revoked (by: that member's device,
	// at addr).
	Revoked func(by, addr string)
	// Logger receives the endpoint's logs; nil discards them.
	Logger *slog.Logger
	// WrapConn, when set, wraps the UDP socket (fault injection in tests).
	WrapConn func(net.PacketConn) net.PacketConn

	// idle replaces streamIdle (tests).
	idle time.Duration
}

func (c *Config) validate() error {
	if c.Listen == "" {
		return errors.New("transport: config: Listen is required")
	}
	if len(c.Key) != ed25519.PrivateKeySize || len(c.Cert.Certificate) == 0 {
		return errors.New("transport: config: Key and Cert are required")
	}
	if c.Authorize == nil {
		return errors.New("transport: config: Authorize is required")
	}
	return nil
}

// Endpoint is a node's one UDP port: a QUIC transport that listens and
// dials from the same socket, so a peer's address is the same in both
// directions. It hands typed streams from members to Accept, and carries
// memberlist's packets and streams (see Memberlist).
type Endpoint struct {
	cfg    Config
	log    *slog.Logger
	device string
	udp    net.PacketConn
	tr     *quic.Transport
	ln     *quic.Listener
	quic   *quic.Config

	mu       sync.Mutex
	closed   bool
	conns    map[string]*peerConn   // live mesh connections by remote address
	byDevice map[string][]*peerConn // live mesh connections by device, oldest first
	joins    int                    // join connections open
	open     map[slot]int           // accepted streams open, by device and type
	dialing  map[string]*dialCall
	refused  map[string]time.Time // device -> when its last refusal was logged loudly

	streams  chan *Stream
	packets  chan *memberlist.Packet
	mstreams chan net.Conn

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// peerConn is a mesh connection and the device at its other end.
type peerConn struct {
	conn   *quic.Conn
	device string
}

type dialCall struct {
	done chan struct{}
	pc   *peerConn
	err  error
}

// Listen opens the endpoint's UDP socket and starts accepting connections.
func Listen(cfg Config) (*Endpoint, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.idle == 0 {
		cfg.idle = streamIdle
	}
	udpAddr, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("transport: listen address %q: %w", cfg.Listen, err)
	}
	udp, err := net.ListenUDP("udp", udpAddr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen on %s: %w", cfg.Listen, err)
	}
	var pconn net.PacketConn = udp
	if cfg.WrapConn != nil {
		pconn = cfg.WrapConn(udp)
	}
	// The stateless reset key is derived from the identity key, so that a
	// restarted node resets its peers' stale connections at once.
	resetKey := quic.StatelessResetKey(sha256.Sum256(append([]byte("memmesh stateless reset"), cfg.Key.Seed()...)))
	ctx, cancel := context.WithCancel(context.Background())
	e := &Endpoint{
		cfg:    cfg,
		log:    log,
		device: DeviceID(cfg.Key.Public().(ed25519.PublicKey)),
		udp:    udp,
		tr:     &quic.Transport{Conn: pconn, StatelessResetKey: &resetKey},
		quic: &quic.Config{
			HandshakeIdleTimeout: dialTimeout,
			MaxIdleTimeout:       idleTimeout,
			KeepAlivePeriod:      keepAlive,
			EnableDatagrams:      true,
			// Bounds on what one connection holds; see limits.go.
			MaxIncomingStreams:         maxStreamsPerConn,
			MaxIncomingUniStreams:      -1,
			MaxStreamReceiveWindow:     maxStreamWindow,
			MaxConnectionReceiveWindow: maxConnWindow,
		},
		conns:    make(map[string]*peerConn),
		byDevice: make(map[string][]*peerConn),
		open:     make(map[slot]int),
		dialing:  make(map[string]*dialCall),
		refused:  make(map[string]time.Time),
		streams:  make(chan *Stream),
		packets:  make(chan *memberlist.Packet, 256),
		mstreams: make(chan net.Conn),
		ctx:      ctx,
		cancel:   cancel,
	}
	e.ln, err = e.tr.Listen(e.serverTLS(), e.quic)
	if err != nil {
		cancel()
		udp.Close()
		return nil, fmt.Errorf("transport: listen: %w", err)
	}
	e.wg.Add(1)
	go e.acceptConns()
	return e, nil
}

// spawn runs fn in a goroutine that Close waits for, unless the endpoint
// is closed.
func (e *Endpoint) spawn(fn func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		fn()
	}()
	return true
}

// Device is this endpoint's device id.
func (e *Endpoint) Device() string { return e.device }

// Addr is the local UDP address.
func (e *Endpoint) Addr() *net.UDPAddr { return e.udp.LocalAddr().(*net.UDPAddr) }

// Close closes every connection and the socket, and waits for the
// endpoint's goroutines.
func (e *Endpoint) Close() error {
	e.cancel()
	e.mu.Lock()
	e.closed = true
	for _, pc := range e.conns {
		pc.conn.CloseWithError(codeClosing, "closing")
	}
	e.mu.Unlock()
	err := e.ln.Close()
	err = errors.Join(err, e.tr.Close(), e.udp.Close())
	e.wg.Wait()
	return err
}

// Disconnect closes every connection to device (after a revocation).
func (e *Endpoint) Disconnect(device string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for addr, pc := range e.conns {
		if pc.device == device {
			pc.conn.CloseWithError(codeUnauthorized, "device revoked")
			delete(e.conns, addr)
		}
	}
}

// RTT is the smoothed round-trip time of the connection to addr, 0 when
// there is none.
func (e *Endpoint) RTT(addr string) time.Duration {
	if pc := e.live(addr); pc != nil {
		return pc.conn.ConnectionStats().SmoothedRTT
	}
	return 0
}

func (e *Endpoint) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{alpnMesh, alpnJoin},
		ClientAuth: tls.RequireAnyClientCert,
		GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
			remote := hi.Conn.RemoteAddr().String()
			return &tls.Config{
				MinVersion:   tls.VersionTLS13,
				NextProtos:   []string{alpnMesh, alpnJoin},
				ClientAuth:   tls.RequireAnyClientCert,
				Certificates: []tls.Certificate{e.cfg.Cert},
				VerifyConnection: func(cs tls.ConnectionState) error {
					return e.verifyClient(cs, remote)
				},
			}, nil
		},
	}
}

// verifyClient accepts a member on a mesh connection and any device with a
// valid certificate on a join connection (which can only open a join
// stream). A refusal fails the handshake and is logged.
func (e *Endpoint) verifyClient(cs tls.ConnectionState, remote string) error {
	device, err := connDevice(cs)
	if err == nil && cs.NegotiatedProtocol == alpnMesh {
		err = e.cfg.Authorize(device)
	}
	if errors.Is(err, ErrRevoked) {
		e.logRefusal(device, "refused a revoked device, telling it", "addr", remote, "device", device)
		return nil // serveConn tells it and closes
	}
	if err != nil {
		e.logRefusal(device, "refused connection", "addr", remote, "device", device, "err", err)
	}
	return err
}

// refusalLogEvery is how often a refusal of the same device is logged at
// warning level; repeats in between (a revoked device retrying every few
// seconds) go to the debug level.
const refusalLogEvery = time.Minute

// maxRefusedKept bounds the devices whose last loud refusal is kept: a
// stranger makes a new key for every attempt.
const maxRefusedKept = 1024

func (e *Endpoint) logRefusal(device, msg string, args ...any) {
	e.mu.Lock()
	last, seen := e.refused[device]
	now := time.Now()
	loud := !seen || now.Sub(last) >= refusalLogEvery
	if loud {
		if len(e.refused) >= maxRefusedKept {
			// Forget the old ones; if all are recent, forget all, so
			// that some repeats are logged loudly again.
			for d, t := range e.refused {
				if now.Sub(t) >= refusalLogEvery {
					delete(e.refused, d)
				}
			}
			if len(e.refused) >= maxRefusedKept {
				clear(e.refused)
			}
		}
		e.refused[device] = now
	}
	e.mu.Unlock()
	if loud {
		e.log.Warn(msg, args...)
	} else {
		e.log.Debug(msg, args...)
	}
}

func connDevice(cs tls.ConnectionState) (string, error) {
	raw := make([][]byte, len(cs.PeerCertificates))
	for i, c := range cs.PeerCertificates {
		raw[i] = c.Raw
	}
	return peerDevice(raw)
}

// clientTLS is the configuration to dial a peer. With want set, the peer
// must be that device; without, it must be a member.
func (e *Endpoint) clientTLS(alpn, want string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		NextProtos:         []string{alpn},
		ServerName:         "memmesh",
		Certificates:       []tls.Certificate{e.cfg.Cert},
		InsecureSkipVerify: true, // the certificate is checked by VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			device, err := connDevice(cs)
			if err != nil {
				return err
			}
			if want != "" && device != want {
				return fmt.Errorf("%w: peer is device %s, expected %s", ErrUnauthorized, device, want)
			}
			if alpn == alpnMesh {
				return e.cfg.Authorize(device)
			}
			return nil
		},
	}
}

func (e *Endpoint) acceptConns() {
	defer e.wg.Done()
	for {
		conn, err := e.ln.Accept(e.ctx)
		if err != nil {
			return
		}
		e.serveConn(conn)
	}
}

// serveConn registers a new connection and starts reading its streams and
// datagrams.
func (e *Endpoint) serveConn(conn *quic.Conn) *peerConn {
	state := conn.ConnectionState().TLS
	device, err := connDevice(state)
	if err != nil { // verified at the handshake; cannot happen
		conn.CloseWithError(codeUnauthorized, err.Error())
		return nil
	}
	pc := &peerConn{conn: conn, device: device}
	join := state.NegotiatedProtocol == alpnJoin
	if err := e.cfg.Authorize(device); !join && errors.Is(err, ErrRevoked) {
		conn.CloseWithError(codeRevoked, "revoked")
		return nil
	}
	if join && !e.watchJoin(pc) {
		return nil
	}
	if !join {
		e.watchMesh(pc)
		e.spawn(func() { e.readDatagrams(pc) })
	}
	if !e.spawn(func() { e.acceptStreams(pc, join) }) {
		conn.CloseWithError(codeClosing, "closing")
	}
	return pc
}

// watchMesh registers a mesh connection until it ends, closing its
// device's oldest when it has too many.
func (e *Endpoint) watchMesh(pc *peerConn) {
	conn, addr := pc.conn, pc.conn.RemoteAddr().String()
	e.mu.Lock()
	e.conns[addr] = pc
	oldest := e.addConn(pc)
	e.mu.Unlock()
	if oldest != nil {
		e.logRefusal(pc.device, "closed a device's oldest connection: too many", "device", pc.device, "addr", oldest.conn.RemoteAddr())
		oldest.conn.CloseWithError(codeTooMany, "too many connections")
	}
	e.spawn(func() {
		select {
		case <-conn.Context().Done():
			var closed *quic.ApplicationError
			if errors.As(context.Cause(conn.Context()), &closed) && closed.Remote && closed.ErrorCode == codeRevoked && e.cfg.Revoked != nil {
				e.cfg.Revoked(pc.device, addr)
			}
		case <-e.ctx.Done():
		}
		e.mu.Lock()
		if e.conns[addr] == pc {
			delete(e.conns, addr)
		}
		e.dropConn(pc)
		e.mu.Unlock()
	})
}

// watchJoin counts a join connection until it ends, or refuses it when
// maxJoinConns are open.
func (e *Endpoint) watchJoin(pc *peerConn) bool {
	e.mu.Lock()
	busy := e.joins >= maxJoinConns
	if !busy {
		e.joins++
	}
	e.mu.Unlock()
	if busy {
		e.logRefusal(pc.device, "refused a join connection: too many open", "device", pc.device, "addr", pc.conn.RemoteAddr())
		pc.conn.CloseWithError(codeTooMany, "too many join connections")
		return false
	}
	if !e.spawn(func() {
		select {
		case <-pc.conn.Context().Done():
		case <-e.ctx.Done():
		}
		e.mu.Lock()
		e.joins--
		e.mu.Unlock()
	}) {
		pc.conn.CloseWithError(codeClosing, "closing")
		return false
	}
	return true
}

func (e *Endpoint) readDatagrams(pc *peerConn) {
	for {
		b, err := pc.conn.ReceiveDatagram(e.ctx)
		if err != nil {
			return
		}
		if len(b) < 2 || b[0] != datagramMembership {
			continue
		}
		p := &memberlist.Packet{Buf: b[1:], From: pc.conn.RemoteAddr(), Timestamp: time.Now()}
		select {
		case e.packets <- p:
		case <-e.ctx.Done():
			return
		}
	}
}

func (e *Endpoint) acceptStreams(pc *peerConn, join bool) {
	ctx := e.ctx
	if join { // whose one stream must come at once
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, helloTimeout)
		defer cancel()
	}
	for {
		st, err := pc.conn.AcceptStream(ctx)
		if err != nil {
			if join {
				pc.conn.CloseWithError(codeUnauthorized, "no join stream")
			}
			return
		}
		if !e.spawn(func() { e.serveStream(pc, st, join) }) {
			st.CancelRead(codeRefused)
			return
		}
		if join { // a join connection carries one stream
			return
		}
	}
}

// serveStream reads a stream's hello, checks it, replies and hands the
// stream on. Refusals are logged and change nothing.
func (e *Endpoint) serveStream(pc *peerConn, st *quic.Stream, join bool) {
	addr := pc.conn.RemoteAddr()
	st.SetReadDeadline(time.Now().Add(helloTimeout))
	h, err := readHello(st)
	if err == nil {
		err = e.checkHello(pc, h, join)
	}
	release := func() {}
	if err == nil && !join {
		release, err = e.acquire(pc.device, h.Type)
	}
	if err != nil {
		e.logRefusal(pc.device, "refused stream", "addr", addr, "device", pc.device, "err", err)
		st.Write(appendReply(nil, helloRefused, 0, err.Error()))
		st.Close()
		if errors.Is(err, ErrBusy) {
			st.CancelRead(codeBusy)
		} else {
			st.CancelRead(codeRefused)
		}
		if join {
			pc.conn.CloseWithError(codeUnauthorized, "refused")
		}
		return
	}
	version, _ := negotiate(h)
	st.SetReadDeadline(time.Time{})
	if _, err := st.Write(appendReply(nil, helloOK, version, "")); err != nil {
		st.CancelRead(codeRefused)
		release()
		return
	}
	s := &Stream{Stream: st, Type: h.Type, Peer: pc.device, Addr: addr, Version: version, idle: e.cfg.idle, release: release}
	if join {
		s.conn = pc.conn
	}
	if h.Type == StreamMembership {
		select {
		case e.mstreams <- e.membershipConn(s):
		case <-e.ctx.Done():
			s.Close()
		}
		return
	}
	select {
	case e.streams <- s:
	case <-e.ctx.Done():
		s.Close()
	}
}

func (e *Endpoint) checkHello(pc *peerConn, h hello, join bool) error {
	if _, err := negotiate(h); err != nil {
		return err
	}
	if h.Device != pc.device {
		return fmt.Errorf("%w: hello names device %q, certificate proves %s", ErrUnauthorized, h.Device, pc.device)
	}
	switch {
	case join && h.Type != StreamJoin && h.Type != StreamAppeal:
		return fmt.Errorf("%w: a join connection can only open a join or appeal stream, not %v", ErrUnauthorized, h.Type)
	case join:
		return nil
	case h.Type == StreamMembership, h.Type == StreamSync, h.Type == StreamPush:
		return e.cfg.Authorize(pc.device)
	}
	return fmt.Errorf("%w: unknown stream type %d", ErrMalformed, byte(h.Type))
}

// Accept returns the next sync, push, join or appeal stream a peer opened.
func (e *Endpoint) Accept(ctx context.Context) (*Stream, error) {
	select {
	case s := <-e.streams:
		return s, nil
	case <-e.ctx.Done():
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Open opens a stream of type typ to the member at addr, dialing it if
// there is no connection yet.
func (e *Endpoint) Open(ctx context.Context, addr string, typ StreamType) (*Stream, error) {
	pc, err := e.connect(ctx, addr)
	if err != nil {
		return nil, err
	}
	return e.openStream(ctx, pc, typ)
}

// DialJoin connects to the device want at addr with a join connection and
// opens its join stream. Closing the stream closes the connection.
func (e *Endpoint) DialJoin(ctx context.Context, addr, want string) (*Stream, error) {
	return e.dialOnce(ctx, addr, want, StreamJoin)
}

// DialAppeal connects to the member want at addr, which took this device
// for revoked, with a join connection and opens its appeal stream.
// Closing the stream closes the connection.
func (e *Endpoint) DialAppeal(ctx context.Context, addr, want string) (*Stream, error) {
	return e.dialOnce(ctx, addr, want, StreamAppeal)
}

// dialOnce connects to the device want at addr with a join connection and
// opens its one stream, of type typ.
func (e *Endpoint) dialOnce(ctx context.Context, addr, want string, typ StreamType) (*Stream, error) {
	udpAddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: address %q: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := e.tr.Dial(ctx, udpAddr, e.clientTLS(alpnJoin, want), e.quic)
	if err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	s, err := e.openStream(ctx, &peerConn{conn: conn, device: want}, typ)
	if err != nil {
		conn.CloseWithError(codeClosing, "")
		return nil, err
	}
	s.conn = conn
	return s, nil
}

func (e *Endpoint) openStream(ctx context.Context, pc *peerConn, typ StreamType) (*Stream, error) {
	st, err := pc.conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, fmt.Errorf("transport: open %v stream to %s: %w", typ, pc.conn.RemoteAddr(), err)
	}
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	} else {
		st.SetDeadline(time.Now().Add(helloTimeout))
	}
	h := hello{Type: typ, Min: MinVersion, Max: MaxVersion, Device: e.device}
	var version byte
	if _, err = st.Write(h.appendTo(nil)); err == nil {
		version, err = readReply(st)
	}
	if err != nil {
		st.CancelRead(codeRefused)
		st.CancelWrite(codeRefused)
		return nil, fmt.Errorf("transport: %v stream to %s: %w", typ, pc.conn.RemoteAddr(), err)
	}
	st.SetDeadline(time.Time{})
	return &Stream{Stream: st, Type: typ, Peer: pc.device, Addr: pc.conn.RemoteAddr(), Version: version, idle: e.cfg.idle}, nil
}

// live returns the live mesh connection to addr, or nil.
func (e *Endpoint) live(addr string) *peerConn {
	e.mu.Lock()
	defer e.mu.Unlock()
	if pc := e.conns[addr]; pc != nil && pc.conn.Context().Err() == nil {
		return pc
	}
	return nil
}

// connect returns a live mesh connection to addr, dialing one if needed.
// Concurrent callers share one dial.
func (e *Endpoint) connect(ctx context.Context, addr string) (*peerConn, error) {
	udpAddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: address %q: %w", addr, err)
	}
	key := udpAddr.String()
	e.mu.Lock()
	if pc := e.conns[key]; pc != nil && pc.conn.Context().Err() == nil {
		e.mu.Unlock()
		return pc, nil
	}
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	call := e.dialing[key]
	if call == nil {
		call = &dialCall{done: make(chan struct{})}
		e.dialing[key] = call
		e.wg.Add(1)
		go e.dial(udpAddr, call)
	}
	e.mu.Unlock()
	select {
	case <-call.done:
		return call.pc, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("transport: dial %s: %w", addr, ctx.Err())
	}
}

func (e *Endpoint) dial(addr *net.UDPAddr, call *dialCall) {
	defer e.wg.Done()
	ctx, cancel := context.WithTimeout(e.ctx, dialTimeout)
	defer cancel()
	conn, err := e.tr.Dial(ctx, addr, e.clientTLS(alpnMesh, ""), e.quic)
	if err != nil {
		call.err = fmt.Errorf("transport: dial %s: %w", addr, err)
	} else if call.pc = e.serveConn(conn); call.pc == nil {
		call.err = fmt.Errorf("transport: dial %s: %w", addr, ErrBadCertificate)
	}
	e.mu.Lock()
	delete(e.dialing, addr.String())
	e.mu.Unlock()
	close(call.done)
}
