package localhttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/syncbuf"
	"github.com/memmesh/memmesh/internal/testwait"
)

// testToken is what tokenHandler accepts.
const testToken = "Bearer good"

// tokenHandler answers "ok" to a request with testToken (reading its
// body), and refuses others with 401, as MCP's handler does.
func tokenHandler(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != testToken {
		Refuse(w, r)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	Authenticated(w, r)
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.URL.Path == "/stream" {
		streamTicks(w, r)
		return
	}
	io.WriteString(w, "ok")
}

// streamTicks writes "tick" now and again after three body timeouts, if
// the request is still alive then, as an event stream would.
func streamTicks(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "tick\n")
	http.NewResponseController(w).Flush()
	select {
	case <-r.Context().Done():
	case <-time.After(3 * testBodyTimeout):
		io.WriteString(w, "tick\n")
	}
}

const testBodyTimeout = 200 * time.Millisecond

// testServe serves tokenHandler, behind Only, with cfg (DefaultLimits, no
// user lookup and the listener's timeouts when zero) on 127.0.0.1, and
// returns its address.
func testServe(t *testing.T, cfg serverConfig) string {
	t.Helper()
	return testServeLog(t, cfg, testWriter{t})
}

// testServeLog is testServe logging to logTo.
func testServeLog(t *testing.T, cfg serverConfig, logTo io.Writer) string {
	t.Helper()
	if cfg.limits == (Limits{}) {
		cfg.limits = DefaultLimits
	}
	if cfg.uidOf == nil {
		cfg.uidOf = func(net.Conn) (uint32, bool) { return 0, false }
	}
	if cfg.headerTimeout == 0 {
		cfg.headerTimeout = HeaderTimeout
	}
	if cfg.bodyTimeout == 0 {
		cfg.bodyTimeout = BodyTimeout
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	log := slog.New(slog.NewTextHandler(logTo, nil))
	srv := newServer(Only(log, http.HandlerFunc(tokenHandler)), log, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { srv.Serve(ln); close(served) }()
	t.Cleanup(func() { srv.Close(); <-served })
	return ln.Addr().String()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// closedByServer reports whether err ends a read because the server
// closed the connection (not because the reader gave up).
func closedByServer(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestRefusedConnectionsClosedAtOnce: connections whose request is
// refused (no token, a foreign Host) while their body trickles in are
// answered and closed by the server before their bodies are sent: a
// refused client cannot hold a connection.
func TestRefusedConnectionsClosedAtOnce(t *testing.T) {
	addr := testServe(t, serverConfig{})
	const conns, bodyLen, chunk = 20, 64 << 10, 256
	for _, tc := range []struct {
		name, host, auth string
		want             int
	}{
		{"no token", addr, "", http.StatusUnauthorized},
		{"wrong token", addr, "Bearer bad", http.StatusUnauthorized},
		{"foreign host", "attacker.example", testToken, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			for range conns {
				wg.Go(func() {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Error(err)
						return
					}
					defer c.Close()
					auth := ""
					if tc.auth != "" {
						auth = "Authorization: " + tc.auth + "\r\n"
					}
					fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tc.host, auth, bodyLen)
					var sent atomic.Int64
					stop := make(chan struct{})
					trickled := make(chan struct{})
					go func() { // a body of 64 KiB at 12.8 KB/s: 5 s
						defer close(trickled)
						for sent.Load() < bodyLen {
							select {
							case <-stop:
								return
							case <-time.After(20 * time.Millisecond):
							}
							n, err := c.Write([]byte(strings.Repeat("x", chunk)))
							sent.Add(int64(n))
							if err != nil {
								return
							}
						}
					}()
					defer func() { close(stop); <-trickled }()
					c.SetReadDeadline(time.Now().Add(testwait.Limit))
					br := bufio.NewReader(c)
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Errorf("no answer: %v", err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != tc.want || !resp.Close {
						t.Errorf("answer %d, close %v; want %d and Connection: close", resp.StatusCode, resp.Close, tc.want)
					}
					_, err = io.Copy(io.Discard, br)
					if at := sent.Load(); !closedByServer(err) || at >= bodyLen {
						t.Errorf("connection closed by the server: %v (%v), after %d of %d body bytes; want closed before the body was sent", closedByServer(err), err, at, bodyLen)
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestRefusedSmallBodyAnsweredCleanly: a client with a wrong token and a
// small body reads its whole answer, which says why.
func TestRefusedSmallBodyAnsweredCleanly(t *testing.T) {
	addr := testServe(t, serverConfig{})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(strings.Repeat("{}", 1000)))
	req.Header.Set("Authorization", "Bearer bad")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "Unauthorized") {
		t.Fatalf("answer %d %q (%v), want 401 saying Unauthorized", resp.StatusCode, body, err)
	}
}

// TestAnonymousConnectionServesOneRequest: an anonymous connection is
// closed after its request; an authenticated one serves the next.
func TestAnonymousConnectionServesOneRequest(t *testing.T) {
	addr := testServe(t, serverConfig{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testwait.Limit))
	br := bufio.NewReader(c)
	get := func(auth string) *http.Response {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n%s\r\n", addr, auth)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 2 {
		if resp := get("Authorization: " + testToken + "\r\n"); resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("authenticated request %d: %d, close %v", i, resp.StatusCode, resp.Close)
		}
	}
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c, br = c2, bufio.NewReader(c2)
	c.SetDeadline(time.Now().Add(testwait.Limit))
	if resp := get(""); resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("anonymous request: %d, close %v; want 401 and close", resp.StatusCode, resp.Close)
	}
	if _, err := io.Copy(io.Discard, br); !closedByServer(err) {
		t.Fatalf("anonymous connection not closed: %v", err)
	}
}

// TestAuthenticatedStreamOutlivesBodyTimeout: an authenticated request
// without a body may stream for longer than the body timeout.
func TestAuthenticatedStreamOutlivesBodyTimeout(t *testing.T) {
	addr := testServe(t, serverConfig{bodyTimeout: testBodyTimeout})
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/stream", nil)
	req.Header.Set("Authorization", testToken)
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "tick\ntick\n" {
		t.Fatalf("stream %q (%v), want two ticks: it was cut at the body timeout", body, err)
	}
}

// attacker and owner are the source addresses, and users, of the
// connections of TestFloodFromAnotherUserSparesTheOwner.
var (
	attackerAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
	ownerAddr    = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
)

// uidByAddress is a user lookup for tests: connections from attackerAddr
// belong to user 2000, others to user 1000.
func uidByAddress(c net.Conn) (uint32, bool) {
	if c.RemoteAddr().(*net.TCPAddr).IP.Equal(attackerAddr.IP) {
		return 2000, true
	}
	return 1000, true
}

// TestFloodFromAnotherUserSparesTheOwner: another user's connections that
// send nothing are shed past its cap, oldest first, while the owner's
// connection, opened in the middle of the flood, stays and is served.
func TestFloodFromAnotherUserSparesTheOwner(t *testing.T) {
	limits := Limits{Conns: 64, Anonymous: 16, AnonymousPerUser: 8}
	// Headers may take an hour: only the caps close connections here.
	addr := testServe(t, serverConfig{limits: limits, uidOf: uidByAddress, headerTimeout: time.Hour})
	var closed atomic.Int64
	var wg sync.WaitGroup
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
		wg.Wait()
	}()
	attack := func(n int) {
		for range n {
			c, err := (&net.Dialer{LocalAddr: attackerAddr}).Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			flood = append(flood, c)
			wg.Go(func() {
				c.SetReadDeadline(time.Now().Add(testwait.Limit))
				if _, err := io.Copy(io.Discard, c); closedByServer(err) {
					closed.Add(1)
				}
			})
		}
	}
	attack(40)
	owner, err := (&net.Dialer{LocalAddr: ownerAddr}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	attack(40)
	// A second connection of the owner's, accepted after the whole flood.
	if status := ownerGet(t, addr); status != http.StatusOK {
		t.Fatalf("the owner's new connection after the flood: %d", status)
	}
	owner.SetDeadline(time.Now().Add(testwait.Limit))
	fmt.Fprintf(owner, "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n\r\n", addr, testToken)
	resp, err := http.ReadResponse(bufio.NewReader(owner), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the owner's connection opened during the flood: %v %v", resp, err)
	}
	resp.Body.Close()
	want := int64(80 - limits.AnonymousPerUser)
	testwait.Until(t, "the other user's idle connections closed", func() bool { return closed.Load() >= want })
	if got := closed.Load(); got != want {
		t.Fatalf("the server closed %d of the other user's 80 idle connections, want %d (all but its cap)", got, want)
	}
}

// ownerGet sends an authenticated GET from ownerAddr on a new connection.
func ownerGet(t *testing.T, addr string) int {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: ownerAddr}).DialContext}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Header.Set("Authorization", testToken)
	resp, err := (&http.Client{Transport: tr, Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRefusalsLogSpaced: a flood of refused requests logs its first and
// then a line a second at most, counting the refusals since the last.
func TestRefusalsLogSpaced(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var out syncbuf.Buffer
	addr := testServeLog(t, serverConfig{now: clock}, &out)
	refuse := func(n int) {
		for range n {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
			req.Host = "attacker.example"
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("a foreign Host: %d, want 403", resp.StatusCode)
			}
		}
	}
	lines := func() []string {
		var found []string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "refused http request") {
				found = append(found, l)
			}
		}
		return found
	}
	refuse(50)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "refused=1") {
		t.Fatalf("50 refusals within a second logged %q, want the first alone", got)
	}
	mu.Lock()
	now = now.Add(refusedLogEvery)
	mu.Unlock()
	refuse(1)
	if got := lines(); len(got) != 2 || !strings.Contains(got[1], "refused=50") {
		t.Fatalf("the next refusal a second later logged %q, want a second line counting 50", got)
	}
}
