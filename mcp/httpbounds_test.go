package mcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/node"
)

// testToken is the bearer token of the HTTP servers under test.
const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testHTTP serves n's MCP server over HTTP with testToken, adjusted by
// tune before it serves, and returns the server's base URL.
func testHTTP(t *testing.T, n *node.Node, tune func(*HTTPServer)) string {
	t.Helper()
	return serveHTTP(t, testServer(t, n), tune)
}

// serveHTTP serves s over HTTP as testHTTP does.
func serveHTTP(t *testing.T, s *server.MCPServer, tune func(*HTTPServer)) string {
	t.Helper()
	h, err := NewHTTPServer(s, testToken, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if tune != nil {
		tune(h)
	}
	ln, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Shutdown(ctx)
		<-served
	})
	return "http://" + ln.Addr().String()
}

// post sends body to url's MCP path with the authorization header auth
// ("" for none).
func post(t *testing.T, url, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+HTTPPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// rememberCall is a tools/call of remember.
const rememberCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"content":"written over HTTP"}}}`

// TestHTTPBearerToken: every request without the token, or with another,
// is refused with 401 and changes nothing; the token is compared whole.
func TestHTTPBearerToken(t *testing.T) {
	n := testNode(t)
	url := testHTTP(t, n, nil)
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + strings.Repeat("0", len(testToken)), http.StatusUnauthorized},
		{"prefix of the token", "Bearer " + testToken[:32], http.StatusUnauthorized},
		{"token and more", "Bearer " + testToken + "0", http.StatusUnauthorized},
		{"other scheme", "Basic " + testToken, http.StatusUnauthorized},
		{"bare token", testToken, http.StatusUnauthorized},
		{"empty bearer", "Bearer ", http.StatusUnauthorized},
		{"right token", "Bearer " + testToken, http.StatusOK},
		{"scheme in lower case", "bearer " + testToken, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, url, tc.auth, initializeBody)
			if status != tc.want {
				t.Fatalf("status %d, want %d (%s)", status, tc.want, body)
			}
			if status == http.StatusUnauthorized && (strings.Contains(body, testToken) || !strings.Contains(body, "memmesh http-token")) {
				t.Errorf("401 body %q: it must say how to get the token and never hold it", body)
			}
		})
	}
	if status, _ := post(t, url, "", rememberCall); status != http.StatusUnauthorized {
		t.Fatalf("remember without the token: status %d", status)
	}
	if st, err := n.Stats(context.Background()); err != nil || st.Memories != 0 {
		t.Fatalf("a refused request wrote: %d memories (%v)", st.Memories, err)
	}
	c := httpClient(t, url, testToken)
	var out rememberData
	call(t, c, "remember", map[string]any{"content": "written over HTTP with the token"}, &out)
	if _, err := n.Get(context.Background(), out.ID); err != nil {
		t.Fatalf("remember with the token: %v", err)
	}
}

// httpClient returns an initialized client of the MCP server at url that
// sends token.
func httpClient(t *testing.T, url, token string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url+HTTPPath, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := startClient(t, tr, testClient, opts...)
	return c
}

// TestHTTPNeedsAToken: a server is never made without a usable token.
func TestHTTPNeedsAToken(t *testing.T) {
	for _, token := range []string{"", "short", strings.Repeat("x", 31)} {
		if _, err := NewHTTPServer(testServer(t, testNode(t)), token, nil); err == nil {
			t.Errorf("NewHTTPServer accepted the token %q", token)
		}
	}
}

// TestHTTPBodyCapped: a body past the cap is refused with 413, announced
// (before it is read) or not (while it is read), and the server answers
// the next request.
func TestHTTPBodyCapped(t *testing.T) {
	url := testHTTP(t, testNode(t), nil)
	addr := strings.TrimPrefix(url, "http://")
	huge := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", HTTPPath, addr, testToken, 50<<20)
	status, body := rawHTTP(t, addr, huge, nil)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "52428800 bytes: at most 4194304") {
		t.Fatalf("announced 50 MB: %d %q, want 413 with the size and the cap", status, body)
	}
	chunked := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", HTTPPath, addr, testToken)
	status, body = rawHTTP(t, addr, chunked, func(w io.Writer) {
		chunk := strings.Repeat("a", 1<<20)
		for range 8 {
			if _, err := fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return
			}
		}
	})
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "at most 4194304") {
		t.Fatalf("chunked 8 MB: %d %q, want 413", status, body)
	}
	if status, body := post(t, url, "Bearer "+testToken, initializeBody); status != http.StatusOK {
		t.Fatalf("after oversized bodies: %d %s", status, body)
	}
}

// rawHTTP writes head on a new connection to addr, then what more writes
// (in the background), and returns the response.
func rawHTTP(t *testing.T, addr, head string, more func(io.Writer)) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	if more != nil {
		go more(conn)
	}
	conn.SetReadDeadline(time.Now().Add(testwait.Limit))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestHTTPStalledBodyDropped: a client that sends half a body and stops
// is disconnected after the body timeout; others are still served.
func TestHTTPStalledBodyDropped(t *testing.T) {
	url := testHTTP(t, testNode(t), func(h *HTTPServer) { h.bodyTimeout = 300 * time.Millisecond })
	addr := strings.TrimPrefix(url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", HTTPPath, addr, testToken)
	conn.SetReadDeadline(time.Now().Add(testwait.Limit))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("the stalled connection was not closed: %v", err)
	}
	if status, body := post(t, url, "Bearer "+testToken, initializeBody); status != http.StatusOK {
		t.Fatalf("after a stalled upload: %d %s", status, body)
	}
}

// TestTokenFile: the token is made once, 32 random bytes in hex in a file
// of mode 0600, and read back by every caller, also when they race; a
// file others may read, or that holds no token, is refused.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TokenFile)
	tokens := make([]string, 8)
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Go(func() {
			tok, err := LoadToken(path)
			if err != nil {
				t.Error(err)
			}
			tokens[i] = tok
		})
	}
	wg.Wait()
	for _, tok := range tokens {
		if tok != tokens[0] {
			t.Fatalf("racing callers got different tokens: %q", tokens)
		}
	}
	if len(tokens[0]) != 64 || strings.Trim(tokens[0], "0123456789abcdef") != "" {
		t.Fatalf("token %q is not 32 bytes in hex", tokens[0])
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi.Mode(), err)
	}
	if again, err := LoadToken(path); err != nil || again != tokens[0] {
		t.Fatalf("second load: %q, %v", again, err)
	}
	os.Chmod(path, 0o644)
	if _, err := LoadToken(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a token others may read: %v, want a refusal saying chmod 600", err)
	}
	os.WriteFile(path, []byte("short\n"), 0o600)
	os.Chmod(path, 0o600)
	if _, err := LoadToken(path); err == nil {
		t.Errorf("a file without a token was accepted")
	}
}

// TestHTTPLocalChecksFirst: a request from a rebound name is refused for
// its host, token or not, and the answer does not reveal the token check.
func TestHTTPLocalChecksFirst(t *testing.T) {
	h, err := NewHTTPServer(testServer(t, testNode(t)), testToken, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	req, _ := http.NewRequest(http.MethodPost, ts.URL+HTTPPath, strings.NewReader(initializeBody))
	req.Host = "attacker.example:" + port
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("rebound name without a token: %d, want 403", resp.StatusCode)
	}
}
