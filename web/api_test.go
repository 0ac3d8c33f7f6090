package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/node"
)

// The node is what the API serves.
var _ Service = (*node.Node)(nil)

// testAPI serves a real node's API on a unix socket and returns a client
// and the socket path; everything stops when the test ends.
func testAPI(t *testing.T) (*Client, *node.Node, string) {
	t.Helper()
	return serveNode(t, node.Config{Home: t.TempDir()})
}

// serveNode is testAPI for a node configured by cfg.
func serveNode(t *testing.T, cfg node.Config) (*Client, *node.Node, string) {
	t.Helper()
	return serveWith(t, cfg, DefaultTimeouts)
}

// serveWith is serveNode with a server bounded by timeouts.
func serveWith(t *testing.T, cfg node.Config, timeouts Timeouts) (*Client, *node.Node, string) {
	t.Helper()
	if cfg.IndexFlushDelay == 0 { // a close need not wait out the index's gathering
		cfg.IndexFlushDelay = -1
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Close()
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
	srv := NewAPI(n, slog.New(slog.NewTextHandler(io.Discard, nil)), func() {}).Server(timeouts)
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		n.Close()
		os.RemoveAll(dir)
	})
	return NewClient(sock, ClientOptions{}), n, sock
}

// raw sends a request with a raw body over the socket.
func raw(t *testing.T, sock, method, path, body string) (int, string) {
	t.Helper()
	c := NewClient(sock, ClientOptions{})
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
		want                     string // part of the error, if set
	}{
		{"malformed JSON", "POST", "/v1/memories", `{"content": `, 400, "invalid", ""},
		{"wrong type", "POST", "/v1/memories", `{"content": 42}`, 400, "invalid", ""},
		{"unknown field", "POST", "/v1/memories", `{"content": "x", "colour": "red"}`, 400, "invalid", ""},
		{"oversized body", "POST", "/v1/memories", `{"content": "` + strings.Repeat("a", maxRequestBody) + `"}`, 413, "invalid", ""},
		{"empty content", "POST", "/v1/memories", `{"content": ""}`, 400, "invalid", ""},
		{"bad limit", "GET", "/v1/memories?limit=ten", "", 400, "invalid", ""},
		{"bad since", "GET", "/v1/memories?since=yesterday", "", 400, "invalid", ""},
		{"unknown id", "GET", "/v1/memories/m-zzzzzzzz", "", 404, "not_found", ""},
		{"bad search", "POST", "/v1/search", `{"query": "x", "limit": -1}`, 400, "invalid", ""},
		{"bad import", "POST", "/v1/import", "{not json}\n", 400, "invalid", ""},
		{"body not UTF-8", "POST", "/v1/memories", "{\"content\": \"caf\xe9\"}", 400, "invalid", "the request body is not UTF-8 text: invalid byte 0xe9 at offset 16"},
		{"half a surrogate pair", "POST", "/v1/memories", `{"content": "x\ud800"}`, 400, "invalid", `the escape \\ud800 at offset 14 is half of a UTF-16 surrogate pair`},
		{"binary content", "POST", "/v1/memories", `{"content": "\u007fELF\u0002\u0001\u0000"}`, 400, "invalid", "content is binary, not text (an ELF executable): a NUL byte at offset 6"},
		{"edit not UTF-8", "PATCH", "/v1/memories/m-zzzzzzzz", "{\"content\": \"\xff\"}", 400, "invalid", "not UTF-8 text"},
		{"import not UTF-8", "POST", "/v1/import", "{\"type\":\"memory\",\"content\":\"\xff\"}\n", 400, "invalid", "line 1: not UTF-8 text: invalid byte 0xff at offset 28"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := raw(t, sock, tc.method, tc.path, tc.body)
			if status != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) || !strings.Contains(body, tc.want) {
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
	if _, err := c.Get(ctx, "m-zzzzzzzz"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Get unknown: %v, want ErrNotFound", err)
	}
	if _, err := c.Remember(ctx, api.RememberRequest{Content: "x", Namespace: "no spaces"}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("Remember bad namespace: %v, want ErrInvalid", err)
	}
	if _, err := NewClient(filepath.Join(t.TempDir(), "none.sock"), ClientOptions{}).Health(ctx); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("no daemon: %v, want ErrNoDaemon", err)
	}
}

// TestDiskFull serves a node on a disk with less free space than its
// reserve: writes answer 507 with code disk_full, which the client matches
// to api.ErrDiskFull, and reads go on.
func TestDiskFull(t *testing.T) {
	home := t.TempDir()
	n, err := node.New(node.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	c, _, sock := serveNode(t, node.Config{Home: home, MinFreeSpace: 1 << 60})
	status, body := raw(t, sock, http.MethodPost, "/v1/memories", `{"content":"refused on a full disk"}`)
	if status != http.StatusInsufficientStorage || !strings.Contains(body, `"code":"disk_full"`) || !strings.Contains(body, "free some space") {
		t.Fatalf("capture on a full disk: %d %s, want 507 with code disk_full", status, body)
	}
	ctx := context.Background()
	if _, err := c.Remember(ctx, api.RememberRequest{Content: "refused on a full disk"}); !errors.Is(err, api.ErrDiskFull) {
		t.Fatalf("client capture on a full disk: %v, want ErrDiskFull", err)
	}
	if _, err := c.List(ctx, api.ListRequest{}); err != nil {
		t.Fatalf("list on a full disk: %v", err)
	}
}

func TestClientRoundTrip(t *testing.T) {
	c, _, _ := testAPI(t)
	ctx := context.Background()
	res, err := c.Remember(ctx, api.RememberRequest{Namespace: "web", Content: "Serve the API on a unix socket with mode 0600"})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := c.Search(ctx, api.SearchRequest{Query: "unix socket", Namespace: "web"})
	if err != nil || len(hits.Results) != 1 || hits.Results[0].ID != res.ID {
		t.Fatalf("search: %+v %v", hits, err)
	}
	var export bytes.Buffer
	if h, err := c.Export(ctx, &export); err != nil || h.Memories != 1 || h.Format != api.ExportFormat {
		t.Fatalf("export: %+v %v", h, err)
	}
	other, _, _ := testAPI(t)
	if imp, err := other.Import(ctx, &export); err != nil || imp.Imported != 1 {
		t.Fatalf("import: %+v %v", imp, err)
	}
	if m, err := other.Get(ctx, res.ID); err != nil || m.Content != "Serve the API on a unix socket with mode 0600" {
		t.Fatalf("imported memory: %+v %v", m, err)
	}
}

func TestMeshCallsWithoutMesh(t *testing.T) {
	c, _, sock := testAPI(t)
	ctx := context.Background()
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/mesh/invite", `{}`},
		{"POST", "/v1/mesh/join", `{"token": "mmj1x"}`},
		{"POST", "/v1/mesh/rejoin", `{"addr": "127.0.0.1:7420"}`},
		{"GET", "/v1/mesh/peers", ""},
	} {
		status, body := raw(t, sock, tc.method, tc.path, tc.body)
		if status != http.StatusConflict || !strings.Contains(body, `"code":"no_mesh"`) {
			t.Errorf("%s %s: got %d %s, want 409 with code no_mesh", tc.method, tc.path, status, body)
		}
	}
	if _, err := c.Peers(ctx); !errors.Is(err, api.ErrNoMesh) {
		t.Errorf("Peers: %v, want ErrNoMesh", err)
	}
	if _, err := c.Invite(ctx, time.Hour); !errors.Is(err, api.ErrNoMesh) {
		t.Errorf("Invite: %v, want ErrNoMesh", err)
	}
	st, err := c.MeshStatus(ctx)
	if err != nil || st.Enabled || st.Device != c.DeviceID() {
		t.Errorf("MeshStatus = %+v, %v; want disabled, device %s", st, err, c.DeviceID())
	}
	if devices, err := c.Devices(ctx); err != nil || len(devices) != 0 {
		t.Errorf("Devices = %+v, %v; want none", devices, err)
	}
	if _, err := c.Revoke(ctx, "ABCDEF"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Revoke unknown: %v, want ErrNotFound", err)
	}
	// A namespace's policy is a record like any other: it needs no mesh.
	local, some, month, bad := model.SyncLocal, "some", "30d", "36h"
	r, err := c.SetNamespace(ctx, "Private", api.NamespaceChange{Sync: &local, StaleAfter: &month})
	if err != nil || r.Key != "private" || r.Sync != model.SyncLocal || r.StaleDays != 30 {
		t.Errorf("SetNamespace = %+v, %v", r, err)
	}
	for _, ch := range []api.NamespaceChange{{Sync: &some}, {StaleAfter: &bad}, {}} {
		if _, err := c.SetNamespace(ctx, "private", ch); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("SetNamespace %+v: %v, want ErrInvalid", ch, err)
		}
	}
}

// meshAPI serves a node that runs the mesh on 127.0.0.<host>.
func meshAPI(t *testing.T, host int, name string) *Client {
	t.Helper()
	c, _, _ := serveNode(t, node.Config{Home: t.TempDir(), Mesh: &mesh.Config{
		Listen:        fmt.Sprintf("127.0.0.%d:0", host),
		Name:          name,
		ProbeInterval: 200 * time.Millisecond,
		RetryInterval: 500 * time.Millisecond,
	}})
	return c
}

func TestMeshCalls(t *testing.T) {
	a, b := meshAPI(t, 1, "a"), meshAPI(t, 1, "b")
	ctx := context.Background()
	if _, err := a.Invite(ctx, time.Second); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("Invite for a second: %v, want ErrInvalid", err)
	}
	inv, err := a.Invite(ctx, 0)
	if err != nil || !strings.HasPrefix(inv.Token, "mmj1") || len(inv.Addrs) == 0 {
		t.Fatalf("Invite = %+v, %v", inv, err)
	}
	if d := time.Until(inv.Expires); d < 59*time.Minute || d > time.Hour {
		t.Errorf("invite expires in %v, want the default hour", d)
	}
	joined, err := b.Join(ctx, inv.Token)
	if err != nil || joined.Inviter != a.DeviceID() || joined.Devices != 2 {
		t.Fatalf("Join = %+v, %v", joined, err)
	}
	if _, err := b.Join(ctx, inv.Token); err == nil || !strings.Contains(err.Error(), "used") {
		t.Errorf("second use of a token: %v, want a refusal", err)
	}

	devices, err := a.Devices(ctx)
	if err != nil || len(devices) != 2 || !devices[0].Self || devices[1].Key != b.DeviceID() || devices[1].Name != "b" {
		t.Fatalf("Devices = %+v, %v", devices, err)
	}
	var peers []api.Peer
	testwait.Until(t, "b alive on a", func() bool {
		peers, err = a.Peers(ctx)
		return err == nil && len(peers) == 1 && peers[0].State == "alive"
	})
	if peers[0].Device != b.DeviceID() || peers[0].Name != "b" {
		t.Errorf("peer = %+v", peers[0])
	}
	st, err := a.MeshStatus(ctx)
	if err != nil || !st.Enabled || st.Name != "a" || st.Devices != 2 || st.Peers != 1 || st.Listen != inv.Addrs[0] {
		t.Errorf("MeshStatus = %+v, %v", st, err)
	}
	if k, err := b.JoinAddr(ctx, st.Listen); err != nil || k != 1 {
		t.Errorf("JoinAddr(%s) = %d, %v", st.Listen, k, err)
	}
	if _, err := b.JoinAddr(ctx, "not an address"); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("JoinAddr bad address: %v, want ErrInvalid", err)
	}

	revoked, err := a.Revoke(ctx, "b")
	if err != nil || revoked.Key != b.DeviceID() || !revoked.Revoked() {
		t.Fatalf("Revoke = %+v, %v", revoked, err)
	}
	if _, err := a.Revoke(ctx, a.DeviceID()); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("revoking this device: %v, want ErrInvalid", err)
	}
}

// TestListPagesAndDevice: a full page of the list answers the next
// page's cursor in a header, and the pages through memories of one
// millisecond hold each once; a cursor that is no cursor is a 400; the
// device filter of list and search reaches the node.
func TestListPagesAndDevice(t *testing.T) {
	c, n, sock := testAPI(t)
	ctx := context.Background()
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	for i := range 7 {
		if _, err := c.Remember(ctx, api.RememberRequest{Content: fmt.Sprintf("Burst %d", i), At: at}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	req := api.ListRequest{Limit: 3, Device: n.DeviceID()[:6]}
	for pages := 0; pages < 5; pages++ {
		page, err := c.ListPage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Memories {
			seen[m.ID]++
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	if len(seen) != 7 {
		t.Errorf("pages listed %d memories, want 7: %v", len(seen), seen)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s listed %d times", id, k)
		}
	}
	if code, body := raw(t, sock, "GET", "/v1/memories?cursor=garbage", ""); code != http.StatusBadRequest || !strings.Contains(body, "cursor") {
		t.Errorf("a bad cursor: %d %s", code, body)
	}
	if code, body := raw(t, sock, "GET", "/v1/memories?device=ZZZZZZ", ""); code != http.StatusNotFound {
		t.Errorf("an unknown device: %d %s", code, body)
	}
	res, err := c.Search(ctx, api.SearchRequest{Query: "burst", Device: strings.ToLower(n.DeviceID()[:8]), Limit: 20})
	if err != nil || len(res.Results) != 7 {
		t.Errorf("search of this device: %d results, %v", len(res.Results), err)
	}
}

// TestErrorsQuoteExcerpts: an error about a 60 KB value (a field's name,
// a parameter, an id, a filter) quotes an excerpt of it, without its
// secrets, never the whole value.
func TestErrorsQuoteExcerpts(t *testing.T) {
	_, _, sock := testAPI(t)
	const secret = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"
	huge := secret + "-" + strings.Repeat("!x", 30<<10)
	query := url.QueryEscape(huge)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/memories", `{"content": "x", "` + huge + `": 1}`},
		{"POST", "/v1/memories", `{"content": "x", "ttl": "` + huge + `"}`},
		{"GET", "/v1/memories?limit=" + query, ""},
		{"GET", "/v1/memories?since=" + query, ""},
		{"GET", "/v1/memories?status=" + query, ""},
		{"GET", "/v1/memories/m-" + query, ""},
		{"POST", "/v1/search", `{"query": "x", "tiers": ["` + huge + `"]}`},
		{"POST", "/v1/edges", `{"from": "` + huge + `", "rel": "related_to", "to": "file:a.go"}`},
		{"POST", "/v1/impact", `{"path": "` + huge + `"}`},
		{"POST", "/v1/symbols", `{"query": "` + huge + `"}`},
		{"POST", "/v1/symbols/index", `{"dir": "/` + huge + `"}`},
		{"GET", "/v1/sessions/" + query, ""},
		{"POST", "/v1/sessions/ingest", `{"client": "` + huge + `", "path": "/tmp/x.jsonl"}`},
		{"POST", "/v1/context", `{"format": "` + huge + `"}`},
	} {
		status, body := raw(t, sock, tc.method, tc.path, tc.body)
		if status/100 != 4 || len(body) > 1024 || strings.Contains(body, strings.Repeat("!x", 200)) || strings.Contains(body, secret) {
			t.Errorf("%s %.60s: %d, an answer of %d bytes: %.300s", tc.method, tc.path, status, len(body), body)
		}
	}
}

// TestShutdownLapses: a request to stop that reaches the daemon after its
// Before (its client stopped waiting, for a daemon that was suspended or
// stuck) is refused and stops nothing; one in time, or with no Before,
// stops the daemon.
func TestShutdownLapses(t *testing.T) {
	n, err := node.New(node.Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	stops := 0
	a := NewAPI(n, slog.New(slog.NewTextHandler(io.Discard, nil)), func() { stops++ })
	post := func(body string) (int, string) {
		t.Helper()
		w := httptest.NewRecorder()
		a.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/shutdown", strings.NewReader(body)))
		return w.Code, w.Body.String()
	}
	lapsed := fmt.Sprintf(`{"before": %q}`, time.Now().Add(-2*time.Second).Format(time.RFC3339Nano))
	if code, body := post(lapsed); code != http.StatusBadRequest || !strings.Contains(body, "keeps running") || stops != 0 {
		t.Fatalf("lapsed request: %d %s, %d stops; want 400 saying the daemon keeps running, and no stop", code, body, stops)
	}
	inTime := fmt.Sprintf(`{"before": %q}`, time.Now().Add(time.Hour).Format(time.RFC3339Nano))
	if code, body := post(inTime); code != http.StatusAccepted || stops != 1 {
		t.Fatalf("request in time: %d %s, %d stops; want 202 and a stop", code, body, stops)
	}
	if code, body := post(""); code != http.StatusAccepted || stops != 2 {
		t.Fatalf("request without a body: %d %s, %d stops; want 202 and a stop", code, body, stops)
	}
}
