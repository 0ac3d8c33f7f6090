package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/node"
)

// The node is what the dashboard serves.
var _ Service = (*node.Node)(nil)

const testToken = "test-token-0123456789abcdefghijklmnop"

// clock is a settable clock for codes and sessions.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startNode starts a real node, stopped when the test ends.
func startNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	cfg.Home = t.TempDir()
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// dash is a dashboard served on loopback for a test.
type dash struct {
	t     *testing.T
	srv   *httptest.Server
	h     *Handler
	clock *clock
	n     *node.Node
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func newDash(t *testing.T, n *node.Node, opts Options) *dash {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	opts.Token, opts.Now, opts.Logger = testToken, c.now, testLogger(t)
	opts.PollInterval = 50 * time.Millisecond
	opts.PeerInterval = 200 * time.Millisecond
	h, err := New(n, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	srv.Config.RegisterOnShutdown(h.Close)
	t.Cleanup(func() { h.Close(); srv.Close() })
	return &dash{t: t, srv: srv, h: h, clock: c, n: n}
}

// port is the port the dashboard listens on.
func (d *dash) port() string {
	_, port, _ := net.SplitHostPort(d.srv.Listener.Addr().String())
	return port
}

// client returns an HTTP client that keeps cookies and does not follow
// redirects.
func (d *dash) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login logs a new client in and returns it with the session's CSRF token.
func (d *dash) login() (*http.Client, string) {
	d.t.Helper()
	c := d.client()
	code, _ := d.h.LoginCode()
	resp := d.do(c, "GET", LoginPath(code), "", nil)
	if resp.StatusCode != http.StatusSeeOther {
		d.t.Fatalf("login: %d", resp.StatusCode)
	}
	var info sessionInfo
	resp = d.do(c, "GET", "/ui/api/session", "", nil)
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || info.CSRF == "" {
		d.t.Fatalf("session: %v %+v", err, info)
	}
	return c, info.CSRF
}

// do sends a request; header holds extra headers.
func (d *dash) do(c *http.Client, method, path, body string, header map[string]string) *http.Response {
	d.t.Helper()
	req, err := http.NewRequest(method, d.srv.URL+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestLoginCodeIsSingleUseAndExpires(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	code, expires := d.h.LoginCode()
	if len(code) < 43 || expires.Sub(d.clock.now()) != codeTTL {
		t.Fatalf("code %q expires %v", code, expires)
	}
	c := d.client()
	resp := d.do(c, "GET", LoginPath(code), "", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("first use: %d %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := d.do(d.client(), "GET", LoginPath(code), "", nil); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("second use: %d with cookies %v, want 401 and none", resp.StatusCode, resp.Cookies())
	}
	late, _ := d.h.LoginCode()
	d.clock.advance(codeTTL)
	if resp := d.do(d.client(), "GET", LoginPath(late), "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired code: %d, want 401", resp.StatusCode)
	}
	for _, bad := range []string{"", "x", strings.Repeat("A", 43)} {
		if resp := d.do(d.client(), "GET", LoginPath(bad), "", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("code %q: %d, want 401", bad, resp.StatusCode)
		}
	}
}

func TestSessionCookieFlags(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	code, _ := d.h.LoginCode()
	resp := d.do(d.client(), "GET", LoginPath(code), "", nil)
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	c := cookies[0]
	if c.Name != "memmesh_session_"+d.port() || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" ||
		c.MaxAge <= 0 || c.MaxAge > 12*3600 || len(c.Value) < 43 {
		t.Errorf("cookie %+v: want memmesh_session_PORT, HttpOnly, SameSite=Strict, Path=/, Max-Age within 12 h", c)
	}
}

// TestSessionBoundToItsListener: a browser sends its cookies for
// 127.0.0.1 to every port; the cookie of the dashboard on one port is no
// session on another, under its own name or renamed for it.
func TestSessionBoundToItsListener(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c, _ := d.login()
	other := httptest.NewServer(d.h)
	t.Cleanup(other.Close)
	b := &dash{t: t, srv: other, h: d.h, clock: d.clock, n: d.n}
	if resp := b.do(c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("port A's cookie on port B: %d, want 401", resp.StatusCode)
	}
	u, _ := url.Parse(d.srv.URL)
	var value string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == cookiePrefix+d.port() {
			value = ck.Value
		}
	}
	renamed := b.client()
	renamed.Jar.SetCookies(u, []*http.Cookie{{Name: cookiePrefix + b.port(), Value: value}})
	if resp := b.do(renamed, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("port A's session named for port B: %d, want 401", resp.StatusCode)
	}
	if resp := d.do(c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the session on its own port: %d", resp.StatusCode)
	}
}

// TestSessionBoundToItsUser: a session's cookie presented by another
// local user (a web server of theirs received it from the browser) is
// refused, and ends the session it was taken from.
func TestSessionBoundToItsUser(t *testing.T) {
	var uid atomic.Uint32
	uid.Store(1000)
	d := newDash(t, startNode(t, node.Config{}), Options{PeerUID: func(*http.Request) (uint32, bool) { return uid.Load(), true }})
	c, _ := d.login()
	if resp := d.do(c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the browser that logged in: %d", resp.StatusCode)
	}
	uid.Store(1001)
	if resp := d.do(c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the cookie from another user: %d, want 401", resp.StatusCode)
	}
	uid.Store(1000)
	if resp := d.do(c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the browser after its cookie leaked: %d, want 401 (the session ended)", resp.StatusCode)
	}
}

func TestSessionExpiresAfter12Hours(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c, _ := d.login()
	if resp := d.do(c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("stats with a session: %d", resp.StatusCode)
	}
	d.clock.advance(sessionTTL)
	if resp := d.do(c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("stats after 12 h: %d, want 401", resp.StatusCode)
	}
}

func TestSessionsAreBounded(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{MaxSessions: 2})
	first, _ := d.login()
	d.clock.advance(time.Second)
	second, _ := d.login()
	d.clock.advance(time.Second)
	third, _ := d.login()
	for i, tc := range []struct {
		c    *http.Client
		want int
	}{{first, 401}, {second, 200}, {third, 200}} {
		if resp := d.do(tc.c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != tc.want {
			t.Errorf("session %d: %d, want %d", i+1, resp.StatusCode, tc.want)
		}
	}
}

func TestLogoutEndsTheSession(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c, csrf := d.login()
	if resp := d.do(c, "POST", "/ui/logout", "", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp := d.do(c, "POST", "/ui/logout", "", map[string]string{"X-CSRF-Token": csrf}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if resp := d.do(c, "GET", "/ui/api/session", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("session after logout: %d, want 401", resp.StatusCode)
	}
}

func TestWithoutSessionRefused(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c := d.client()
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/ui/api/session", ""},
		{"GET", "/ui/api/events", ""},
		{"GET", "/ui/api/v1/memories", ""},
		{"POST", "/ui/api/v1/search", `{"query":"x"}`},
		{"POST", "/ui/api/v1/memories", `{"content":"x"}`},
	} {
		resp := d.do(c, tc.method, tc.path, tc.body, nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s: %d, want 401", tc.method, tc.path, resp.StatusCode)
		}
	}
	// A stolen-looking cookie is no session either.
	u, _ := url.Parse(d.srv.URL)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: cookiePrefix + d.port(), Value: strings.Repeat("x", 43)}})
	if resp := d.do(c, "GET", "/ui/api/v1/stats", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unknown cookie: %d, want 401", resp.StatusCode)
	}
	for _, page := range []string{"/", "/memories", "/memories/m-x", "/graph?focus=x"} {
		resp := d.do(c, "GET", page, "", nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
			t.Errorf("page %s: %d to %q, want 303 to /ui/login", page, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp := d.do(c, "GET", "/ui/login", "", nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "memmesh ui") {
		t.Errorf("/ui/login without a code: %d %q, want 401 saying to run memmesh ui", resp.StatusCode, body)
	}
}

func TestBearerTokenWorksForScripts(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c := d.client()
	resp := d.do(c, "POST", "/ui/api/v1/memories", `{"content":"scripts may write"}`, map[string]string{"Authorization": "Bearer " + testToken})
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("write with the bearer token: %d, want 201", resp.StatusCode)
	}
	resp = d.do(c, "GET", "/ui/api/v1/stats", "", map[string]string{"Authorization": "Bearer wrong-" + testToken})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong bearer token: %d, want 401", resp.StatusCode)
	}
}

func TestCSRFRefusal(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c, csrf := d.login()
	for i, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, http.StatusForbidden},
		{"wrong token", map[string]string{"X-CSRF-Token": csrf + "x"}, http.StatusForbidden},
		{"another origin", map[string]string{"X-CSRF-Token": csrf, "Origin": "http://localhost:1"}, http.StatusForbidden},
		{"token", map[string]string{"X-CSRF-Token": csrf}, http.StatusCreated},
		{"token and own origin", map[string]string{"X-CSRF-Token": csrf, "Origin": d.srv.URL}, http.StatusCreated},
	} {
		body := fmt.Sprintf(`{"content":"written through the dashboard, case %d"}`, i)
		if resp := d.do(c, "POST", "/ui/api/v1/memories", body, tc.header); resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	for _, method := range []string{"PATCH", "DELETE"} {
		if resp := d.do(c, method, "/ui/api/v1/memories/m-x", `{}`, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s without the token: %d, want 403", method, resp.StatusCode)
		}
	}
	st, err := d.n.Stats(context.Background())
	if err != nil || st.Memories != 2 {
		t.Errorf("memories stored: %d, %v; want the 2 writes with the token", st.Memories, err)
	}
}

func TestHostAndOriginRefusal(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c, csrf := d.login()
	port := d.srv.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"rebinding host", map[string]string{"Host": "evil.example:" + port}},
		{"other port", map[string]string{"Host": "127.0.0.1:1"}},
		{"foreign origin", map[string]string{"Origin": "http://evil.example"}},
		{"null origin", map[string]string{"Origin": "null"}},
	} {
		for _, path := range []string{"/", "/ui/api/session", "/ui/api/v1/stats", "/static/app.js", "/ui/login"} {
			if resp := d.do(c, "GET", path, "", tc.header); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s, GET %s: %d, want 403", tc.name, path, resp.StatusCode)
			}
		}
		h := map[string]string{"X-CSRF-Token": csrf}
		for k, v := range tc.header {
			h[k] = v
		}
		if resp := d.do(c, "POST", "/ui/api/v1/memories", `{"content":"x"}`, h); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s, POST: %d, want 403", tc.name, resp.StatusCode)
		}
	}
	if resp := d.do(c, "GET", "/static/app.js", "", map[string]string{"Host": "localhost:" + port}); resp.StatusCode != http.StatusOK {
		t.Errorf("Host localhost: %d, want 200", resp.StatusCode)
	}
}

func TestSecurityHeadersOnEveryRoute(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c, csrf := d.login()
	anon := d.client()
	for _, tc := range []struct {
		c            *http.Client
		method, path string
		header       map[string]string
	}{
		{c, "GET", "/", nil},
		{c, "GET", "/memories/m-abc", nil},
		{c, "GET", "/static/app.js", nil},
		{c, "GET", "/static/style.css", nil},
		{c, "GET", "/static/missing.js", nil},
		{c, "GET", "/ui/api/session", nil},
		{c, "GET", "/ui/api/v1/memories", nil},
		{c, "GET", "/ui/api/v1/memories/m-missing", nil},
		{c, "POST", "/ui/api/v1/search", map[string]string{"X-CSRF-Token": csrf}},
		{c, "POST", "/ui/api/v1/search", nil},
		{c, "GET", "/ui/nothing", nil},
		{c, "DELETE", "/", nil},
		{anon, "GET", "/", nil},
		{anon, "GET", "/ui/login", nil},
		{anon, "GET", "/ui/login?code=x", nil},
		{anon, "GET", "/ui/api/v1/stats", nil},
		{anon, "GET", "/", map[string]string{"Host": "evil.example"}},
	} {
		resp := d.do(tc.c, tc.method, tc.path, `{"query":"x"}`, tc.header)
		h := resp.Header
		if h.Get("Content-Security-Policy") != CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s %s (%d): headers %v", tc.method, tc.path, resp.StatusCode, h)
		}
		if !strings.HasPrefix(tc.path, "/static/") && h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", tc.method, tc.path, h.Get("Cache-Control"))
		}
	}
	if !strings.Contains(CSP, "script-src 'self';") || strings.Contains(CSP, "unsafe") {
		t.Errorf("CSP %q allows inline script", CSP)
	}
}

func TestStaticFiles(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c, _ := d.login()
	for path, want := range map[string]string{
		"/static/app.js":      "text/javascript; charset=utf-8",
		"/static/api.js":      "text/javascript; charset=utf-8",
		"/static/memories.js": "text/javascript; charset=utf-8",
		"/static/style.css":   "text/css; charset=utf-8",
		"/static/favicon.svg": "image/svg+xml",
		"/static/index.html":  "text/html; charset=utf-8",
		"/":                   "text/html; charset=utf-8",
	} {
		resp := d.do(c, "GET", path, "", nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != want {
			t.Errorf("%s: %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
		if !strings.HasPrefix(path, "/static/") {
			continue
		}
		etag := resp.Header.Get("ETag")
		if resp.Header.Get("Cache-Control") != "no-cache" || etag == "" {
			t.Errorf("%s: Cache-Control %q, ETag %q", path, resp.Header.Get("Cache-Control"), etag)
		}
		if again := d.do(c, "GET", path, "", map[string]string{"If-None-Match": etag}); again.StatusCode != http.StatusNotModified {
			t.Errorf("%s revalidated: %d, want 304", path, again.StatusCode)
		}
	}
	body, _ := io.ReadAll(d.do(c, "GET", "/", "", nil).Body)
	if !strings.Contains(string(body), `<script type="module" src="/static/app.js"></script>`) {
		t.Errorf("the shell does not load app.js: %s", body)
	}
	if regexp.MustCompile(`<script>|<style|\sstyle=|\son[a-z]+=`).Match(body) {
		t.Errorf("the shell has inline script or style: %s", body)
	}
}

func TestShutdownRefused(t *testing.T) {
	d := newDash(t, startNode(t, node.Config{}), Options{})
	c, csrf := d.login()
	if resp := d.do(c, "POST", "/ui/api/v1/shutdown", "", map[string]string{"X-CSRF-Token": csrf}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("shutdown: %d, want 403", resp.StatusCode)
	}
}

// forbiddenJS are the ways of turning text into code or markup.
var forbiddenJS = regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function\b|setTimeout\(\s*['"\x60]|setInterval\(\s*['"\x60]`)

func TestStaticScriptsBuildNoMarkupFromText(t *testing.T) {
	files, err := filepath.Glob("static/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := forbiddenJS.FindString(line); m != "" {
				t.Errorf("%s:%d uses %s: build the DOM with textContent and createElement", f, i+1, m)
			}
		}
	}
	if !forbiddenJS.MatchString("el.innerHTML = x") || !forbiddenJS.MatchString("eval (s)") || !forbiddenJS.MatchString("new Function('a')") {
		t.Fatal("the lint pattern misses what it forbids")
	}
}

// sse reads a dashboard event stream into a channel.
type sse struct {
	events chan [2]string // name, data
	retry  string         // the reconnection delay the stream asked for, in ms
}

func (d *dash) stream(c *http.Client) *sse {
	d.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", d.srv.URL+"/ui/api/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		d.t.Fatalf("events: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sse{events: make(chan [2]string, 1024)}
	done := make(chan struct{})
	d.t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "retry: "):
				s.retry = strings.TrimPrefix(line, "retry: ")
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				select {
				case s.events <- [2]string{name, strings.TrimPrefix(line, "data: ")}:
				default:
				}
			}
		}
	}()
	// The stream opens with a ping: after it, the reader is subscribed.
	s.await(d.t, "the first ping", func(name, _ string) bool { return name == "ping" })
	return s
}

// await waits for an event that match accepts.
func (s *sse) await(t *testing.T, what string, match func(name, data string) bool) string {
	t.Helper()
	timeout := time.After(testwait.Limit)
	for {
		select {
		case ev := <-s.events:
			if match(ev[0], ev[1]) {
				return ev[1]
			}
		case <-timeout:
			t.Fatalf("no event: %s", what)
		}
	}
}

func memoryEventFor(id, change string) func(name, data string) bool {
	return func(name, data string) bool {
		var ev MemoryEvent
		return name == "memory" && json.Unmarshal([]byte(data), &ev) == nil && ev.ID == id && ev.Change == change
	}
}

func TestEventsDeliverALocalCapture(t *testing.T) {
	n := startNode(t, node.Config{})
	d := newDash(t, n, Options{})
	c, _ := d.login()
	s := d.stream(c)
	// A broken stream is reconnected within a second, not the browser's 3 s.
	if s.retry != "1000" {
		t.Errorf("the stream asks for a reconnection after %q ms, want 1000", s.retry)
	}
	ctx := context.Background()
	res, err := n.Remember(ctx, api.RememberRequest{Content: "events reach the dashboard", Title: "<script>alert(1)</script>"})
	if err != nil {
		t.Fatal(err)
	}
	data := s.await(t, "memory created", memoryEventFor(res.ID, "created"))
	var ev MemoryEvent
	json.Unmarshal([]byte(data), &ev)
	if ev.Title != "<script>alert(1)</script>" || ev.Device != n.DeviceID() || ev.Namespace != api.DefaultNamespace {
		t.Errorf("event %+v", ev)
	}
	title := "edited"
	if _, err := n.Update(ctx, res.ID, api.UpdateRequest{Title: &title}); err != nil {
		t.Fatal(err)
	}
	s.await(t, "memory updated", memoryEventFor(res.ID, "updated"))
	other, err := n.Remember(ctx, api.RememberRequest{Content: "a second memory to link"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Link(ctx, api.LinkRequest{From: res.ID, Rel: "related_to", To: other.ID}); err != nil {
		t.Fatal(err)
	}
	s.await(t, "edge", func(name, data string) bool {
		return name == "edge" && strings.Contains(data, res.ID) && strings.Contains(data, other.ID)
	})
	if _, err := n.Purge(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	s.await(t, "memory purged", memoryEventFor(other.ID, "deleted"))
}

func meshNode(t *testing.T, name string) *node.Node {
	return startNode(t, node.Config{Mesh: &mesh.Config{
		Listen:        "127.0.0.1:0",
		Name:          name,
		ProbeInterval: 200 * time.Millisecond,
		RetryInterval: 500 * time.Millisecond,
	}})
}

func TestEventsDeliverAMergeFromAPeer(t *testing.T) {
	a, b := meshNode(t, "a"), meshNode(t, "b")
	ctx := context.Background()
	inv, err := a.Invite(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(ctx, inv.Token); err != nil {
		t.Fatal(err)
	}
	d := newDash(t, a, Options{})
	c, _ := d.login()
	s := d.stream(c)
	s.await(t, "peer b", func(name, data string) bool {
		var p api.Peer
		return name == "peer" && json.Unmarshal([]byte(data), &p) == nil && p.Device == b.DeviceID()
	})
	res, err := b.Remember(ctx, api.RememberRequest{Content: "captured on the other machine"})
	if err != nil {
		t.Fatal(err)
	}
	data := s.await(t, "memory merged from b", memoryEventFor(res.ID, "merged"))
	var ev MemoryEvent
	json.Unmarshal([]byte(data), &ev)
	if ev.Device != b.DeviceID() {
		t.Errorf("merged event %+v, want device %s", ev, b.DeviceID())
	}
}

// stubService is a Service that only Changes and Peers may be called on.
type stubService struct {
	Service
}

func (stubService) Changes(context.Context, api.ChangesRequest) (api.ChangesResult, error) {
	return api.ChangesResult{}, nil
}
func (stubService) Peers(context.Context) ([]api.Peer, error) { return nil, api.ErrNoMesh }
func (stubService) DeviceID() string                          { return "self" }

func TestSlowListenerIsDroppedNotWaitedFor(t *testing.T) {
	h := newHub(stubService{}, testLogger(t), time.Hour, time.Hour)
	slow, fast := h.subscribe(), h.subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range clientBuffer + 10 {
			h.publish(event{name: "memory", data: []byte(fmt.Sprint(i))})
			if i < clientBuffer {
				<-fast.ch // fast keeps up
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(testwait.Limit):
		t.Fatal("publish blocked on a full listener")
	}
	select {
	case <-slow.dropped:
	default:
		t.Error("the slow listener was not dropped")
	}
	h.unsubscribe(slow)
	h.unsubscribe(fast)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.clients) != 0 || h.stop != nil {
		t.Errorf("after the last listener: %d clients, reader running %v", len(h.clients), h.stop != nil)
	}
}

func TestStreamsAreBounded(t *testing.T) {
	h := newHub(stubService{}, testLogger(t), time.Hour, time.Hour)
	var open []*listener
	for range maxStreams {
		l := h.subscribe()
		if l == nil {
			t.Fatalf("stream %d refused", len(open)+1)
		}
		open = append(open, l)
	}
	if h.subscribe() != nil {
		t.Errorf("stream %d accepted", maxStreams+1)
	}
	h.unsubscribe(open[0])
	l := h.subscribe()
	if l == nil {
		t.Error("a stream refused after one closed")
	}
	for _, l := range append(open[1:], l) {
		h.unsubscribe(l)
	}
}
