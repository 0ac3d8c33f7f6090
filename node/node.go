package node

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/memmesh/memmesh/brief"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/gitstale"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/search"
	"github.com/memmesh/memmesh/semantic"
	"github.com/memmesh/memmesh/sessions"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/symbols"
	"github.com/memmesh/memmesh/transport"
)

// Config configures a Node. Home is required; everything else has a default.
type Config struct {
	// Home holds the node's identity, data and index.
	Home string
	// Logger receives the node's logs, with their secrets redacted (see
	// secrets.ScrubLogs); nil discards them.
	Logger *slog.Logger
	// Clock is the time every loop of the node and its mesh reads (the
	// indexer, lifecycle, expunger, session ingest, git checks, sync);
	// nil is the system's. Tests advance a clock.Fake, or set the time
	// with clock.WithNow.
	Clock clock.Clock
	// RecencyHalfLife is the age at which the recency boost of a search
	// result halves; 0 means the search package's default.
	RecencyHalfLife time.Duration
	// ConfidenceHalfLife is how long a memory's confidence takes to halve
	// without an update; 0 means 180 days. Evergreen memories do not decay.
	ConfidenceHalfLife time.Duration
	// LifecycleInterval, when positive, makes Start schedule lifecycle
	// passes (RunLifecycle): the first a minute after start, or after
	// the interval if shorter, then one per interval.
	LifecycleInterval time.Duration
	// Mesh, when set, makes Start join the mesh: QUIC endpoint,
	// membership and sync. Without it the node is local only.
	Mesh *mesh.Config
	// MinFreeSpace is the free space, in bytes, kept on the disk of the
	// home: writes that would leave less fail with ErrDiskFull (reads go
	// on), and a quarter of it is held in a ballast file released when
	// the disk fills anyway. 0 means storage.DefaultMinFree (256 MiB).
	MinFreeSpace int64
	// Sessions, when set, makes the node read agents' transcripts: on
	// its schedule once started, and when asked (IngestTranscript).
	Sessions *SessionsConfig
	// Symbols configures the index of working trees' symbols; nil
	// indexes only when asked (IndexSymbols), with the default limits.
	Symbols *SymbolsConfig
	// IndexFlushDelay is how long the search index gathers batches in
	// memory before writing them (search.Options.FlushDelay): 0 means a
	// second, negative writes each batch at once, so that Close and an
	// erasure do not wait for it.
	IndexFlushDelay time.Duration
	// FS is the filesystem of the store (storage.Options.FS); nil means
	// the OS's. Tests wrap it to see or fail its writes and syncs.
	FS vfs.FS
	// GitCheckInterval, when positive, makes Start schedule git checks of
	// every namespace's working trees (CheckGit) each interval; checks
	// asked for in the background (a post-commit hook) run either way.
	GitCheckInterval time.Duration
	// Embedder, when set, makes the vectors of search by meaning (package
	// semantic), kept under the home's vectors folder; nil searches by
	// words alone.
	Embedder embed.Embedder
	// Rand, when set, is where new memory and revision ids, the Automerge
	// actor and the mesh's epochs come from instead of crypto/rand: a
	// simulation seeds it so that a run replays. Production leaves it nil.
	Rand io.Reader
}

func (c *Config) validate() error {
	if c.Home == "" {
		return errors.New("node: config: Home is required")
	}
	if c.RecencyHalfLife < 0 || c.ConfidenceHalfLife < 0 || c.LifecycleInterval < 0 || c.MinFreeSpace < 0 || c.GitCheckInterval < 0 {
		return errors.New("node: config: half-lives, the lifecycle and git check intervals and the free space must not be negative")
	}
	// Checked before anything opens: Start would refuse it.
	if c.Mesh != nil && c.Mesh.Name != "" {
		if _, err := mesh.CheckDeviceName(c.Mesh.Name); err != nil {
			return fmt.Errorf("node: config: %w", err)
		}
	}
	return nil
}

// Node is one memmesh node: storage, search index and the service API.
// Create it with New, then call Start; Close releases everything.
type Node struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	id    transport.Identity
	actor string

	store    *storage.Store
	index    *search.Index
	indexer  *indexer
	mesh     *mesh.Mesh // nil when the node runs without the mesh
	registry *mesh.Registry
	life     lifecycle
	dups     *duplicateLinker
	sessions *sessions.Sessions
	meaning  *semantic.Index // the vectors of search by meaning

	factsMu sync.Mutex
	facts   *graphFacts // the last graphFacts, nil until asked

	symbols *symbols.Index // the symbols of the working trees indexed here
	briefs  *brief.Maker   // the briefs of the namespaces, with what they rank memories by

	locks     [256]sync.Mutex // per-document write locks, striped by id hash
	importMu  sync.Mutex      // one import at a time
	acyclicMu sync.Mutex      // links of acyclic relations check for cycles, then write
	// checked, when set (tests), is called by the writers that look at
	// documents before they take those documents' locks (an import, a new
	// memory's auto-links), between the look and the locks, with the ids
	// of the memories (or settings) they looked at: a test runs a racing
	// write there.
	checked func(ids []string)

	expungeMu   sync.Mutex    // one expunge at a time (see expunge)
	expungeWake chan struct{} // erasures to expunge in the background

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	randMu sync.Mutex // serialises reads of cfg.Rand

	git *gitstale.Checker // the git histories of the namespaces' trees
}

// New opens the node's home: identity, Pebble store and search index. It
// starts nothing; call Start.
func New(cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = slog.New(secrets.ScrubLogs(log.Handler()))
	clk := cfg.Clock
	if clk == nil {
		clk = clock.System()
	}
	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		return nil, fmt.Errorf("node: create home: %w", err)
	}
	id, err := transport.LoadIdentity(cfg.Home)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	store, err := storage.Open(filepath.Join(cfg.Home, "data"), storage.Options{
		Logger:    log.With("component", "storage"),
		MinFree:   cfg.MinFreeSpace,
		TextTerms: textTerms,
		FS:        cfg.FS,
	})
	if err != nil {
		return nil, fmt.Errorf("node: open storage: %w", err)
	}
	index, err := openIndex(filepath.Join(cfg.Home, "index"), search.Options{
		Logger:     log.With("component", "search"),
		HalfLife:   cfg.RecencyHalfLife,
		FlushDelay: cfg.IndexFlushDelay,
	}, log)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("node: open search index: %w", err)
	}
	random := cfg.Rand
	if random == nil {
		random = rand.Reader
	}
	actor, err := crdt.SessionActorID(id.DeviceID, random)
	if err != nil {
		index.Close()
		store.Close()
		return nil, fmt.Errorf("node: %w", err)
	}
	n := &Node{
		cfg:         cfg,
		log:         log.With("component", "node"),
		clock:       clk,
		id:          id,
		actor:       actor,
		store:       store,
		index:       index,
		expungeWake: make(chan struct{}, 1),
		dups:        newDuplicateLinker(),
	}
	if n.life.reads, err = n.loadReads(); err != nil {
		index.Close()
		store.Close()
		return nil, fmt.Errorf("node: %w", err)
	}
	var symbolLimits symbols.Limits
	if cfg.Symbols != nil {
		symbolLimits = cfg.Symbols.Limits
	}
	n.symbols = symbols.NewIndex(store, symbolLimits)
	n.git = gitstale.New(gitstale.Config{Home: cfg.Home, Store: store, Symbols: n.symbols, Namespace: NormalizeNamespace, Clock: clk, Logger: n.log})
	n.sessions = sessions.New(cfg.Sessions, sessionsHost{n}, store, id.DeviceID, clk, n.log)
	n.briefs = brief.New(brief.Config{Store: store, Host: briefHost{n}, Device: id.DeviceID, HalfLife: n.confidenceHalfLife(), Now: clk.Now, Logger: n.log})
	n.meaning = semantic.New(semantic.Config{Dir: filepath.Join(cfg.Home, "vectors"), Embedder: cfg.Embedder, Source: semanticSource{n}, Embedded: n.linkSimilar, Clock: clk, Logger: log.With("component", "semantic")})
	n.indexer = newIndexer(store, index, clk, log.With("component", "indexer"))
	n.indexer.applied = n.embedChanged
	n.indexer.indexed = func(m *model.Memory) {
		n.life.changed(m)
		n.dups.note(m)
	}
	var nonces io.Reader
	if cfg.Rand != nil {
		nonces = lockedReader{&n.randMu, cfg.Rand}
	}
	if n.registry, err = mesh.NewRegistry(id.DeviceID, n.actor, meshHost{n}, store, clk, nonces); err != nil {
		index.Close()
		store.Close()
		return nil, fmt.Errorf("node: %w", err)
	}
	return n, nil
}

// now is the time as the node's clock reads it.
func (n *Node) now() time.Time { return n.clock.Now() }

// openIndex opens the search index, rebuilding it from scratch when it
// cannot be opened: the index holds nothing that storage does not.
func openIndex(dir string, opts search.Options, log *slog.Logger) (*search.Index, error) {
	index, err := search.Open(dir, opts)
	if err == nil {
		return index, nil
	}
	log.Warn("search index unreadable; rebuilding it from storage", "dir", dir, "err", err)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	return search.Open(dir, opts)
}

// Start runs the node's background work: the search indexer, which first
// catches up with every change the index has not seen (after a crash, the
// ones between the index's watermark and storage), the linking of copies of
// one text that machines captured apart, and the mesh when Config.Mesh is
// set.
func (n *Node) Start(ctx context.Context) error {
	ctx, n.cancel = context.WithCancel(ctx)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.indexer.run(ctx)
	}()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.runExpunger(ctx)
	}()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.meaning.Run(ctx)
	}()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.runDuplicateLinker(ctx)
	}()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.briefs.Sync(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("the brief's index will be built when a brief is asked for", "err", err)
		}
	}()
	if s := n.cfg.Sessions; s != nil {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.sessions.Run(ctx, cmp.Or(s.Interval, time.Minute))
		}()
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.git.Run(ctx, n.cfg.GitCheckInterval)
	}()
	if n.cfg.LifecycleInterval > 0 {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.runLifecycle(ctx, n.cfg.LifecycleInterval)
		}()
	}
	if s := n.cfg.Symbols; s != nil && s.Interval > 0 {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.runSymbols(ctx, s.Interval)
		}()
	}
	if n.cfg.Mesh != nil {
		if err := n.startMesh(ctx, *n.cfg.Mesh); err != nil {
			return fmt.Errorf("node: mesh: %w", err)
		}
	}
	return nil
}

// Close leaves the mesh, stops background work and closes the index and
// storage. Every acknowledged write is already durable; Close loses
// nothing. Calling it again returns the first call's result.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var err error
		if n.mesh != nil {
			err = n.mesh.Stop()
		}
		n.expungeBeforeClose()
		if n.cancel != nil {
			n.cancel()
		}
		n.wg.Wait()
		n.closeErr = errors.Join(err, n.meaning.Close(), n.index.Close(), n.store.Close())
	})
	return n.closeErr
}

// changed tells the indexer and the mesh's pusher that new changes are
// durable.
func (n *Node) changed() {
	n.indexer.notify()
	if n.mesh != nil {
		n.mesh.Notify()
	}
}

// newID returns a new memory or revision id.
func (n *Node) newID() string {
	if n.cfg.Rand == nil {
		return crdt.NewID()
	}
	n.randMu.Lock()
	defer n.randMu.Unlock()
	return crdt.NewIDFrom(n.cfg.Rand)
}

// DeviceID is this machine's device id.
func (n *Node) DeviceID() string { return n.id.DeviceID }

// lock takes the write lock of one document and returns its unlock,
// which may be called more than once (see commitUnlock).
func (n *Node) lock(id string) func() {
	m := &n.locks[lockStripe(id)]
	m.Lock()
	return sync.OnceFunc(m.Unlock)
}

// lockAll takes the write locks of several documents, in stripe order so
// that two callers cannot deadlock, and returns their unlock, which may
// be called more than once.
func (n *Node) lockAll(ids []string) func() {
	var take [len(Node{}.locks)]bool
	for _, id := range ids {
		take[lockStripe(id)] = true
	}
	for i := range take {
		if take[i] {
			n.locks[i].Lock()
		}
	}
	return sync.OnceFunc(func() {
		for i := range take {
			if take[i] {
				n.locks[i].Unlock()
			}
		}
	})
}

// commitUnlock commits recs, calls unlock (the writer's locks of their
// documents) once the batch is applied, and returns once it is durable:
// the order of a document's versions is kept, and other writes of the
// same lock stripes do not wait for this one's fsync.
func (n *Node) commitUnlock(unlock func(), recs ...storage.Record) error {
	p, err := n.store.CommitNoSyncWait(recs...)
	unlock()
	if err != nil {
		return err
	}
	_, err = p.SyncWait()
	return err
}

// justChecked calls the checked hook (tests) with the memory ids a writer
// looked at before taking their locks.
func (n *Node) justChecked(ids []string) {
	if n.checked != nil {
		n.checked(ids)
	}
}

func lockStripe(id string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32() % uint32(len(Node{}.locks))
}
