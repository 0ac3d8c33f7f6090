package localhttp

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts and bounds of the listener. No server-wide read or write
// timeout: an authenticated event stream (MCP's or the dashboard's) stays
// open as long as its client.
const (
	// HeaderTimeout bounds a request's headers, from the connection's
	// start or, on a kept-alive connection, from the request's first byte.
	HeaderTimeout = 10 * time.Second
	// BodyTimeout bounds a request's body, from the end of its headers:
	// the handler that reads an authenticated body lifts the deadline at
	// its end (so that a long answer may last).
	BodyTimeout = 30 * time.Second
	// IdleTimeout closes an authenticated connection that sends nothing.
	IdleTimeout = 2 * time.Minute
	// RefusedBody and RefuseTimeout bound what a refused request may
	// still send: a client's small body is read, so that it gets its
	// answer cleanly, and nothing more.
	RefusedBody   = 8 << 10
	RefuseTimeout = time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10
)

// serverConfig is what NewServer fixes and tests vary.
type serverConfig struct {
	limits        Limits
	uidOf         func(net.Conn) (uint32, bool)
	headerTimeout time.Duration
	bodyTimeout   time.Duration
	now           func() time.Time // of the log's spacing
}

// NewServer returns an http.Server for h with the listener's timeouts and
// DefaultLimits, logging its errors to log. Every connection it accepts is
// tracked (see the package comment); h's handlers call Authenticated and
// Refuse.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return newServer(h, log, serverConfig{limits: DefaultLimits, uidOf: peerUID, headerTimeout: HeaderTimeout, bodyTimeout: BodyTimeout, now: time.Now})
}

func newServer(h http.Handler, log *slog.Logger, cfg serverConfig) *http.Server {
	cs := newConns(cfg.limits, cfg.uidOf, log, cfg.now)
	return &http.Server{
		Handler:           guard(h, cfg.bodyTimeout),
		ReadHeaderTimeout: cfg.headerTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnContext:       cs.open,
		ConnState:         cs.state,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// guard puts a deadline on every request's body and closes an anonymous
// connection after its one request, without reading what is left of its
// body: a client that trickles one cannot hold the connection.
func guard(next http.Handler, bodyTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := connOf(r)
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(bodyTimeout))
		if !c.authenticated() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
		if !c.authenticated() {
			rc.SetReadDeadline(time.Now())
		}
	})
}

// authenticated reports whether a request on c proved who sent it.
func (c *conn) authenticated() bool { return c != nil && c.authed.Load() }

// Authenticated records that r proved who sent it (the bearer token, a
// dashboard session): its connection is no longer anonymous and may
// serve more requests. When r has no body its read deadline is lifted, so
// that an event stream lasts; a body keeps its deadline, which the
// handler that reads it lifts at its end.
func Authenticated(w http.ResponseWriter, r *http.Request) {
	if c := connOf(r); c != nil {
		c.owner.authenticate(c)
	}
	if w.Header().Get("Connection") == "close" {
		w.Header().Del("Connection")
	}
	if r.Body == http.NoBody {
		http.NewResponseController(w).SetReadDeadline(time.Time{})
	}
}

// Refuse readies w to refuse r (the caller then writes the answer, 401
// or 403): the connection is closed after the answer, and at most
// RefusedBody bytes of r's body are read, within RefuseTimeout, so that a
// refused client cannot hold the connection by trickling a body.
func Refuse(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	rc := http.NewResponseController(w)
	if r.Body != nil && r.Body != http.NoBody && r.Header.Get("Expect") == "" {
		rc.SetReadDeadline(time.Now().Add(RefuseTimeout))
		io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, RefusedBody))
	}
	rc.SetReadDeadline(time.Now())
}

// LogRefused logs, as a warning, that r was refused. On NewServer's
// server it logs the first refusal and then at most one a second, with the
// number of requests refused since the last line ("refused"): a flood
// must not fill the daemon's log.
func LogRefused(log *slog.Logger, r *http.Request, msg string, args ...any) {
	c := connOf(r)
	if c == nil {
		log.Warn(msg, args...)
		return
	}
	if n := c.owner.noteRefused(); n > 0 {
		log.Warn(msg, append(args, "refused", n)...)
	}
}

// PeerUID returns the local user that owns the other end of r's
// connection, when NewServer's server could find it (on Linux).
func PeerUID(r *http.Request) (uint32, bool) {
	c := connOf(r)
	if c == nil || c.uid == unknownUser {
		return 0, false
	}
	return uint32(c.uid), true
}
