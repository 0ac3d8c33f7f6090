package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/node"
)

// The node serves the MCP server in the daemon.
var _ Service = (*node.Node)(nil)

// testNamespace is the default namespace of the servers under test.
const testNamespace = "proj"

// testClient is the clientInfo the test clients send.
var testClient = mcpgo.Implementation{Name: "test-agent", Version: "1.2"}

// testLog routes logs to t.Log until the test ends.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func testLogger(tb testing.TB) *slog.Logger {
	tb.Helper()
	w := &testLog{t: tb}
	tb.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testNode starts a real node in a temporary home.
func testNode(tb testing.TB) *node.Node {
	tb.Helper()
	return startNode(tb, node.Config{Home: tb.TempDir(), Logger: testLogger(tb)})
}

// startNode starts a real node configured by cfg; it closes when the test
// ends.
func startNode(tb testing.TB, cfg node.Config) *node.Node {
	tb.Helper()
	if cfg.IndexFlushDelay == 0 { // a close need not wait out the index's gathering
		cfg.IndexFlushDelay = -1
	}
	n, err := node.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

func testServer(tb testing.TB, n *node.Node) *server.MCPServer {
	return NewServer(n, Options{Namespace: testNamespace, Logger: testLogger(tb), Version: "test"})
}

// serveStdio serves s over pipes with ServeStdio until the test ends, and
// returns the two ends a client uses. mcp-go has one stdio session per
// process, so tests that use it do not run in parallel.
func serveStdio(tb testing.TB, s *server.MCPServer) (io.Reader, io.WriteCloser) {
	tb.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(ctx, s, inR, outW, testLogger(tb))
		outW.Close()
	}()
	tb.Cleanup(func() {
		inW.Close()
		cancel()
		if err := <-done; err != nil && err != context.Canceled {
			tb.Errorf("stdio server: %v", err)
		}
	})
	return outR, inW
}

// connect serves the memmesh server for n over stdio and returns an
// initialized client. Options choose, e.g., the protocol era.
func connect(t *testing.T, n *node.Node, opts ...client.ClientOption) *client.Client {
	t.Helper()
	return connectAs(t, n, testClient, opts...)
}

// connectAs is connect for a client that introduces itself as info.
func connectAs(t *testing.T, n *node.Node, info mcpgo.Implementation, opts ...client.ClientOption) *client.Client {
	t.Helper()
	r, w := serveStdio(t, testServer(t, n))
	c, res := startClient(t, transport.NewIO(r, w, nil), info, opts...)
	if res.ServerInfo.Name != "memmesh" || res.Instructions == "" {
		t.Fatalf("initialize: server %+v, instructions %q", res.ServerInfo, res.Instructions)
	}
	return c
}

// startClient starts a client on tr, closed when the test ends, and
// initializes it as info.
func startClient(t *testing.T, tr transport.Interface, info mcpgo.Implementation, opts ...client.ClientOption) (*client.Client, *mcpgo.InitializeResult) {
	t.Helper()
	c := client.NewClient(tr, opts...)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var init mcpgo.InitializeRequest
	init.Params.ClientInfo = info
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, res
}

// eras are the two ways a client introduces itself: the initialize
// handshake, and _meta on every request (protocol 2026-07-28).
var eras = []struct {
	name   string
	modern bool
	opts   []client.ClientOption
}{
	{"handshake", false, []client.ClientOption{client.WithProtocolVersion(mcpgo.LATEST_LEGACY_PROTOCOL_VERSION)}},
	{"stateless", true, nil},
}

func callTool(t *testing.T, c *client.Client, name string, args any) *mcpgo.CallToolResult {
	t.Helper()
	var req mcpgo.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: protocol error %v; want a tool result", name, err)
	}
	return res
}

// call calls a tool that must succeed, decodes its structured result into
// out unless out is nil, and returns its text.
func call(t *testing.T, c *client.Client, name string, args map[string]any, out any) string {
	t.Helper()
	res := callTool(t, c, name, args)
	if res.IsError {
		t.Fatalf("%s %v: error result %q", name, args, resultText(res))
	}
	if out != nil {
		if len(res.RawStructuredContent) == 0 {
			t.Fatalf("%s: no structured content", name)
		}
		if err := json.Unmarshal(res.RawStructuredContent, out); err != nil {
			t.Fatalf("%s: decode structured content: %v", name, err)
		}
	}
	return resultText(res)
}

func resultText(res *mcpgo.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// maxToolsList bounds the JSON of the tools/list result (names,
// descriptions, input schemas), which an agent reads in every session.
const maxToolsList = 12_000

func TestListings(t *testing.T) {
	c := connect(t, testNode(t))
	ctx := context.Background()

	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		a := tool.Annotations
		if tool.Description == "" || a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("tool %s: description or annotations missing: %+v", tool.Name, a)
		}
		for arg, p := range tool.InputSchema.Properties {
			prop, _ := p.(map[string]any)
			if prop["type"] == nil || prop["description"] == nil {
				t.Errorf("tool %s: argument %s lacks a type or description: %v", tool.Name, arg, prop)
			}
		}
	}
	slices.Sort(names)
	want := []string{"compact_apply", "context", "forget", "get", "link", "recall", "remember", "review", "status", "traverse", "update"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	// Every session pays for the whole list: it must stay small.
	list, err := json.Marshal(tools)
	if err != nil || len(list) > maxToolsList {
		t.Errorf("tools/list is %d characters (%v), want at most %d", len(list), err, maxToolsList)
	}
	t.Logf("tools/list: %d characters, %d tokens (o200k_base)", len(list), tokens.Count(string(list)))

	resources, err := c.ListResources(ctx, mcpgo.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	if want := []string{contextURI, staleURI, statsURI}; !slices.Equal(uris, want) {
		t.Errorf("resources = %v, want %v", uris, want)
	}
	templates, err := c.ListResourceTemplates(ctx, mcpgo.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate.Raw() != memoryURITemplate {
		t.Errorf("resource templates = %+v", templates.ResourceTemplates)
	}

	prompts, err := c.ListPrompts(ctx, mcpgo.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var promptNames []string
	for _, p := range prompts.Prompts {
		promptNames = append(promptNames, p.Name)
	}
	slices.Sort(promptNames)
	if want := []string{"capture", "recall_context", "session_handoff"}; !slices.Equal(promptNames, want) {
		t.Errorf("prompts = %v, want %v", promptNames, want)
	}
}

func TestProvenance(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			n := testNode(t)
			c := connect(t, n, era.opts...)
			if got := mcpgo.IsModernProtocol(c.ProtocolVersion()); got != era.modern {
				t.Fatalf("protocol %s: modern = %v, want %v", c.ProtocolVersion(), got, era.modern)
			}
			var out rememberData
			call(t, c, "remember", map[string]any{"content": "Run migrations with goose, never by hand."}, &out)
			m, err := n.Get(context.Background(), out.ID)
			if err != nil {
				t.Fatal(err)
			}
			p := m.Provenance
			if p.Agent != "test-agent/1.2" || !strings.HasPrefix(p.Session, "stdio-") || p.Device != n.DeviceID() {
				t.Errorf("provenance = %+v, want agent test-agent/1.2, a stdio session, device %s", p, n.DeviceID())
			}
			if m.Tier != model.TierAgent || m.Namespace != testNamespace {
				t.Errorf("tier %s, namespace %s; want agent, %s", m.Tier, m.Namespace, testNamespace)
			}
			var st statusData
			call(t, c, "status", nil, &st)
			if st.Agent != p.Agent || st.Session != p.Session {
				t.Errorf("status shows agent %q session %q; the memory has %q %q", st.Agent, st.Session, p.Agent, p.Session)
			}
		})
	}
}

// TestProvenanceHoldsNoClientSecret connects a client whose name and
// version hold tokens, the name long enough that the agent recorded is cut:
// neither the memories it writes nor status show any part of the tokens.
func TestProvenanceHoldsNoClientSecret(t *testing.T) {
	const (
		ghToken = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"
		npm     = "npm_NUhJduRHHJEYXg4JdpmrcXgGCJbW56eCuNGM"
	)
	n := testNode(t)
	c := connectAs(t, n, mcpgo.Implementation{Name: "agent with a long name that pastes its token " + ghToken, Version: npm})
	var out rememberData
	call(t, c, "remember", map[string]any{"content": "Tokens live in the keychain."}, &out)
	m, err := n.Get(context.Background(), out.ID)
	if err != nil {
		t.Fatal(err)
	}
	var st statusData
	text := call(t, c, "status", nil, &st)
	for _, s := range []string{m.Provenance.Agent, st.Agent, text} {
		for _, token := range []string{ghToken, npm} {
			if part := token[:12]; strings.Contains(s, part) {
				t.Errorf("%q holds %q of a token", s, part)
			}
		}
	}
	if !strings.HasPrefix(m.Provenance.Agent, "agent with a long name") {
		t.Errorf("agent %q, want the client's name without its token", m.Provenance.Agent)
	}
}

// rawSession speaks JSON-RPC lines to a stdio server.
type rawSession struct {
	t *testing.T
	r *bufio.Reader
	w io.Writer
}

func (s *rawSession) send(line string) map[string]any {
	s.t.Helper()
	if _, err := io.WriteString(s.w, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		l, _ := s.r.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		var msg map[string]any
		if err := json.Unmarshal([]byte(l), &msg); err != nil {
			s.t.Fatalf("answer to %q is not JSON: %q", line, l)
		}
		return msg
	case <-time.After(testwait.Limit):
		s.t.Fatalf("no answer to %q in %s", line, testwait.Limit)
		return nil
	}
}

func errorCode(msg map[string]any) float64 {
	e, _ := msg["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

func TestMalformedJSONRPC(t *testing.T) {
	n := testNode(t)
	r, w := serveStdio(t, testServer(t, n))
	s := &rawSession{t: t, r: bufio.NewReader(r), w: w}
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)

	for _, tc := range []struct {
		name, line string
		code       float64
	}{
		{"garbage", "this is not json", mcpgo.PARSE_ERROR},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember"`, mcpgo.PARSE_ERROR},
		{"wrong version", `{"jsonrpc":"1.0","id":2,"method":"ping"}`, mcpgo.INVALID_REQUEST},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"memories/steal"}`, mcpgo.METHOD_NOT_FOUND},
		{"unknown tool", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"drop_everything","arguments":{}}}`, mcpgo.INVALID_PARAMS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := s.send(tc.line)
			if got := errorCode(msg); got != tc.code {
				t.Errorf("error code %v, want %v (answer %v)", got, tc.code, msg)
			}
			// The server keeps serving.
			if pong := s.send(`{"jsonrpc":"2.0","id":99,"method":"ping"}`); pong["result"] == nil {
				t.Fatalf("ping after %s: %v", tc.name, pong)
			}
		})
	}
	st, err := n.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Memories != 0 {
		t.Errorf("%d memories stored by malformed requests", st.Memories)
	}
}

func TestListenLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := ListenLoopback(addr)
		if err != nil {
			t.Errorf("ListenLoopback(%q): %v", addr, err)
			continue
		}
		ln.Close()
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:7421", "example.com:7421", "127.0.0.1"} {
		if ln, err := ListenLoopback(addr); err == nil {
			ln.Close()
			t.Errorf("ListenLoopback(%q) accepted a non-loopback address", addr)
		}
	}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"http-test","version":"1"}}}`

func TestHTTPLocalOnly(t *testing.T) {
	h, err := NewHTTPServer(testServer(t, testNode(t)), testToken, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		h.Shutdown(context.Background())
	})
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())

	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"ip", "127.0.0.1:" + port, "", http.StatusOK},
		{"localhost", "localhost:" + port, "", http.StatusOK},
		{"ipv6", "[::1]:" + port, "", http.StatusOK},
		{"local origin", "127.0.0.1:" + port, "http://localhost:3000", http.StatusOK},
		{"same origin", "127.0.0.1:" + port, "http://127.0.0.1:" + port, http.StatusOK},
		{"rebound name", "attacker.example:" + port, "", http.StatusForbidden},
		{"rebound name and origin", "attacker.example:" + port, "http://attacker.example:" + port, http.StatusForbidden},
		{"other port", "127.0.0.1:1", "", http.StatusForbidden},
		{"no port", "localhost", "", http.StatusForbidden},
		{"foreign origin", "127.0.0.1:" + port, "https://attacker.example", http.StatusForbidden},
		{"lookalike origin", "localhost:" + port, "http://localhost.attacker.example", http.StatusForbidden},
		{"null origin", "localhost:" + port, "null", http.StatusForbidden},
		{"file origin", "localhost:" + port, "file://", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, ts.URL+HTTPPath, strings.NewReader(initializeBody))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tc.host
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.want, body)
			}
		})
	}
}

func TestHTTPRoundTrip(t *testing.T) {
	n := testNode(t)
	h, err := NewHTTPServer(testServer(t, n), testToken, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(ln) }()

	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			c := httpClient(t, "http://"+ln.Addr().String(), testToken, era.opts...)
			ctx := context.Background()
			if got := mcpgo.IsModernProtocol(c.ProtocolVersion()); got != era.modern {
				t.Fatalf("protocol %s: modern = %v, want %v", c.ProtocolVersion(), got, era.modern)
			}
			var out rememberData
			call(t, c, "remember", map[string]any{"content": "HTTP clients share the daemon's node (" + era.name + ")."}, &out)
			m, err := n.Get(ctx, out.ID)
			if err != nil {
				t.Fatal(err)
			}
			if m.Provenance.Agent != "test-agent/1.2" {
				t.Errorf("agent = %q, want test-agent/1.2", m.Provenance.Agent)
			}
			if era.name == "handshake" && !strings.HasPrefix(m.Provenance.Session, "mcp-session-") {
				t.Errorf("session = %q, want the HTTP session id", m.Provenance.Session)
			}
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestDiskFull serves a node on a disk with less free space than its
// reserve: a write tool fails with a result that says the disk is full,
// that nothing was stored and that reading still works; reading tools
// answer.
func TestDiskFull(t *testing.T) {
	home := t.TempDir()
	n := startNode(t, node.Config{Home: home, Logger: testLogger(t)})
	var kept api.RememberResult
	c := connect(t, n)
	call(t, c, "remember", map[string]any{"content": "written while the disk had space"}, &kept)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	c = connect(t, startNode(t, node.Config{Home: home, Logger: testLogger(t), MinFreeSpace: 1 << 60}))

	res := callTool(t, c, "remember", map[string]any{"content": "refused on a full disk"})
	text := resultText(res)
	if !res.IsError || !strings.HasPrefix(text, "disk full: ") || !strings.Contains(text, "Nothing was stored") || !strings.Contains(text, "still works") {
		t.Fatalf("remember on a full disk: error %v, %q", res.IsError, text)
	}
	if text := call(t, c, "recall", map[string]any{"query": "written disk"}, nil); !strings.Contains(text, kept.ShortID) {
		t.Fatalf("recall on a full disk does not find %s: %q", kept.ShortID, text)
	}
}
