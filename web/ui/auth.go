package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/memmesh/memmesh/internal/localhttp"
	"github.com/memmesh/memmesh/web"
)

// Lifetimes and bounds of login codes and sessions.
const (
	codeTTL    = 60 * time.Second
	sessionTTL = 12 * time.Hour
	maxCodes   = 16 // codes not yet used; a new one drops the oldest
	csrfHeader = "X-CSRF-Token"
)

// cookiePrefix starts the session cookie's name, which ends with the
// listener's port: a browser sends its cookies for 127.0.0.1 to every
// port, so two daemons' dashboards would otherwise overwrite each other's.
const cookiePrefix = "memmesh_session_"

// auth holds the one-time login codes and the sessions, in memory only.
// Codes and session ids are kept as their SHA-256, so that a lookup's
// timing says nothing of them.
type auth struct {
	token   []byte
	max     int
	now     func() time.Time
	peerUID func(*http.Request) (uint32, bool)
	log     *slog.Logger

	mu       sync.Mutex
	codes    map[[32]byte]time.Time // expiry
	sessions map[[32]byte]*session
}

// session is a logged-in browser. It is bound to what the browser's
// login came through: the listener's port, and the local user that owns
// the browser's end of the connection. A browser sends the cookie to any
// web server on 127.0.0.1, another user's too; that user cannot replay
// it.
type session struct {
	csrf    string
	expires time.Time
	peer
}

// peer is who a request came from, as far as the listener can tell.
type peer struct {
	port     string // the listener's
	uid      uint32 // the owner of the client's socket, when uidKnown
	uidKnown bool
}

func newAuth(token string, max int, now func() time.Time, peerUID func(*http.Request) (uint32, bool), log *slog.Logger) *auth {
	return &auth{token: []byte(token), max: max, now: now, peerUID: peerUID, log: log, codes: map[[32]byte]time.Time{}, sessions: map[[32]byte]*session{}}
}

// peerOf returns who r came from.
func (a *auth) peerOf(r *http.Request) peer {
	p := peer{port: listenerPort(r)}
	p.uid, p.uidKnown = a.peerUID(r)
	return p
}

// listenerPort returns the port of the listener r arrived on ("" when
// unknown).
func listenerPort(r *http.Request) string {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return ""
	}
	_, port, _ := net.SplitHostPort(local.String())
	return port
}

// cookieName is the name of the session cookie on r's listener.
func cookieName(r *http.Request) string { return cookiePrefix + listenerPort(r) }

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func key(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// newCode returns a new one-time login code and its expiry.
func (a *auth) newCode() (string, time.Time) {
	code := randomToken()
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	expires := now.Add(codeTTL)
	for k, exp := range a.codes {
		if !now.Before(exp) {
			delete(a.codes, k)
		}
	}
	if len(a.codes) >= maxCodes {
		oldest(a.codes, func(t time.Time) time.Time { return t })
	}
	a.codes[key(code)] = expires
	return code, expires
}

// oldest deletes the entry of m that expires first.
func oldest[V any](m map[[32]byte]V, expiry func(V) time.Time) {
	var first [32]byte
	var at time.Time
	for k, v := range m {
		if e := expiry(v); at.IsZero() || e.Before(at) {
			first, at = k, e
		}
	}
	delete(m, first)
}

// redeem uses code once and returns a new session id for a browser at
// p, or false when the code is unknown, used or expired.
func (a *auth) redeem(code string, p peer) (string, *session, bool) {
	if code == "" {
		return "", nil, false
	}
	k := key(code)
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.codes[k]
	delete(a.codes, k)
	now := a.now()
	if !ok || !now.Before(exp) {
		return "", nil, false
	}
	for k, s := range a.sessions {
		if !now.Before(s.expires) {
			delete(a.sessions, k)
		}
	}
	if len(a.sessions) >= a.max {
		oldest(a.sessions, func(s *session) time.Time { return s.expires })
	}
	id := randomToken()
	s := &session{csrf: randomToken(), expires: now.Add(sessionTTL), peer: p}
	a.sessions[key(id)] = s
	return id, s, true
}

// session returns the live session of r's cookie, when r comes from the
// browser that logged in. A session's cookie presented by another local
// user was taken from the browser (by a web server of that user's on
// another port): the session ends.
func (a *auth) session(r *http.Request) (*session, bool) {
	c, err := r.Cookie(cookieName(r))
	if err != nil || c.Value == "" {
		return nil, false
	}
	k := key(c.Value)
	p := a.peerOf(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[k]
	switch {
	case !ok || s.port != p.port:
		return nil, false
	case s.uidKnown != p.uidKnown || s.uid != p.uid:
		delete(a.sessions, k)
		a.log.Warn("ended a dashboard session: its cookie came from another local user", "uid", p.uid, "uid_known", p.uidKnown, "remote", r.RemoteAddr)
		return nil, false
	case !a.now().Before(s.expires):
		delete(a.sessions, k)
		return nil, false
	}
	return s, true
}

// end ends r's session.
func (a *auth) end(r *http.Request) {
	if c, err := r.Cookie(cookieName(r)); err == nil {
		a.mu.Lock()
		delete(a.sessions, key(c.Value))
		a.mu.Unlock()
	}
}

// bearer reports whether r carries the HTTP token.
func (a *auth) bearer(r *http.Request) bool {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return len(a.token) > 0 && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), a.token) == 1
}

// identify tells the listener that a request with the bearer token or a
// live session is authenticated (localhttp.Authenticated), whatever it
// asks for: its connection may then serve the browser's next requests.
func (a *auth) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := a.session(r); ok || a.bearer(r) {
			localhttp.Authenticated(w, r)
		}
		next.ServeHTTP(w, r)
	})
}

// apiOnly lets through an API call with the bearer token, or with a
// session and, unless it only reads, the session's CSRF token and no
// foreign Origin. It refuses others itself (401, 403; see
// localhttp.Refuse).
func (a *auth) apiOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.bearer(r) {
			next.ServeHTTP(w, r)
			return
		}
		s, ok := a.session(r)
		if !ok {
			localhttp.Refuse(w, r)
			writeError(w, http.StatusUnauthorized, "unauthorized", "no session: open the dashboard with 'memmesh ui'")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := checkWrite(r, s); err != nil {
				localhttp.Refuse(w, r)
				writeError(w, http.StatusForbidden, "forbidden", err.Error())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkWrite checks a write's CSRF token and Origin.
func checkWrite(r *http.Request, s *session) error {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(s.csrf)) != 1 {
		return fmt.Errorf("missing or wrong %s header", csrfHeader)
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		return fmt.Errorf("origin %q is not the dashboard's", o)
	}
	return nil
}

// login exchanges a one-time code for a session cookie, or says how to get
// one.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	id, _, ok := h.auth.redeem(r.URL.Query().Get("code"), h.auth.peerOf(r))
	if !ok {
		if r.URL.Query().Has("code") {
			localhttp.LogRefused(h.log, r, "refused a dashboard login code: unknown, used or expired", "remote", r.RemoteAddr)
		}
		f := h.static["login.html"]
		w.Header().Set("Content-Type", f.ctyp)
		w.WriteHeader(http.StatusUnauthorized)
		w.Write(f.data)
		return
	}
	localhttp.Authenticated(w, r)
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName(r),
		Value:    id,
		Path:     "/",
		MaxAge:   int(sessionTTL / time.Second),
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session and clears its cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	h.auth.end(r)
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// writeError answers an error as package web does.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	web.WriteJSON(w, status, map[string]string{"error": msg, "code": code})
}
