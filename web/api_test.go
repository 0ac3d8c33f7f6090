package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/node"
)

// testAPI serves a real node's API on a unix socket and returns a client
// and the socket path; everything stops when the test ends.
func testAPI(t *testing.T) (*Client, *node.Node, string) {
	t.Helper()
	n, err := node.New(node.Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "mmw")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: NewAPI(n, slog.New(slog.NewTextHandler(io.Discard, nil)), func() {})}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		n.Close()
		os.RemoveAll(dir)
	})
	return NewClient(sock), n, sock
}

// raw sends a request with a raw body over the socket.
func raw(t *testing.T, sock, method, path, body string) (int, string) {
	t.Helper()
	c := NewClient(sock)
	req, _ := http.NewRequest(method, "http://memmesh"+path, strings.NewReader(body))
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestBadRequestsChangeNothing(t *testing.T) {
	c, n, sock := testAPI(t)
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"malformed JSON", "POST", "/v1/memories", `{"content": `, 400, "invalid"},
		{"wrong type", "POST", "/v1/memories", `{"content": 42}`, 400, "invalid"},
		{"unknown field", "POST", "/v1/memories", `{"content": "x", "colour": "red"}`, 400, "invalid"},
		{"oversized body", "POST", "/v1/memories", `{"content": "` + strings.Repeat("a", maxRequestBody) + `"}`, 400, "invalid"},
		{"empty content", "POST", "/v1/memories", `{"content": ""}`, 400, "invalid"},
		{"bad limit", "GET", "/v1/memories?limit=ten", "", 400, "invalid"},
		{"bad since", "GET", "/v1/memories?since=yesterday", "", 400, "invalid"},
		{"unknown id", "GET", "/v1/memories/m-zzzzzzzz", "", 404, "not_found"},
		{"bad search", "POST", "/v1/search", `{"query": "x", "limit": -1}`, 400, "invalid"},
		{"bad import", "POST", "/v1/import", "{not json}\n", 400, "invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := raw(t, sock, tc.method, tc.path, tc.body)
			if status != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) {
				t.Fatalf("got %d %s, want %d with code %s", status, body, tc.status, tc.code)
			}
		})
	}
	st, err := c.Stats(context.Background())
	if err != nil || st.Memories != 0 {
		t.Fatalf("bad requests stored %d memories (%v)", st.Memories, err)
	}
	if _, err := n.Stats(context.Background()); err != nil {
		t.Fatalf("node no longer answers: %v", err)
	}
}

func TestClientErrorsMatchNodeErrors(t *testing.T) {
	c, _, _ := testAPI(t)
	ctx := context.Background()
	if _, err := c.Get(ctx, "m-zzzzzzzz"); !errors.Is(err, node.ErrNotFound) {
		t.Errorf("Get unknown: %v, want ErrNotFound", err)
	}
	if _, err := c.Remember(ctx, node.RememberRequest{Content: "x", Namespace: "no spaces"}); !errors.Is(err, node.ErrInvalid) {
		t.Errorf("Remember bad namespace: %v, want ErrInvalid", err)
	}
	if _, err := NewClient(filepath.Join(t.TempDir(), "none.sock")).Health(ctx); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("no daemon: %v, want ErrNoDaemon", err)
	}
}

func TestClientRoundTrip(t *testing.T) {
	c, _, _ := testAPI(t)
	ctx := context.Background()
	res, err := c.Remember(ctx, node.RememberRequest{Namespace: "web", Content: "Serve the API on a unix socket with mode 0600"})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := c.Search(ctx, node.SearchRequest{Query: "unix socket", Namespace: "web"})
	if err != nil || len(hits.Results) != 1 || hits.Results[0].ID != res.ID {
		t.Fatalf("search: %+v %v", hits, err)
	}
	var export bytes.Buffer
	if count, err := c.Export(ctx, &export); err != nil || count != 1 {
		t.Fatalf("export: %d %v", count, err)
	}
	other, _, _ := testAPI(t)
	if imp, err := other.Import(ctx, &export); err != nil || imp.Imported != 1 {
		t.Fatalf("import: %+v %v", imp, err)
	}
	if m, err := other.Get(ctx, res.ID); err != nil || m.Content != "Serve the API on a unix socket with mode 0600" {
		t.Fatalf("imported memory: %+v %v", m, err)
	}
}
