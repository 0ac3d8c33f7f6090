package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/testwait"
)

// waitListening waits until addr accepts connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(testwait.Limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not accept connections: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openFiles counts the descriptors pid holds (-1 when it cannot tell).
func openFiles(pid int) int {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(fds)
}

// trickleBody opens a connection to addr and sends head, then a body of
// bodyLen bytes, 256 at a time every 50 ms (5 KB/s), until the server
// closes the connection. It reports whether the server closed it, and
// how much of the body had been sent by then.
func trickleBody(addr, head string, bodyLen int) (closed bool, sent int64, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false, 0, err
	}
	defer c.Close()
	if _, err := io.WriteString(c, head); err != nil {
		return false, 0, err
	}
	var n atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		chunk := []byte(strings.Repeat("x", 256))
		for n.Load() < int64(bodyLen) {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			w, err := c.Write(chunk)
			n.Add(int64(w))
			if err != nil {
				return
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(3 * time.Minute))
	_, err = io.Copy(io.Discard, c)
	sent = n.Load()
	close(stop)
	<-done
	var op *net.OpError
	closed = err == nil || errors.As(err, &op) && !op.Timeout()
	return closed, sent, err
}

// TestHTTPRefusedFloodSparesTheOwner: a flood of connections to the
// daemon's HTTP listener with a wrong token, their bodies trickling in,
// more than the daemon may open files, does not lock its owner out: the
// CLI (over the socket) and MCP over HTTP (with the token) answer while
// it goes on, and the daemon closes every flooding connection before its
// body is sent.
func TestHTTPRefusedFloodSparesTheOwner(t *testing.T) {
	const nofile, flood, bodyLen = 160, 400, 64 << 10
	home := newHome(t)
	addr := freeLoopbackAddr(t)
	cmd, _ := startServeIn(t, []string{"sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, nofile), "sh"}, home, "--http", addr)
	waitListening(t, addr)
	token := httpToken(t, home)
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, strings.Repeat("f", 64), bodyLen)

	type outcome struct {
		closed bool
		sent   int64
		err    error
	}
	outcomes := make([]outcome, flood)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range outcomes {
		wg.Go(func() {
			closed, sent, err := trickleBody(addr, head, bodyLen)
			outcomes[i] = outcome{closed, sent, err}
		})
	}
	peak, sampled := 0, make(chan struct{})
	go func() { // the daemon's descriptors while the flood lasts
		defer close(sampled)
		for {
			peak = max(peak, openFiles(cmd.Process.Pid))
			select {
			case <-time.After(10 * time.Millisecond):
			case <-waitDone(&wg):
				return
			}
		}
	}()

	ok(t, home, "capture", "captured while another user floods the HTTP listener")
	if status := postStatus(t, "http://"+addr+"/mcp", "Bearer "+token); status != http.StatusOK {
		t.Errorf("MCP over HTTP with the token during the flood: %d", status)
	}
	wg.Wait()
	<-sampled
	t.Logf("%d refused connections trickling bodies: all closed %s after the first; the daemon held at most %d descriptors (limit %d)", flood, time.Since(start).Round(time.Millisecond), peak, nofile)
	for i, o := range outcomes {
		if !o.closed || o.sent >= bodyLen {
			t.Fatalf("flooding connection %d: closed by the daemon %v (%v) after %d of %d body bytes; want closed before its body was sent", i, o.closed, o.err, o.sent, bodyLen)
		}
	}
}

// waitDone returns a channel closed once wg's goroutines are done.
func waitDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

// TestDashboardCookieOtherUser: the dashboard's session cookie, which a
// browser also sends to another user's web server on 127.0.0.1, is no use
// to that user (nobody): replayed from its connection it is refused and
// the session ends. It needs root to act as nobody.
func TestDashboardCookieOtherUser(t *testing.T) {
	setpriv, err1 := exec.LookPath("setpriv")
	curl, err2 := exec.LookPath("curl")
	if os.Geteuid() != 0 || err1 != nil || err2 != nil {
		t.Skip("needs root, setpriv and curl to send a request as nobody")
	}
	home := newHome(t)
	_, addr := startServeHTTP(t, home)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(strings.TrimSpace(ok(t, home, "ui", "--print-url")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stats := "http://" + addr + "/ui/api/v1/stats"
	get := func() int {
		resp, err := c.Get(stats)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := get(); status != http.StatusOK {
		t.Fatalf("the browser's session: %d", status)
	}
	var cookie string
	for _, ck := range jar.Cookies(resp.Request.URL) {
		cookie = ck.Name + "=" + ck.Value
	}
	if !strings.HasPrefix(cookie, "memmesh_session") {
		t.Fatalf("login set no session cookie: %q", cookie)
	}
	out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		curl, "-s", "-m", "30", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Cookie: "+cookie, stats).CombinedOutput()
	if err != nil || string(out) != "401" {
		t.Fatalf("nobody replaying the cookie: %q, %v; want 401", out, err)
	}
	if status := get(); status != http.StatusUnauthorized {
		t.Fatalf("the session after its cookie was replayed by another user: %d, want 401 (ended)", status)
	}
}
