package gitstale

import (
	"log/slog"
	"sync"

	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/symbols"
)

// Store is the local data (never replicated) the checks keep the trees,
// their states and their files' histories in.
type Store interface {
	GetLocal(key string) ([]byte, error)
	PutLocal(key string, value []byte) error
	PutLocalDurable(key string, value []byte) error
	ScanLocal(prefix string, fn func(key string, value []byte) error) error
	DeleteLocalPrefix(prefix string) error
}

var _ Store = (*storage.Store)(nil)

// Symbols is the symbol index, which says where a symbol that left the
// files a memory names went.
type Symbols interface {
	Where(name, ns string) ([]symbols.Location, error)
}

var _ Symbols = (*symbols.Index)(nil)

// Config is what a Checker works with.
type Config struct {
	// Home is the memmesh home, whose project mappings (maps.toml) also
	// give a namespace its trees.
	Home    string
	Store   Store
	Symbols Symbols
	// Namespace checks a namespace as the node's service does.
	Namespace func(ns string) (string, error)
	// Clock schedules the checks and dates them.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Checker reads and keeps the git histories of the trees of every
// namespace, one check at a time.
type Checker struct {
	home      string
	store     Store
	symbols   Symbols
	namespace func(ns string) (string, error)
	clock     clock.Clock
	log       *slog.Logger
	mu        sync.Mutex  // one check at a time
	queue     chan string // roots of trees to check in the background
}

// New returns a Checker; Run runs its schedule.
func New(cfg Config) *Checker {
	return &Checker{home: cfg.Home, store: cfg.Store, symbols: cfg.Symbols, namespace: cfg.Namespace, clock: cfg.Clock, log: cfg.Logger,
		queue: make(chan string, maxQueuedGitChecks)}
}

// Reason is one reason a memory may no longer hold: the rule behind it
// (api.Stale...) and its text for people.
type Reason struct{ Rule, Text string }

// WithoutLines is a file artefact (file:PATH:12-40) without its lines.
func WithoutLines(artefact string) string { return linesSuffix.ReplaceAllString(artefact, "") }
