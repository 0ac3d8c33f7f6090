package mesh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/memberlist"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// DefaultListen is the mesh's default UDP address.
const DefaultListen = ":7420"

// Config configures a node's part in the mesh. The zero value of each
// field means its default.
type Config struct {
	// Listen is the UDP address of the QUIC endpoint (default ":7420").
	Listen string
	// Advertise is the address peers dial (default: Listen's host, or
	// this machine's first private IPv4 address).
	Advertise string
	// Name is this device's human name (default: the hostname).
	Name string
	// Join lists member addresses to contact at start, besides the ones
	// the node remembers.
	Join []string
	// ProbeInterval is memberlist's failure-detection probe interval
	// (default 500ms: a dead peer is detected in about 3s).
	ProbeInterval time.Duration
	// SuspicionMult is how many probe intervals a peer that fails its
	// probes stays suspect before memberlist declares it dead (default
	// 3; memberlist starts at six times that and comes down to it as
	// other members confirm the suspicion). A larger one rides out longer
	// losses without a death.
	SuspicionMult int
	// SyncInterval is the period of anti-entropy with each live peer
	// (default 30s); joins and reconnections also start one at once.
	SyncInterval time.Duration
	// RetryInterval is how often known peers that are not alive are
	// contacted again (default 2s).
	RetryInterval time.Duration
	// WrapConn wraps the UDP socket (fault injection in tests).
	WrapConn func(net.PacketConn) net.PacketConn
	// NoRelay stops this node from passing on the pushes it receives to
	// the peers their sender cannot reach (see relay): a write then
	// crosses a partial partition only by anti-entropy. Benchmarks set it
	// to measure what relaying costs.
	NoRelay bool
	// Clock is the time the mesh's scheduling reads (default: the
	// system's).
	Clock Clock
	// Network and Members, when both set, stand in for the QUIC endpoint
	// and memberlist: Start then opens nothing and starts no loop, and
	// the caller drives the mesh one step at a time from one goroutine
	// (see Step): a deterministic simulation. Production leaves them nil.
	Network Network
	Members Members
	// Rand is where the change log's epochs come from (default
	// crypto/rand); a simulation seeds it.
	Rand io.Reader
}

func (c *Config) withDefaults() Config {
	d := *c
	if d.Listen == "" {
		d.Listen = DefaultListen
	}
	if d.Name == "" {
		d.Name, _ = os.Hostname()
	}
	if d.ProbeInterval <= 0 {
		d.ProbeInterval = 500 * time.Millisecond
	}
	if d.SuspicionMult <= 0 {
		d.SuspicionMult = 3
	}
	if d.SyncInterval <= 0 {
		d.SyncInterval = 30 * time.Second
	}
	if d.RetryInterval <= 0 {
		d.RetryInterval = 2 * time.Second
	}
	if d.Clock == nil {
		d.Clock = SystemClock(nil)
	}
	if d.Rand == nil {
		d.Rand = rand.Reader
	}
	return d
}

// Identity is the device the mesh runs as: its key and certificate,
// which peers check at every connection, the device id derived from the
// key, and the Automerge actor the node writes as since it opened its
// store.
type Identity struct {
	Key    ed25519.PrivateKey
	Cert   tls.Certificate
	Device string
	Actor  string
}

// Keys of the mesh's local (never replicated) data.
const (
	localKnown     = "mesh/known"     // JSON: device id -> last address
	localPosPrefix = "mesh/pos/"      // + device: where the last pull from it ended
	localInvite    = "mesh/invite/"   // + token id: an invite
	pushQueue      = 64               // pushes waiting per peer before the oldest are dropped
	meshVersionTag = "memmesh-proto-" // node meta: protocol version prefix
)

// Mesh is a node's membership and sync: the QUIC endpoint, memberlist
// over it, anti-entropy pulls, pushes of local changes, and the view of
// the device registry (mesh records) that decides who may connect.
// Create it with New, then Start it; Stop leaves the mesh.
type Mesh struct {
	cfg      Config
	id       Identity
	self     string // id.Device
	actor    string // the Automerge actor of this device since the store opened
	host     Host
	store    Store
	registry *Registry
	clock    Clock
	log      *slog.Logger
	ep       *transport.Endpoint                   // nil when stepped
	ml       atomic.Pointer[memberlist.Memberlist] // nil when stepped; new when a revoked device is reinstated
	net      Network                               // the endpoint, or Config.Network
	members  Members                               // memberlist, or Config.Members
	// stepped is set when Config.Network drives the mesh: no loop runs,
	// and pushes wait in their queues until PushTo sends them.
	stepped bool
	// pushed is the change-log seq after which the pusher reads next.
	pushed    atomic.Uint64
	advertise *net.UDPAddr
	// epoch names this change log for as long as the store is open. A
	// store opened again may stand behind what it served (a home
	// restored from a backup reuses numbers peers already pulled), so
	// each open starts a new epoch, and each peer's first pull after it
	// compares digests bucket by bucket instead of trusting its position.
	epoch [transport.EpochSize]byte

	inviteMu sync.Mutex // one invite check at a time

	// memberlist calls its delegates from timers that outlive Shutdown;
	// they hold evMu for reading and do nothing once closed is set.
	evMu   sync.RWMutex
	closed bool

	// leaving is set as the node stops cleanly, and gossiped first, since
	// memberlist tells its peers of a leave as of a death.
	leaving atomic.Bool

	pulledBytes atomic.Int64 // frame bytes of every pull since the start
	pushes      atomic.Int64 // pushes a peer applied, since the start
	pushedBytes atomic.Int64 // their documents' encoded bytes
	relays      atomic.Int64 // pushes queued to pass others' pushes on

	// revokedBy is the member that told this device it was revoked: it
	// then stops syncing (see revokedSelf). leaveMu orders that stop and
	// Stop's leave.
	revokedBy atomic.Pointer[string]
	leaveMu   sync.Mutex

	mu      sync.Mutex
	devices map[string]model.MeshRecord // the registry, by device id
	localNS map[string]bool             // namespaces that never leave this machine
	peers   map[string]*peerState       // by device id
	remote  map[uint64]bool             // seqs of changes received from peers: not pushed
	known   map[string]string           // device id -> last address, persisted
	heard   map[string]heard            // reach reports, by the device that sent them
	relayed map[string]relayedSum       // digest sums relayed by others, by device
	// appealed holds when this device last appealed to each member, and
	// appeals when it last served each device's appeal.
	appealed, appeals map[string]time.Time

	// send pushes a batch to a peer and waits until it applied it (push;
	// tests replace it).
	send func(ctx context.Context, device, addr string, batch []transport.Entry) error

	private privateShare // of the digest: documents that never leave this machine
	empty   atomic.Pointer[emptyBuckets]

	kick      chan string   // devices to pull from now
	pushWake  chan struct{} // new local changes
	sweepWake chan struct{} // what revocations refuse changed
	sweepMu   sync.Mutex    // one sweep at a time
	applying  sync.RWMutex  // held for reading by each apply of peers' documents (see Sweep)
	refusedMu sync.Mutex    // one update of the refused counts at a time
	// pullSlot lets one pull run at a time, from whichever peer: a new or
	// returning node catches up from one peer, and its pulls from the
	// others, which start once that one is done, find little left to
	// fetch instead of the same documents from every peer at once.
	pullSlot chan struct{}

	knownChanged chan struct{} // known changed: saveLoop writes it
	saveMu       sync.Mutex    // one write of known at a time, in order
	// ctx is set before anything can call the mesh back: the loops that
	// callbacks start (a peer's sender, say) wait on it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// listening, when set (tests), is called by Start once the endpoint
	// and memberlist listen, before the mesh's loops start.
	listening func()
}

// peerState is what this node knows of one peer beyond memberlist.
type peerState struct {
	addr      string
	state     string    // memberlist's: alive, dead, left (see reach for suspect)
	joined    time.Time // when it last became alive
	direct    time.Time // when it last answered a direct probe
	version   string
	name      string
	pulling   bool
	lastSync  time.Time           // end of the last complete pull from the peer
	lastStats transport.SyncStats // of the last pull that brought documents
	lastErr   string
	pulls     int       // pulls started since this node started
	pulledAt  time.Time // when the last one started
	know      knowledge // which of our documents it holds (see behind)
	push      chan []transport.Entry
}

// New makes the mesh of the device id over store, whose documents host
// merges and commits, and whose device registry reg writes. It checks
// the configuration and reads the registry; Start opens the network.
func New(cfg Config, id Identity, host Host, store Store, reg *Registry, log *slog.Logger) (*Mesh, error) {
	given := cfg.Name
	cfg = cfg.withDefaults()
	name, err := checkDeviceName(cfg.Name)
	switch {
	case err != nil && given != "":
		return nil, err
	case err != nil:
		name = id.Device[:8] // a host name that makes no device name
	}
	cfg.Name = name
	m := &Mesh{
		cfg:       cfg,
		id:        id,
		self:      id.Device,
		actor:     id.Actor,
		host:      host,
		store:     store,
		registry:  reg,
		clock:     cfg.Clock,
		log:       log.With("component", "mesh"),
		devices:   make(map[string]model.MeshRecord),
		localNS:   make(map[string]bool),
		peers:     make(map[string]*peerState),
		remote:    make(map[uint64]bool),
		known:     make(map[string]string),
		heard:     make(map[string]heard),
		relayed:   make(map[string]relayedSum),
		appealed:  make(map[string]time.Time),
		appeals:   make(map[string]time.Time),
		kick:      make(chan string, 64),
		pullSlot:  make(chan struct{}, 1),
		pushWake:  make(chan struct{}, 1),
		sweepWake: make(chan struct{}, 1),
		net:       cfg.Network,
		members:   cfg.Members,
		stepped:   cfg.Network != nil,

		knownChanged: make(chan struct{}, 1),
	}
	if m.stepped != (cfg.Members != nil) {
		return nil, errors.New("mesh: config: set both Network and Members, or neither")
	}
	m.send = m.push
	if err := m.loadState(); err != nil {
		return nil, err
	}
	return m, nil
}

// Start opens the endpoint and memberlist and starts the mesh loops; a
// stepped mesh (Config.Network) only notes where its pusher starts.
func (m *Mesh) Start(ctx context.Context) error {
	m.pushed.Store(m.store.DurableSeq())
	// The context before the endpoint and memberlist: both call the mesh
	// back as soon as they listen (a peer that joins, its streams), and
	// the loops those callbacks start read it.
	m.ctx, m.cancel = context.WithCancel(ctx)
	if m.stepped {
		m.registry.follow(m)
		return nil
	}
	if err := m.listen(); err != nil {
		m.cancel()
		return err
	}
	if m.listening != nil {
		m.listening()
	}
	m.goLoop(m.acceptLoop)
	m.goLoop(m.pullLoop)
	m.goLoop(m.pushLoop)
	m.goLoop(m.retryLoop)
	m.goLoop(m.saveLoop)
	m.goLoop(m.sweepLoop)
	m.log.Info("mesh listening", "addr", m.ep.Addr().String(), "advertise", m.advertise.String(), "device", m.self)
	return nil
}

// listen opens the endpoint and memberlist over it.
func (m *Mesh) listen() error {
	ep, err := transport.Listen(transport.Config{
		Listen:    m.cfg.Listen,
		Key:       m.id.Key,
		Cert:      m.id.Cert,
		Authorize: m.Authorize,
		Revoked:   m.revokedSelf,
		Logger:    m.log.With("component", "transport"),
		WrapConn:  m.cfg.WrapConn,
	})
	if err != nil {
		return err
	}
	m.ep = ep
	m.net = endpointNetwork{ep}
	if m.cfg.Advertise != "" {
		m.advertise, err = net.ResolveUDPAddr("udp", m.cfg.Advertise)
	} else {
		m.advertise, err = transport.AdvertiseAddr(ep.Addr())
	}
	if err != nil {
		ep.Close()
		return fmt.Errorf("mesh: advertise address: %w", err)
	}
	// Under leaveMu, as stopRevoked, which the endpoint may call from now
	// on, stops memberlist: told before memberlist ran, it is stopped here.
	m.leaveMu.Lock()
	ml, err := memberlist.Create(m.memberlistConfig())
	if err == nil {
		m.ml.Store(ml)
		if m.revokedBy.Load() != nil {
			err = ml.Shutdown()
		}
	}
	m.leaveMu.Unlock()
	if err != nil {
		ep.Close()
		return fmt.Errorf("mesh: memberlist: %w", err)
	}
	m.members = memberlistMembers{m}
	m.registry.follow(m)
	return nil
}

// Addr is the address the mesh listens on.
func (m *Mesh) Addr() net.Addr { return m.ep.Addr() }

// Open opens a stream of type typ to the member at addr.
func (m *Mesh) Open(ctx context.Context, addr string, typ transport.StreamType) (*transport.Stream, error) {
	return m.ep.Open(ctx, addr, typ)
}

func (m *Mesh) goLoop(fn func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn()
	}()
}

// Stop leaves the mesh: memberlist says goodbye, then the loops and the
// endpoint stop.
func (m *Mesh) Stop() error {
	if m.stepped {
		m.cancel()
		m.wg.Wait()
		return nil
	}
	m.leaving.Store(true)
	var err error
	m.leaveMu.Lock()
	ml := m.ml.Load()
	if m.revokedBy.Load() == nil {
		if err := ml.UpdateNode(time.Second); err != nil {
			// Peers that miss it show a death instead of a leave: no
			// reason to fail the stop.
			m.log.Debug("telling peers of the leave", "err", err)
		}
		err = ml.Leave(time.Second)
	}
	err = errors.Join(err, ml.Shutdown())
	m.leaveMu.Unlock()
	m.evMu.Lock()
	m.closed = true
	m.evMu.Unlock()
	m.cancel()
	err = errors.Join(err, m.ep.Close())
	m.wg.Wait()
	return err
}

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

// loadState starts a new epoch and reads the registry, namespace settings
// and known peers.
func (m *Mesh) loadState() error {
	store := m.store
	if _, err := io.ReadFull(m.cfg.Rand, m.epoch[:]); err != nil {
		return fmt.Errorf("mesh: epoch: %w", err)
	}
	if data, err := store.GetLocal(localKnown); err == nil {
		if err := json.Unmarshal(data, &m.known); err != nil {
			m.log.Warn("forgetting unreadable list of known peers", "err", err)
		}
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return fmt.Errorf("mesh: record %s: %w", rec.ID, err)
		}
		m.noteRecord(r)
		return nil
	})
}

// Noted tells the mesh of a mesh record the registry committed: its view
// of the registry follows and, when what revocations refuse changed
// (revoked), revoked devices are disconnected and what they made beyond
// their frontiers is removed.
func (m *Mesh) Noted(r model.MeshRecord, revoked bool) {
	m.noteRecord(r)
	if revoked {
		m.revocationsChanged()
	}
}

// noteRecord updates the in-memory view of one mesh record. Callers that
// hold m.mu use noteRecordLocked.
func (m *Mesh) noteRecord(r model.MeshRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noteRecordLocked(r)
}

// forgetRecord drops a mesh record the sweep erased from the view.
func (m *Mesh) forgetRecord(r model.MeshRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch r.What {
	case model.MeshDevice:
		delete(m.devices, r.Key)
	case model.MeshNamespace:
		if m.localNS[r.Key] {
			delete(m.localNS, r.Key)
			m.privateChanged()
		}
	}
}

func (m *Mesh) noteRecordLocked(r model.MeshRecord) {
	switch r.What {
	case model.MeshDevice:
		m.devices[r.Key] = r
	case model.MeshNamespace:
		if local := r.Sync == model.SyncLocal; local != m.localNS[r.Key] {
			if local {
				m.localNS[r.Key] = true
			} else {
				delete(m.localNS, r.Key)
			}
			m.privateChanged()
		}
	}
}

// Authorize admits a device that is in the registry and not revoked.
func (m *Mesh) Authorize(device string) error {
	m.mu.Lock()
	_, ok := m.devices[device]
	m.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("%w: %s is not in the device registry", transport.ErrUnauthorized, device)
	case m.registry.Revoked(device):
		return fmt.Errorf("%w: %s was revoked", transport.ErrRevoked, device)
	}
	return nil
}

// peer returns the state of a peer, creating it.
func (m *Mesh) peer(device string) *peerState {
	p := m.peers[device]
	if p == nil {
		p = &peerState{push: make(chan []transport.Entry, pushQueue), know: knowledge{holds: make(map[docKey]string)}}
		m.peers[device] = p
		if !m.stepped {
			m.goLoop(func() { m.pushTo(device, p) })
		}
	}
	return p
}

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

// pullBack reports whether serving a pull to peer should start a pull
// from it, since the puller may hold what we lack: only in steady state
// (after a first contact the puller is catching up, and membership's join
// event already starts a pull each way), when its digest differs from
// ours, and when no pull from it started within the sync interval. Two
// nodes whose digests differ for good would otherwise pull from each
// other without end, each served pull kicking the next.
func (m *Mesh) pullBack(peer string, req transport.PullRequest) bool {
	if req.Since.Epoch != m.epoch || req.Since.Seq == 0 {
		return false
	}
	m.mu.Lock()
	recent := m.clock.Now().Sub(m.peer(peer).pulledAt) < m.cfg.SyncInterval
	m.mu.Unlock()
	if recent {
		return false
	}
	digest, err := m.Digest()
	return err == nil && digest != req.Digest
}

// kickPull asks for a pull from device soon.
func (m *Mesh) kickPull(device string) {
	select {
	case m.kick <- device:
	default:
	}
}

// acceptLoop serves the streams peers open.
func (m *Mesh) acceptLoop() {
	for {
		s, err := m.ep.Accept(m.ctx)
		if err != nil {
			return
		}
		m.goLoop(func() { m.serve(s) })
	}
}

func (m *Mesh) serve(s *transport.Stream) {
	log := m.log.With("peer", s.Peer, "addr", s.Addr.String())
	switch s.Type {
	case transport.StreamJoin:
		if err := m.serveJoin(s); err != nil {
			log.Warn("join refused", "err", err)
		}
	case transport.StreamAppeal:
		m.serveStream(s.Type, s, log)
	default:
		// A member that restarted elsewhere is reachable where it dials
		// from, before memberlist learns its new address.
		m.mu.Lock()
		m.peer(s.Peer).addr = s.Addr.String()
		m.mu.Unlock()
		m.serveStream(s.Type, s, log)
	}
}

// serveStream serves a member's sync or push stream s of type typ.
func (m *Mesh) serveStream(typ transport.StreamType, s transport.FrameStream, log *slog.Logger) {
	peer := s.PeerDevice()
	switch typ {
	case transport.StreamSync:
		r := &servedReplica{replica: replica{m}}
		req, err := transport.ServePull(m.ctx, s, r)
		if err != nil {
			log.Warn("serving a pull failed", "err", err)
			return
		}
		m.served(peer, req, r)
		if m.pullBack(peer, req) {
			m.kickPull(peer)
		}
	case transport.StreamPush:
		r := &pushedReplica{replica: replica{m}}
		n, err := transport.ServePush(s, r)
		if err != nil {
			log.Warn("receiving a push failed", "err", err, "applied", n)
			m.kickPull(peer)
		}
		m.relay(peer, r.docs)
	case transport.StreamAppeal:
		if err := m.serveAppeal(s); err != nil {
			log.Warn("appeal of a device held for revoked", "err", err)
		}
	default:
		s.Close()
	}
}

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
		case <-tick.C():
			for _, device := range m.aliveDevices() {
				m.startPull(device)
			}
		}
	}
}

func (m *Mesh) aliveDevices() []string { return m.members.Alive() }

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
		m.pull(device, addr)
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
// logs how it went.
func (m *Mesh) pull(device, addr string) (transport.SyncStats, error) {
	held, err := m.takePullSlot(device)
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
	stats, err := m.pullFrom(device, addr)
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
func (m *Mesh) takePullSlot(device string) (bool, error) {
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
	case <-m.ctx.Done():
		return false, m.ctx.Err()
	}
}

// pullFrom runs one anti-entropy pull from the device at addr and saves
// where it ended. When the peer's changes since the saved position leave
// the digests different, a pull by buckets follows: whatever positions
// were saved (a namespace that became shared, documents lost here), every
// document of the buckets that differ is compared, so any divergence is
// repaired. The peer's own pull back repairs the other direction.
func (m *Mesh) pullFrom(device, addr string) (transport.SyncStats, error) {
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Minute)
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

// Pull runs one anti-entropy pull from every live peer and waits for it;
// it returns the first error.
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
			if _, err := m.pull(device, addr); err != nil {
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
		case <-tick.C():
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

// position is this change log's epoch and durable end.
func (m *Mesh) position() (transport.Position, error) {
	return transport.Position{Epoch: m.epoch, Seq: m.store.DurableSeq()}, nil
}

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

// maxDeviceName caps the characters of a device's name.
const maxDeviceName = 64

// checkDeviceName checks a device's name: 1 to maxDeviceName printable
// characters (no control or bidi formatting character: every member shows
// it) and no secret. A name holding a secret is refused, as other names of
// a strict syntax are: it is shown to every member, and its owner chooses
// another.
func checkDeviceName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxDeviceName ||
		strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return "", api.Invalidf("device name: use 1 to %d printable characters", maxDeviceName)
	}
	if _, kinds := secrets.Scrub(name); kinds != nil {
		return "", api.Invalidf("the device name holds a secret (%s): choose one without it", strings.Join(kinds, ", "))
	}
	return name, nil
}

// peerDeviceName returns the device name a peer sent when it is a good
// one, else fallback: a peer cannot be asked to choose another.
func peerDeviceName(name, fallback string) string {
	if name, err := checkDeviceName(name); err == nil {
		return name
	}
	return fallback
}

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
