package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/node"
)

// limitsAPI serves a real node's API with timeouts and returns a client
// and the socket.
func limitsAPI(t *testing.T, timeouts Timeouts) (*Client, string) {
	t.Helper()
	c, _, sock := serveWith(t, node.Config{Home: t.TempDir()}, timeouts)
	return c, sock
}

// rawConn sends head (request line and headers) and body on a new
// connection to sock and returns the connection.
func rawConn(t *testing.T, sock, head, body string) net.Conn {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	return conn
}

// answer reads the response on conn, and whether the server then closed
// the connection, within a deadline generous enough for a loaded machine.
func answer(t *testing.T, conn net.Conn) (status int, body string, closed bool) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(testwait.Limit))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = r.ReadByte()
	return resp.StatusCode, string(data), err == io.EOF
}

// bodyRoutes are the routes that take a request body other than an
// import, with a path that exists.
var bodyRoutes = []struct{ method, path string }{
	{"POST", "/v1/memories"}, {"PATCH", "/v1/memories/m-zzzzzzzz"}, {"POST", "/v1/memories/m-zzzzzzzz/forget"},
	{"POST", "/v1/search"}, {"POST", "/v1/lifecycle"}, {"POST", "/v1/compact"}, {"POST", "/v1/compact/apply"},
	{"POST", "/v1/stale"}, {"POST", "/v1/analyze"}, {"POST", "/v1/reflect"}, {"POST", "/v1/edges"},
	{"POST", "/v1/edges/unlink"}, {"POST", "/v1/edges/invalidate"}, {"POST", "/v1/traverse"},
	{"POST", "/v1/impact"}, {"POST", "/v1/edges/list"}, {"POST", "/v1/changes"}, {"POST", "/v1/context"}, {"POST", "/v1/mesh/invite"},
	{"POST", "/v1/mesh/join"}, {"POST", "/v1/mesh/rejoin"}, {"POST", "/v1/mesh/revoke"}, {"POST", "/v1/ns/set"},
	{"POST", "/v1/shutdown"},
}

// TestBodiesCapped: a body announced larger than the cap is refused with
// 413 before it is read, on every route; one that turns out larger while
// read (chunked) is refused the same way.
func TestBodiesCapped(t *testing.T) {
	c, sock := limitsAPI(t, DefaultTimeouts)
	for _, r := range bodyRoutes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			conn := rawConn(t, sock, fmt.Sprintf("%s %s HTTP/1.1\r\nHost: memmesh\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", r.method, r.path, 50<<20), `{"content": "`)
			status, body, _ := answer(t, conn)
			if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"code":"invalid"`) || !strings.Contains(body, "52428800 bytes: at most 8388608") {
				t.Fatalf("got %d %s, want 413 saying the size and the cap", status, body)
			}
		})
	}
	t.Run("chunked", func(t *testing.T) {
		conn := rawConn(t, sock, "POST /v1/memories HTTP/1.1\r\nHost: memmesh\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n", "")
		go func() {
			chunk := strings.Repeat("a", 1<<20)
			start := `{"content": "`
			fmt.Fprintf(conn, "%x\r\n%s\r\n", len(start), start)
			for range 10 {
				if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
					return
				}
			}
		}()
		status, body, _ := answer(t, conn)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "at most 8388608") {
			t.Fatalf("got %d %s, want 413", status, body)
		}
	})
	if st, err := c.Stats(context.Background()); err != nil || st.Memories != 0 {
		t.Fatalf("after oversized bodies: %+v, %v", st, err)
	}
}

// TestStalledBodiesDropped: a client that sends part of a body and stops
// is answered and disconnected after the body timeout, for a JSON call
// (the whole body) and an import (between reads); an import whose data
// keeps coming is not cut; the server keeps serving others.
func TestStalledBodiesDropped(t *testing.T) {
	timeouts := Timeouts{Header: 5 * time.Second, Body: 500 * time.Millisecond, Idle: 5 * time.Second}
	c, sock := limitsAPI(t, timeouts)
	for _, path := range []string{"/v1/memories", "/v1/import"} {
		t.Run(path, func(t *testing.T) {
			conn := rawConn(t, sock, fmt.Sprintf("POST %s HTTP/1.1\r\nHost: memmesh\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n", path), `{"content": "half`)
			status, body, closed := answer(t, conn)
			if status < 400 || !closed {
				t.Fatalf("stalled upload: %d %s, closed %v; want an error and a closed connection", status, body, closed)
			}
		})
	}
	t.Run("flowing import", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			defer pw.Close()
			for i := range 8 { // about twice the body timeout in all
				fmt.Fprintf(pw, `{"type":"memory","id":"m-%s","namespace":"x","content":"line %d","kind":"note","tier":"human","confidence":1,"status":"active","provenance":{"device":"D","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}}`+"\n", strings.Repeat(string(rune('a'+i)), 26), i)
				time.Sleep(timeouts.Body / 4)
			}
		}()
		res, err := c.Import(context.Background(), pr)
		if err != nil || res.Imported != 8 {
			t.Fatalf("import while data flows: %+v, %v", res, err)
		}
	})
	if _, err := c.Stats(context.Background()); err != nil {
		t.Fatalf("the server no longer answers: %v", err)
	}
}
