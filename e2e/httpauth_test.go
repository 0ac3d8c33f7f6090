package e2e

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// httpToken returns the bearer token of home's MCP endpoint, as
// `memmesh http-token` prints it.
func httpToken(tb testing.TB, home string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(home, "http.token"))
	if err != nil {
		tb.Fatalf("read the HTTP token: %v", err)
	}
	return strings.TrimSpace(string(data))
}

// tokenProxy serves, on a free loopback port, a proxy to the MCP endpoint
// at addr that adds token to every request, as a client configured with
// the header does, and returns its endpoint URL. A Host that names the
// proxy's port is passed on naming addr's, so that the endpoint checks
// the name the client sent.
func tokenProxy(tb testing.TB, addr, token string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_, target, _ := net.SplitHostPort(addr)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: addr})
			r.Out.Host = r.In.Host
			if h, p, err := net.SplitHostPort(r.In.Host); err == nil && p == port {
				r.Out.Host = net.JoinHostPort(h, target)
			}
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// postStatus posts an initialize request to endpoint with the header auth
// ("" for none) and returns the status.
func postStatus(t *testing.T, endpoint, auth string) int {
	t.Helper()
	resp := (&mcpHTTPSession{endpoint: endpoint, auth: auth}).post(t, mcpInitialize)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMCPHTTPToken: the daemon's MCP endpoint answers only requests with
// the home's token, which `memmesh http-token` prints and which lives in
// a file of mode 0600, made at the first start.
func TestMCPHTTPToken(t *testing.T) {
	home := newHome(t)
	endpoint, _ := startServeHTTP(t, home)
	token := httpToken(t, home)
	fi, err := os.Stat(filepath.Join(home, "http.token"))
	if err != nil || fi.Mode().Perm() != 0o600 || len(token) != 64 {
		t.Fatalf("token file: mode %v, %d characters (%v)", fi.Mode(), len(token), err)
	}
	if printed := strings.TrimSpace(ok(t, home, "http-token")); printed != token {
		t.Fatalf("memmesh http-token printed %q, the file holds another token", printed)
	}
	for _, c := range []struct {
		name, auth string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + strings.Repeat("f", 64), http.StatusUnauthorized},
		{"right token", "Bearer " + token, http.StatusOK},
	} {
		if got := postStatus(t, endpoint, c.auth); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	log, _ := os.ReadFile(filepath.Join(home, "serve-http.log"))
	if strings.Contains(string(log), token) {
		t.Errorf("the daemon logged its token")
	}
}

// TestMCPHTTPOtherUser: another user of the machine (nobody) can neither
// read the token, even from a home it may enter, nor get in without it.
// It needs root to act as nobody.
func TestMCPHTTPOtherUser(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run commands as nobody")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("needs curl to send a request as nobody")
	}
	home := newHome(t)
	endpoint, _ := startServeHTTP(t, home)
	// Let nobody into the home, so that only the file's own mode protects
	// the token.
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(home, 0o700) })
	asNobody := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := asNobody("cat", filepath.Join(home, "http.token")); err == nil || strings.Contains(out, httpToken(t, home)) {
		t.Fatalf("nobody read the token: %q, %v", out, err)
	}
	out, err := asNobody(curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
		"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
		"--data", mcpInitialize, endpoint)
	if err != nil || out != "401" {
		t.Fatalf("nobody's request without the token: %q, %v; want 401", out, err)
	}
}
