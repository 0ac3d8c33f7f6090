package mcp

import (
	"container/list"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Bounds of MCP's HTTP sessions. Every agent holds one; a client that
// starts sessions and never ends them (or many clients) cannot grow the
// daemon past maxHTTPSessions (each costs tens of KB in mcp-go). A client
// whose session was dropped gets 404 and, as the protocol says, starts a
// new one.
const (
	maxHTTPSessions = 256
	sessionIdleTTL  = 24 * time.Hour
)

// sessionIDPrefix starts every session id (as mcp-go's own ids do).
const sessionIDPrefix = "mcp-session-"

// errNoSession is Validate's answer for an id that is not a live session;
// mcp-go answers it with 404.
var errNoSession = errors.New("mcp: no such session: unknown, ended, expired or dropped")

// sessions mints and keeps the ids of MCP's HTTP sessions, as mcp-go's
// SessionIdManager: at most max, the least recently used dropped past it,
// and none idle for ttl or longer. drop frees what the transport holds for
// a session this drops (HTTPServer sends it the DELETE a client would).
// An ended session leaves nothing behind.
type sessions struct {
	max  int
	ttl  time.Duration
	now  func() time.Time
	drop func(id string)

	mu   sync.Mutex
	lru  *list.List               // of *sessionEntry, most recently used first
	byID map[string]*list.Element // into lru
}

// sessionEntry is one live session.
type sessionEntry struct {
	id   string
	used time.Time
}

var _ server.SessionIdManager = (*sessions)(nil)

func newSessions(max int, ttl time.Duration) *sessions {
	return &sessions{max: max, ttl: ttl, now: time.Now, drop: func(string) {}, lru: list.New(), byID: map[string]*list.Element{}}
}

// Generate starts a session, dropping the expired ones and, at the cap,
// the least recently used.
func (s *sessions) Generate() string {
	id := sessionIDPrefix + strings.ToLower(rand.Text())
	s.mu.Lock()
	now := s.now()
	gone := s.expireLocked(now)
	for s.lru.Len() >= s.max {
		gone = append(gone, s.removeLocked(s.lru.Back()))
	}
	s.byID[id] = s.lru.PushFront(&sessionEntry{id: id, used: now})
	s.mu.Unlock()
	s.dropAll(gone)
	return id
}

// Validate accepts a live session's id and marks the session used.
func (s *sessions) Validate(id string) (isTerminated bool, err error) {
	s.mu.Lock()
	now := s.now()
	gone := s.expireLocked(now)
	el, ok := s.byID[id]
	if ok {
		el.Value.(*sessionEntry).used = now
		s.lru.MoveToFront(el)
	}
	s.mu.Unlock()
	s.dropAll(gone)
	if !ok {
		return false, errNoSession
	}
	return false, nil
}

// Terminate ends a session (a client's DELETE, or one this dropped).
func (s *sessions) Terminate(id string) (isNotAllowed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byID[id]; ok {
		s.removeLocked(el)
	}
	return false, nil
}

// len is how many sessions are live.
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// expireLocked removes the sessions idle for ttl or longer (the least
// recently used are at the back) and returns their ids.
func (s *sessions) expireLocked(now time.Time) []string {
	var gone []string
	for el := s.lru.Back(); el != nil && now.Sub(el.Value.(*sessionEntry).used) >= s.ttl; el = s.lru.Back() {
		gone = append(gone, s.removeLocked(el))
	}
	return gone
}

func (s *sessions) removeLocked(el *list.Element) string {
	id := s.lru.Remove(el).(*sessionEntry).id
	delete(s.byID, id)
	return id
}

func (s *sessions) dropAll(ids []string) {
	for _, id := range ids {
		s.drop(id)
	}
}

// knownSession answers 404 to a GET or DELETE that names a session that
// is not live: mcp-go does not check the id of a GET, and would open a
// stream, with a session of its own, for any id.
func (s *sessions) knownSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(server.HeaderKeySessionID); id != "" && r.Method != http.MethodPost {
			if _, err := s.Validate(id); err != nil {
				http.Error(w, "Not Found: no such session (unknown, ended or expired): start a new one with initialize", http.StatusNotFound)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// forgetSession frees what transport holds for session id, with the
// DELETE its client would send.
func forgetSession(transport http.Handler, id string) {
	req, _ := http.NewRequest(http.MethodDelete, HTTPPath, nil)
	req.Header.Set(server.HeaderKeySessionID, id)
	transport.ServeHTTP(&discardResponse{header: http.Header{}}, req)
}

// discardResponse takes the transport's answers to forgetSession.
type discardResponse struct{ header http.Header }

func (d *discardResponse) Header() http.Header         { return d.header }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}
