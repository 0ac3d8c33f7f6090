package localhttp

import (
	"container/list"
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bound the connections of a listener, so that another user of the
// machine cannot take the daemon's file descriptors (every connection is
// one), and the owner's clients still get in while someone tries.
type Limits struct {
	// Conns is how many connections may be open at once. Past it, a new
	// connection sheds an anonymous one, or is closed when all are
	// authenticated.
	Conns int
	// Anonymous is how many of them may have had no authenticated request
	// yet; a new one past it sheds the oldest anonymous connection of the
	// user who holds the most.
	Anonymous int
	// AnonymousPerUser is how many anonymous connections one local user
	// (the owner of the peer's socket) may hold; a new one past it sheds
	// that user's oldest. Another user's flood therefore never sheds the
	// owner's connections.
	AnonymousPerUser int
}

// DefaultLimits are the daemon's: its descriptors (20,000) stay far
// beyond reach, and a dashboard (a browser opens about 6 connections) and
// many agents fit.
var DefaultLimits = Limits{Conns: 512, Anonymous: 128, AnonymousPerUser: 32}

// unknownUser is the user of connections whose owner is unknown (the
// lookup failed, or is not done outside Linux).
const unknownUser = -1

// Warnings about shed connections and refused requests are spaced: a
// flood must not fill the daemon's log.
const (
	shedLogEvery    = time.Minute
	refusedLogEvery = time.Second
)

// conns tracks a server's open connections and applies its Limits. Its
// open and state methods are the server's ConnContext and ConnState.
type conns struct {
	limits Limits
	uidOf  func(net.Conn) (uint32, bool)
	log    *slog.Logger
	now    func() time.Time

	mu         sync.Mutex
	all        map[net.Conn]*conn
	anon       map[int64]*list.List // anonymous connections by user, oldest first
	nAnon      int
	seq        uint64
	shedLog    logEvery
	refusedLog logEvery
}

// logEvery says when to log one of many events: the first, then at most
// one every interval, with the number of events since the last line.
type logEvery struct {
	interval time.Duration
	n        int
	last     time.Time
}

// note counts an event at now and returns how many the line to log now
// stands for, or 0 when no line is due.
func (l *logEvery) note(now time.Time) int {
	l.n++
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		return 0
	}
	n := l.n
	l.n, l.last = 0, now
	return n
}

// conn is one tracked connection.
type conn struct {
	nc     net.Conn
	owner  *conns
	uid    int64 // unknownUser when unknown
	seq    uint64
	elem   *list.Element // in its user's anonymous list; nil once authenticated
	authed atomic.Bool
}

type connKey struct{}

func newConns(limits Limits, uidOf func(net.Conn) (uint32, bool), log *slog.Logger, now func() time.Time) *conns {
	return &conns{
		limits: limits, uidOf: uidOf, log: log, now: now,
		all: map[net.Conn]*conn{}, anon: map[int64]*list.List{},
		shedLog: logEvery{interval: shedLogEvery}, refusedLog: logEvery{interval: refusedLogEvery},
	}
}

// open admits a new connection (ConnContext): it finds its user, sheds
// another connection or closes this one as Limits say, and returns the
// context of its requests.
func (cs *conns) open(ctx context.Context, nc net.Conn) context.Context {
	c := &conn{nc: nc, owner: cs, uid: unknownUser}
	if uid, ok := cs.uidOf(nc); ok {
		c.uid = int64(uid)
	}
	shed, ok := cs.admit(c)
	if shed != nil {
		shed.Close()
	}
	if !ok {
		nc.Close()
	}
	return context.WithValue(ctx, connKey{}, c)
}

// admit adds c, and returns the connection to shed for it, if any, or
// false when c must be closed instead.
func (cs *conns) admit(c *conn) (net.Conn, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var victim *conn
	if l := cs.anon[c.uid]; l != nil && l.Len() >= cs.limits.AnonymousPerUser {
		victim = l.Front().Value.(*conn)
	} else if cs.nAnon >= cs.limits.Anonymous || len(cs.all) >= cs.limits.Conns {
		if victim = cs.mostAnonymous(); victim == nil {
			return nil, false // every connection is authenticated
		}
	}
	if victim != nil {
		cs.removeLocked(victim)
		cs.noteShedLocked(victim)
	}
	cs.seq++
	c.seq = cs.seq
	cs.all[c.nc] = c
	l := cs.anon[c.uid]
	if l == nil {
		l = list.New()
		cs.anon[c.uid] = l
	}
	c.elem = l.PushBack(c)
	cs.nAnon++
	if victim == nil {
		return nil, true
	}
	return victim.nc, true
}

// mostAnonymous returns the oldest anonymous connection of the user who
// holds the most (the older one on a tie), or nil when there is none.
func (cs *conns) mostAnonymous() *conn {
	var best *conn
	var most int
	for _, l := range cs.anon {
		first := l.Front().Value.(*conn)
		if l.Len() > most || (l.Len() == most && first.seq < best.seq) {
			best, most = first, l.Len()
		}
	}
	return best
}

// removeLocked forgets c.
func (cs *conns) removeLocked(c *conn) {
	if cs.all[c.nc] != c {
		return
	}
	delete(cs.all, c.nc)
	cs.leaveAnonymousLocked(c)
}

// leaveAnonymousLocked takes c out of its user's anonymous connections.
func (cs *conns) leaveAnonymousLocked(c *conn) {
	if c.elem == nil {
		return
	}
	l := cs.anon[c.uid]
	l.Remove(c.elem)
	c.elem = nil
	cs.nAnon--
	if l.Len() == 0 {
		delete(cs.anon, c.uid)
	}
}

// noteShedLocked counts a shed connection and warns, at most once every
// shedLogEvery.
func (cs *conns) noteShedLocked(c *conn) {
	if n := cs.shedLog.note(cs.now()); n > 0 {
		cs.log.Warn("closed connections that sent no authenticated request: too many were open", "closed", n, "last_uid", c.uid, "limits", cs.limits)
	}
}

// noteRefused counts a refused request and returns how many the line to
// log now stands for (0: none is due).
func (cs *conns) noteRefused() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.refusedLog.note(cs.now())
}

// state forgets a connection once the server is done with it (ConnState).
func (cs *conns) state(nc net.Conn, s http.ConnState) {
	if s != http.StateClosed && s != http.StateHijacked {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c := cs.all[nc]; c != nil {
		cs.removeLocked(c)
	}
}

// authenticate takes c out of the anonymous connections for good.
func (cs *conns) authenticate(c *conn) {
	if c.authed.Load() {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c.authed.Store(true)
	cs.leaveAnonymousLocked(c)
}

// connOf returns the tracked connection r arrived on, or nil when r's
// server is not NewServer's.
func connOf(r *http.Request) *conn {
	c, _ := r.Context().Value(connKey{}).(*conn)
	return c
}
