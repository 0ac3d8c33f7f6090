package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/testwait"
)

// socketIn returns a unix socket path in a fresh short directory.
func socketIn(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mmw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "api.sock")
}

// stoppedDaemon listens on a socket and accepts connections but never
// answers, as a daemon stopped with SIGSTOP does (the kernel accepts
// connections to its socket).
func stoppedDaemon(t *testing.T) string {
	t.Helper()
	sock := socketIn(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return sock
}

// within runs call and fails the test if it has not returned after a
// deadline generous enough for a loaded machine: it detects hangs only.
func within(t *testing.T, what string, call func() error) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- call() }()
	select {
	case err := <-res:
		return err
	case <-time.After(testwait.Limit):
		t.Fatalf("%s: no return after %v", what, testwait.Limit)
		return nil
	}
}

// TestClientTimesOut: every call to a daemon that does not answer fails
// with ErrTimeout and a message that names the daemon, the timeout and
// what Describe adds.
func TestClientTimesOut(t *testing.T) {
	sock := stoppedDaemon(t)
	c := NewClient(sock, ClientOptions{Timeout: 300 * time.Millisecond, Describe: func() string { return "pid 42; see the log" }})
	ctx := context.Background()
	want := fmt.Sprintf("the daemon at %s did not answer in 300ms; pid 42; see the log", filepath.Dir(sock))
	calls := map[string]func() error{
		"health":    func() error { _, err := c.Health(ctx); return err },
		"stats":     func() error { _, err := c.Stats(ctx); return err },
		"remember":  func() error { _, err := c.Remember(ctx, api.RememberRequest{Content: "x"}); return err },
		"search":    func() error { _, err := c.Search(ctx, api.SearchRequest{Query: "x"}); return err },
		"list":      func() error { _, err := c.List(ctx, api.ListRequest{}); return err },
		"get":       func() error { _, err := c.Get(ctx, "m-x"); return err },
		"export":    func() error { _, err := c.Export(ctx, io.Discard); return err },
		"import":    func() error { _, err := c.Import(ctx, strings.NewReader("{}\n")); return err },
		"lifecycle": func() error { _, err := c.RunLifecycle(ctx); return err },
		"peers":     func() error { _, err := c.Peers(ctx); return err },
		"shutdown":  func() error { return c.Shutdown(ctx) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := within(t, name, call)
			if !errors.Is(err, ErrTimeout) || err.Error() != want {
				t.Fatalf("err = %v, want ErrTimeout saying %q", err, want)
			}
		})
	}
	if id := c.DeviceID(); id != "" {
		t.Errorf("DeviceID = %q from a daemon that does not answer", id)
	}
}

// fakeDaemon serves handler on a socket, for the shapes of answers a slow
// but live daemon gives.
func fakeDaemon(t *testing.T, handler http.Handler) string {
	t.Helper()
	sock := socketIn(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// TestClientWaitsWhileAlive: a stream that keeps flowing (export, import)
// and a long call while the daemon answers its health check are not cut,
// however long they take in all; a long call whose daemon stops
// answering is.
func TestClientWaitsWhileAlive(t *testing.T) {
	if testing.Short() {
		t.Skip("long (a call outlives its timeout several times): ./test runs it, ./test -short does not")
	}
	const timeout = time.Second
	healthy := make(chan bool, 1)
	healthy <- true
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		ok := <-healthy
		healthy <- ok
		if !ok {
			<-r.Context().Done() // stops answering
			return
		}
		WriteJSON(w, http.StatusOK, Health{DeviceID: "D"})
	})
	mux.HandleFunc("GET /v1/export", func(w http.ResponseWriter, r *http.Request) {
		for i := range 12 { // three timeouts in all
			fmt.Fprintf(w, "{\"n\":%d}\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(timeout / 4)
		}
	})
	mux.HandleFunc("POST /v1/import", func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		WriteJSON(w, http.StatusOK, api.ImportResult{Imported: strings.Count(string(data), "\n")})
	})
	mux.HandleFunc("POST /v1/lifecycle", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * timeout):
		case <-r.Context().Done():
			return
		}
		WriteJSON(w, http.StatusOK, api.LifecycleReport{Memories: 7})
	})
	mux.HandleFunc("POST /v1/memories/{ref}/purge", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * timeout):
		case <-r.Context().Done():
			return
		}
		WriteJSON(w, http.StatusOK, api.Purged{ID: r.PathValue("ref")})
	})
	c := NewClient(fakeDaemon(t, mux), ClientOptions{Timeout: timeout})
	ctx := context.Background()

	if err := within(t, "purge", func() error {
		p, err := c.Purge(ctx, "m-k3j5x2ab")
		if err == nil && p.ID != "m-k3j5x2ab" {
			err = fmt.Errorf("purged %+v", p)
		}
		return err
	}); err != nil {
		t.Errorf("a purge that takes long, of a live daemon: %v", err)
	}
	if err := within(t, "export", func() error {
		var out bytes.Buffer
		_, err := c.Export(ctx, &out)
		if n := strings.Count(out.String(), "\n"); err == nil && n != 12 {
			err = fmt.Errorf("%d lines", n)
		}
		return err
	}); err != nil {
		t.Errorf("slow, steady export: %v", err)
	}
	if err := within(t, "import", func() error {
		res, err := c.Import(ctx, &trickle{lines: 12, every: timeout / 4})
		if err == nil && res.Imported != 12 {
			err = fmt.Errorf("imported %d", res.Imported)
		}
		return err
	}); err != nil {
		t.Errorf("slow, steady import: %v", err)
	}
	if err := within(t, "lifecycle", func() error {
		rep, err := c.RunLifecycle(ctx)
		if err == nil && rep.Memories != 7 {
			err = fmt.Errorf("report %+v", rep)
		}
		return err
	}); err != nil {
		t.Errorf("long call of a live daemon: %v", err)
	}
	<-healthy
	healthy <- false
	if err := within(t, "lifecycle", func() error { _, err := c.RunLifecycle(ctx); return err }); !errors.Is(err, ErrTimeout) {
		t.Errorf("long call of a daemon that stopped answering: %v, want ErrTimeout", err)
	}
}

// trickle yields lines JSON lines, one every every.
type trickle struct {
	lines int
	every time.Duration
}

func (r *trickle) Read(p []byte) (int, error) {
	if r.lines == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.every)
	r.lines--
	line, _ := json.Marshal(map[string]int{"n": r.lines})
	return copy(p, append(line, '\n')), nil
}
