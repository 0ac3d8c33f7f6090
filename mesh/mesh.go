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
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/memberlist"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/clock"
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
	Clock clock.Clock
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
		d.Clock = clock.System()
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
	clock    clock.Clock
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
	name, err := CheckDeviceName(cfg.Name)
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

// position is this change log's epoch and durable end.
func (m *Mesh) position() (transport.Position, error) {
	return transport.Position{Epoch: m.epoch, Seq: m.store.DurableSeq()}, nil
}

// maxDeviceName caps the characters of a device's name.
const maxDeviceName = 64

// CheckDeviceName checks a device's name, and returns it trimmed: 1 to maxDeviceName printable
// characters (no control or bidi formatting character: every member shows
// it) and no secret. A name holding a secret is refused, as other names of
// a strict syntax are: it is shown to every member, and its owner chooses
// another.
func CheckDeviceName(name string) (string, error) {
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
	if name, err := CheckDeviceName(name); err == nil {
		return name
	}
	return fallback
}
