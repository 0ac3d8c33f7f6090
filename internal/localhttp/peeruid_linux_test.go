package localhttp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/testwait"
)

// acceptOne listens on addr and returns the server's side of one
// connection that dial makes to it, or false when addr is not available.
func acceptOne(t *testing.T, addr string, dial func(addr string)) (net.Conn, bool) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Logf("%s: %v (no such loopback here)", addr, err)
		return nil, false
	}
	t.Cleanup(func() { ln.Close() })
	go dial(ln.Addr().String())
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(testwait.Limit))
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, true
}

// TestPeerUID: the owner of a loopback connection's other end is found,
// over IPv4 and IPv6: here, this process's user.
func TestPeerUID(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		clients := make(chan net.Conn, 1)
		server, ok := acceptOne(t, addr, func(a string) {
			c, err := net.Dial("tcp", a)
			if err != nil {
				t.Error(err)
			}
			clients <- c
		})
		if !ok {
			continue
		}
		client := <-clients
		defer client.Close()
		if uid, found := peerUID(server); !found || uid != uint32(os.Getuid()) {
			t.Errorf("%s: peer uid %d, found %v; want %d", addr, uid, found, os.Getuid())
		}
	}
	if _, err := socketUID(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")); err == nil {
		t.Errorf("a socket that does not exist has an owner")
	}
}

// TestPeerUIDOtherUser: a connection from another user (nobody) is
// told apart from this process's. It needs root to act as nobody.
func TestPeerUIDOtherUser(t *testing.T) {
	setpriv, err1 := exec.LookPath("setpriv")
	curl, err2 := exec.LookPath("curl")
	if os.Geteuid() != 0 || err1 != nil || err2 != nil {
		t.Skip("needs root, setpriv and curl to connect as nobody")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	done := make(chan struct{})
	server, _ := acceptOne(t, "127.0.0.1:0", func(a string) {
		defer close(done)
		exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
			curl, "-s", "-m", "20", "http://"+a+"/").Run()
	})
	uid, found := peerUID(server)
	server.Close()
	<-done
	if !found || uid != 65534 {
		t.Errorf("peer uid %d, found %v; want 65534 (nobody)", uid, found)
	}
}

// TestPeerUIDOfARequest: a request served by NewServer knows the user
// of its peer.
func TestPeerUIDOfARequest(t *testing.T) {
	got := make(chan string, 1)
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, ok := PeerUID(r)
		got <- fmt.Sprint(uid, ok)
	}), slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s, want := <-got, fmt.Sprint(os.Getuid(), true); s != want {
		t.Errorf("PeerUID: %s, want %s", s, want)
	}
}

// BenchmarkPeerUID measures the sock_diag lookup the listener makes for
// every connection it accepts.
func BenchmarkPeerUID(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	for b.Loop() {
		if _, ok := peerUID(server); !ok {
			b.Fatal("no owner found")
		}
	}
}
