package mcp

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/internal/testwait"
)

// countedServer returns an MCP server that counts its live sessions, as
// the transport registers and unregisters them.
func countedServer() (*server.MCPServer, *atomic.Int64) {
	var live atomic.Int64
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, _ server.ClientSession) { live.Add(1) })
	hooks.AddOnUnregisterSession(func(_ context.Context, _ server.ClientSession) { live.Add(-1) })
	return server.NewMCPServer("sessions-test", "1", server.WithHooks(hooks)), &live
}

// sessionCall sends an httpMethod request with body to url's MCP
// endpoint, with the token, in session id ("" for none), and returns the
// status and the session id of the answer.
func sessionCall(t *testing.T, url, httpMethod, id, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(httpMethod, url+HTTPPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set(server.HeaderKeySessionID, id)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if httpMethod != http.MethodGet || resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, resp.Header.Get(server.HeaderKeySessionID)
}

const pingBody = `{"jsonrpc":"2.0","id":7,"method":"ping"}`

// newSession starts a session and returns its id.
func newSession(t *testing.T, url string) string {
	t.Helper()
	status, id := sessionCall(t, url, http.MethodPost, "", initializeBody)
	if status != http.StatusOK || !strings.HasPrefix(id, sessionIDPrefix) {
		t.Fatalf("initialize: %d, session %q", status, id)
	}
	return id
}

// TestHTTPSessionsCapped: past the cap, a new session drops the least
// recently used one, whose client gets 404 (and starts anew) and whose
// state the transport frees; the others go on.
func TestHTTPSessionsCapped(t *testing.T) {
	s, live := countedServer()
	var h *HTTPServer
	url := serveHTTP(t, s, func(hs *HTTPServer) { h, hs.sessions.max = hs, 3 })
	s1, s2, s3 := newSession(t, url), newSession(t, url), newSession(t, url)
	if status, _ := sessionCall(t, url, http.MethodPost, s1, pingBody); status != http.StatusOK {
		t.Fatalf("ping s1: %d", status)
	}
	s4, s5 := newSession(t, url), newSession(t, url) // drop s2, then s3
	for _, tc := range []struct {
		name, id string
		want     int
	}{{"s1", s1, 200}, {"s2", s2, 404}, {"s3", s3, 404}, {"s4", s4, 200}, {"s5", s5, 200}} {
		if status, _ := sessionCall(t, url, http.MethodPost, tc.id, pingBody); status != tc.want {
			t.Errorf("ping %s: %d, want %d", tc.name, status, tc.want)
		}
	}
	if n := h.sessions.len(); n != 3 {
		t.Errorf("%d sessions kept, want 3", n)
	}
	testwait.Until(t, "the transport holds 3 sessions", func() bool { return live.Load() == 3 })
}

// TestHTTPSessionsExpire: a session idle for the TTL is dropped (404,
// its state freed); one in use lives on.
func TestHTTPSessionsExpire(t *testing.T) {
	s, live := countedServer()
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	url := serveHTTP(t, s, func(hs *HTTPServer) { hs.sessions.now = clock })
	used, idle := newSession(t, url), newSession(t, url)
	testwait.Until(t, "the transport holds 2 sessions", func() bool { return live.Load() == 2 })
	for range 2 {
		advance(sessionIdleTTL - time.Second)
		if status, _ := sessionCall(t, url, http.MethodPost, used, pingBody); status != http.StatusOK {
			t.Fatalf("a session in use: %d", status)
		}
	}
	if status, _ := sessionCall(t, url, http.MethodPost, idle, pingBody); status != http.StatusNotFound {
		t.Fatalf("a session idle past the TTL: %d, want 404", status)
	}
	testwait.Until(t, "the transport holds 1 session", func() bool { return live.Load() == 1 })
	advance(sessionIdleTTL)
	if status, _ := sessionCall(t, url, http.MethodPost, used, pingBody); status != http.StatusNotFound {
		t.Fatalf("the other session, idle past the TTL: %d, want 404", status)
	}
	testwait.Until(t, "the transport holds no session", func() bool { return live.Load() == 0 })
}

// TestHTTPStreamNeedsALiveSession: a GET stream is opened only for a live
// session, never for an id the client made up or one that ended.
func TestHTTPStreamNeedsALiveSession(t *testing.T) {
	s, _ := countedServer()
	url := serveHTTP(t, s, nil)
	id := newSession(t, url)
	if status, _ := sessionCall(t, url, http.MethodGet, sessionIDPrefix+"made-up", ""); status != http.StatusNotFound {
		t.Errorf("GET with a made-up session: %d, want 404", status)
	}
	if status, _ := sessionCall(t, url, http.MethodDelete, id, ""); status != http.StatusOK {
		t.Fatalf("DELETE: %d", status)
	}
	if status, _ := sessionCall(t, url, http.MethodGet, id, ""); status != http.StatusNotFound {
		t.Errorf("GET with an ended session: %d, want 404", status)
	}
}
