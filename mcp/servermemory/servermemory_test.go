package servermemory

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/mcp"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/node"
)

// The node serves the profile in the daemon; mcp names its clients.
var (
	_ Service = (*node.Node)(nil)
	_ Callers = (*mcp.Callers)(nil)
)

// serverMemoryTestNode starts a real node on a temporary home.
func serverMemoryTestNode(t *testing.T) *node.Node {
	t.Helper()
	return serverMemoryStartNode(t, node.Config{Home: t.TempDir(), Logger: serverMemoryTestLogger(t)})
}

// serverMemoryMeshNode starts a real node on a temporary home with the
// mesh on, on loopback.
func serverMemoryMeshNode(t *testing.T, name string) *node.Node {
	t.Helper()
	return serverMemoryStartNode(t, node.Config{Home: t.TempDir(), Logger: serverMemoryTestLogger(t), Mesh: &mesh.Config{
		Listen: "127.0.0.1:0", Name: name, ProbeInterval: 200 * time.Millisecond, RetryInterval: 500 * time.Millisecond,
	}})
}

// serverMemoryStartNode starts a real node configured by cfg; it closes
// when the test ends.
func serverMemoryStartNode(t *testing.T, cfg node.Config) *node.Node {
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
	t.Cleanup(func() { n.Close() })
	return n
}

// serverMemoryTestWriter routes logs to the test's log.
type serverMemoryTestWriter struct{ t *testing.T }

func (w serverMemoryTestWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func serverMemoryTestLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(serverMemoryTestWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// serverMemorySession is a client talking JSON-RPC to the profile over
// stdio pipes, as an MCP client process would.
type serverMemorySession struct {
	t     *testing.T
	in    io.Writer
	lines chan []byte // what the server writes, line by line
	next  int
}

// serverMemoryConnect serves the profile for svc over pipes and
// initializes a session with it.
func serverMemoryConnect(t *testing.T, svc Service, ns string) *serverMemorySession {
	t.Helper()
	srv := New(svc, mcp.NewCallers(), Options{Namespace: ns, Logger: serverMemoryTestLogger(t)})
	stdio := server.NewStdioServer(srv)
	stdio.SetErrorLogger(log.New(serverMemoryTestWriter{t}, "", 0))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- stdio.Listen(ctx, inR, outW)
		outW.Close()
	}()
	s := &serverMemorySession{t: t, in: inW, lines: make(chan []byte, 64)}
	go func() {
		defer close(s.lines)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			s.lines <- line
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		outR.Close()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("stdio server: %v", err)
		}
	})
	s.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "test-client", "version": "1.0"},
	})
	s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return s
}

func (s *serverMemorySession) send(msg any) {
	s.t.Helper()
	data, err := json.Marshal(msg)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.in.Write(append(data, '\n')); err != nil {
		s.t.Fatalf("send: %v", err)
	}
}

// serverMemoryAnswer is a JSON-RPC response.
type serverMemoryAnswer struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answer returns the next response to id (nil: to no request), skipping
// other messages.
func (s *serverMemorySession) answer(id any) serverMemoryAnswer {
	s.t.Helper()
	timeout := time.After(testwait.Limit)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatal("the server closed its output")
			}
			var a serverMemoryAnswer
			if err := json.Unmarshal(line, &a); err != nil {
				s.t.Fatalf("bad answer %q: %v", line, err)
			}
			if fmt.Sprint(a.ID) == fmt.Sprint(id) && (a.Result != nil || a.Error != nil) {
				return a
			}
		case <-timeout:
			s.t.Fatalf("no answer to request %v", id)
		}
	}
}

// request sends a request and returns its result.
func (s *serverMemorySession) request(method string, params any) json.RawMessage {
	s.t.Helper()
	s.next++
	s.send(map[string]any{"jsonrpc": "2.0", "id": s.next, "method": method, "params": params})
	a := s.answer(s.next)
	if a.Error != nil {
		s.t.Fatalf("%s: JSON-RPC error %d: %s", method, a.Error.Code, a.Error.Message)
	}
	return a.Result
}

// serverMemoryCall is a tool result as it crossed the wire.
type serverMemoryCall struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
}

func (c serverMemoryCall) text() string {
	if len(c.Content) != 1 || c.Content[0].Type != "text" {
		return fmt.Sprintf("unexpected content %+v", c.Content)
	}
	return c.Content[0].Text
}

// call calls a tool; args is encoded as JSON as it is.
func (s *serverMemorySession) call(tool string, args any) serverMemoryCall {
	s.t.Helper()
	raw := s.request("tools/call", map[string]any{"name": tool, "arguments": args})
	var c serverMemoryCall
	if err := json.Unmarshal(raw, &c); err != nil {
		s.t.Fatalf("%s: %v in %s", tool, err, raw)
	}
	return c
}

// ok calls a tool that must succeed and decodes its structured content
// into out (when out is not nil).
func (s *serverMemorySession) ok(tool string, args, out any) serverMemoryCall {
	s.t.Helper()
	c := s.call(tool, args)
	if c.IsError {
		s.t.Fatalf("%s: error result: %s", tool, c.text())
	}
	if out != nil {
		if err := json.Unmarshal(c.Structured, out); err != nil {
			s.t.Fatalf("%s: structured content %s: %v", tool, c.Structured, err)
		}
	}
	return c
}

// graph reads the whole graph and checks that the text and the structured
// content agree.
func (s *serverMemorySession) graph() Graph {
	s.t.Helper()
	var g Graph
	c := s.ok("read_graph", map[string]any{}, &g)
	var fromText Graph
	if err := json.Unmarshal([]byte(c.text()), &fromText); err != nil || !reflect.DeepEqual(fromText, g) {
		s.t.Fatalf("read_graph text %q does not match its structured content %s (%v)", c.text(), c.Structured, err)
	}
	return g
}

func serverMemoryJSONOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// serverMemoryOfficialTools is what the official server's tools/list
// answers (version 2026.8.31), less its "$schema" keys.
const serverMemoryOfficialTools = `[
{"name":"create_entities","title":"Create Entities","description":"Create multiple new entities in the knowledge graph","inputSchema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","description":"The name of the entity"},"entityType":{"type":"string","description":"The type of the entity"},"observations":{"type":"array","items":{"type":"string"},"description":"An array of observation contents associated with the entity"}},"required":["name","entityType","observations"]}}},"required":["entities"]},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","description":"The name of the entity"},"entityType":{"type":"string","description":"The type of the entity"},"observations":{"type":"array","items":{"type":"string"},"description":"An array of observation contents associated with the entity"}},"required":["name","entityType","observations"],"additionalProperties":false}}},"required":["entities"],"additionalProperties":false}},
{"name":"create_relations","title":"Create Relations","description":"Create multiple new relations between entities in the knowledge graph. Relations should be in active voice","inputSchema":{"type":"object","properties":{"relations":{"type":"array","items":{"type":"object","properties":{"from":{"type":"string","description":"The name of the entity where the relation starts"},"to":{"type":"string","description":"The name of the entity where the relation ends"},"relationType":{"type":"string","description":"The type of the relation"}},"required":["from","to","relationType"]}}},"required":["relations"]},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"relations":{"type":"array","items":{"type":"object","properties":{"from":{"type":"string","description":"The name of the entity where the relation starts"},"to":{"type":"string","description":"The name of the entity where the relation ends"},"relationType":{"type":"string","description":"The type of the relation"}},"required":["from","to","relationType"],"additionalProperties":false}}},"required":["relations"],"additionalProperties":false}},
{"name":"add_observations","title":"Add Observations","description":"Add new observations to existing entities in the knowledge graph","inputSchema":{"type":"object","properties":{"observations":{"type":"array","items":{"type":"object","properties":{"entityName":{"type":"string","description":"The name of the entity to add the observations to"},"contents":{"type":"array","items":{"type":"string"},"description":"An array of observation contents to add"}},"required":["entityName","contents"]}}},"required":["observations"]},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"results":{"type":"array","items":{"type":"object","properties":{"entityName":{"type":"string"},"addedObservations":{"type":"array","items":{"type":"string"}}},"required":["entityName","addedObservations"],"additionalProperties":false}}},"required":["results"],"additionalProperties":false}},
{"name":"delete_entities","title":"Delete Entities","description":"Delete multiple entities and their associated relations from the knowledge graph","inputSchema":{"type":"object","properties":{"entityNames":{"type":"array","items":{"type":"string"},"description":"An array of entity names to delete"}},"required":["entityNames"]},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"success":{"type":"boolean"},"message":{"type":"string"}},"required":["success","message"],"additionalProperties":false}},
{"name":"delete_observations","title":"Delete Observations","description":"Delete specific observations from entities in the knowledge graph","inputSchema":{"type":"object","properties":{"deletions":{"type":"array","items":{"type":"object","properties":{"entityName":{"type":"string","description":"The name of the entity containing the observations"},"observations":{"type":"array","items":{"type":"string"},"description":"An array of observations to delete"}},"required":["entityName","observations"]}}},"required":["deletions"]},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"success":{"type":"boolean"},"message":{"type":"string"}},"required":["success","message"],"additionalProperties":false}},
{"name":"delete_relations","title":"Delete Relations","description":"Delete multiple relations from the knowledge graph","inputSchema":{"type":"object","properties":{"relations":{"type":"array","items":{"type":"object","properties":{"from":{"type":"string","description":"The name of the entity where the relation starts"},"to":{"type":"string","description":"The name of the entity where the relation ends"},"relationType":{"type":"string","description":"The type of the relation"}},"required":["from","to","relationType"]},"description":"An array of relations to delete"}},"required":["relations"]},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"success":{"type":"boolean"},"message":{"type":"string"}},"required":["success","message"],"additionalProperties":false}},
{"name":"read_graph","title":"Read Graph","description":"Read the entire knowledge graph","inputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","description":"The name of the entity"},"entityType":{"type":"string","description":"The type of the entity"},"observations":{"type":"array","items":{"type":"string"},"description":"An array of observation contents associated with the entity"}},"required":["name","entityType","observations"],"additionalProperties":false}},"relations":{"type":"array","items":{"type":"object","properties":{"from":{"type":"string","description":"The name of the entity where the relation starts"},"to":{"type":"string","description":"The name of the entity where the relation ends"},"relationType":{"type":"string","description":"The type of the relation"}},"required":["from","to","relationType"],"additionalProperties":false}}},"required":["entities","relations"],"additionalProperties":false}},
{"name":"search_nodes","title":"Search Nodes","description":"Search for nodes in the knowledge graph based on a query","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"The search query to match against entity names, types, and observation content"}},"required":["query"]},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","description":"The name of the entity"},"entityType":{"type":"string","description":"The type of the entity"},"observations":{"type":"array","items":{"type":"string"},"description":"An array of observation contents associated with the entity"}},"required":["name","entityType","observations"],"additionalProperties":false}},"relations":{"type":"array","items":{"type":"object","properties":{"from":{"type":"string","description":"The name of the entity where the relation starts"},"to":{"type":"string","description":"The name of the entity where the relation ends"},"relationType":{"type":"string","description":"The type of the relation"}},"required":["from","to","relationType"],"additionalProperties":false}}},"required":["entities","relations"],"additionalProperties":false}},
{"name":"open_nodes","title":"Open Nodes","description":"Open specific nodes in the knowledge graph by their names","inputSchema":{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"},"description":"An array of entity names to retrieve"}},"required":["names"]},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","description":"The name of the entity"},"entityType":{"type":"string","description":"The type of the entity"},"observations":{"type":"array","items":{"type":"string"},"description":"An array of observation contents associated with the entity"}},"required":["name","entityType","observations"],"additionalProperties":false}},"relations":{"type":"array","items":{"type":"object","properties":{"from":{"type":"string","description":"The name of the entity where the relation starts"},"to":{"type":"string","description":"The name of the entity where the relation ends"},"relationType":{"type":"string","description":"The type of the relation"}},"required":["from","to","relationType"],"additionalProperties":false}}},"required":["entities","relations"],"additionalProperties":false}}
]`

func TestServerMemoryToolsMatchTheOfficialServer(t *testing.T) {
	s := serverMemoryConnect(t, serverMemoryTestNode(t), "")
	var want []map[string]any
	if err := json.Unmarshal([]byte(serverMemoryOfficialTools), &want); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(s.request("tools/list", map[string]any{}), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(list.Tools), len(want))
	}
	got := map[string]map[string]any{}
	for _, tool := range list.Tools {
		for _, schema := range []string{"inputSchema", "outputSchema"} {
			if s, ok := tool[schema].(map[string]any); !ok || s["$schema"] != "http://json-schema.org/draft-07/schema#" {
				t.Errorf("%s %s: $schema missing", tool["name"], schema)
			} else {
				delete(s, "$schema")
			}
		}
		got[tool["name"].(string)] = tool
	}
	for _, w := range want {
		name := w["name"].(string)
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("tool %s:\n got %s\nwant %s", name, serverMemoryJSONOf(t, got[name]), serverMemoryJSONOf(t, w))
		}
	}
}

// serverMemoryStep is one call of a scripted workload and the answer the
// official server gives to it. "⏎" in text stands for U+2028.
type serverMemoryStep struct {
	tool    string
	args    string
	text    string
	isError bool
}

// serverMemoryWorkload holds calls and the answers of the official server
// (version 2026.8.31) to them; memmesh must answer the same, word for word.
var serverMemoryWorkload = []serverMemoryStep{
	{tool: "create_entities", args: `{"entities":[{"name":"Alice","entityType":"person","observations":["likes <tea> & \"cake\"","x\u2028y"]},{"name":"Bob","entityType":"person","observations":["a","a"]},{"name":"Works Inc","entityType":"company","observations":[]}]}`,
		text: `[
  {
    "name": "Alice",
    "entityType": "person",
    "observations": [
      "likes <tea> & \"cake\"",
      "x⏎y"
    ]
  },
  {
    "name": "Bob",
    "entityType": "person",
    "observations": [
      "a",
      "a"
    ]
  },
  {
    "name": "Works Inc",
    "entityType": "company",
    "observations": []
  }
]`},
	{tool: "create_entities", args: `{"entities":[{"name":"Alice","entityType":"other","observations":[]}]}`, text: `[]`},
	{tool: "create_relations", args: `{"relations":[{"from":"Alice","to":"Bob","relationType":"knows"},{"from":"Alice","to":"Works Inc","relationType":"Works At"},{"from":"Bob","to":"Works Inc","relationType":"works_at"}]}`,
		text: `[
  {
    "from": "Alice",
    "to": "Bob",
    "relationType": "knows"
  },
  {
    "from": "Alice",
    "to": "Works Inc",
    "relationType": "Works At"
  },
  {
    "from": "Bob",
    "to": "Works Inc",
    "relationType": "works_at"
  }
]`},
	{tool: "create_relations", args: `{"relations":[{"from":"Alice","to":"Bob","relationType":"knows"}]}`, text: `[]`},
	{tool: "add_observations", args: `{"observations":[{"entityName":"Bob","contents":["a","b","b"]},{"entityName":"Bob","contents":["b","c"]}]}`,
		text: `[
  {
    "entityName": "Bob",
    "addedObservations": [
      "b",
      "b"
    ]
  },
  {
    "entityName": "Bob",
    "addedObservations": [
      "c"
    ]
  }
]`},
	{tool: "add_observations", args: `{"observations":[{"entityName":"Bob","contents":["z"]},{"entityName":"Nope","contents":["q"]}]}`,
		text: `Entity with name Nope not found`, isError: true},
	{tool: "search_nodes", args: `{"query":"WORKS"}`,
		text: `{
  "entities": [
    {
      "name": "Works Inc",
      "entityType": "company",
      "observations": []
    }
  ],
  "relations": [
    {
      "from": "Alice",
      "to": "Works Inc",
      "relationType": "Works At"
    },
    {
      "from": "Bob",
      "to": "Works Inc",
      "relationType": "works_at"
    }
  ]
}`},
	{tool: "open_nodes", args: `{"names":["Bob","Nobody"]}`,
		text: `{
  "entities": [
    {
      "name": "Bob",
      "entityType": "person",
      "observations": [
        "a",
        "a",
        "b",
        "b",
        "c"
      ]
    }
  ],
  "relations": [
    {
      "from": "Alice",
      "to": "Bob",
      "relationType": "knows"
    },
    {
      "from": "Bob",
      "to": "Works Inc",
      "relationType": "works_at"
    }
  ]
}`},
	{tool: "delete_observations", args: `{"deletions":[{"entityName":"Bob","observations":["a"]},{"entityName":"Zed","observations":["x"]}]}`,
		text: `Observations deleted successfully`},
	{tool: "delete_relations", args: `{"relations":[{"from":"Alice","to":"Bob","relationType":"knows"},{"from":"X","to":"Y","relationType":"z"}]}`,
		text: `Relations deleted successfully`},
	{tool: "read_graph", args: `{}`,
		text: `{
  "entities": [
    {
      "name": "Alice",
      "entityType": "person",
      "observations": [
        "likes <tea> & \"cake\"",
        "x⏎y"
      ]
    },
    {
      "name": "Bob",
      "entityType": "person",
      "observations": [
        "b",
        "b",
        "c"
      ]
    },
    {
      "name": "Works Inc",
      "entityType": "company",
      "observations": []
    }
  ],
  "relations": [
    {
      "from": "Alice",
      "to": "Works Inc",
      "relationType": "Works At"
    },
    {
      "from": "Bob",
      "to": "Works Inc",
      "relationType": "works_at"
    }
  ]
}`},
	{tool: "delete_entities", args: `{"entityNames":["Works Inc","Zed"]}`, text: `Entities deleted successfully`},
	{tool: "read_graph", args: `{}`,
		text: `{
  "entities": [
    {
      "name": "Alice",
      "entityType": "person",
      "observations": [
        "likes <tea> & \"cake\"",
        "x⏎y"
      ]
    },
    {
      "name": "Bob",
      "entityType": "person",
      "observations": [
        "b",
        "b",
        "c"
      ]
    }
  ],
  "relations": []
}`},
}

// TestServerMemoryWorkload runs a workload through every tool and compares
// each answer, text and structured content, with the official server's.
func TestServerMemoryWorkload(t *testing.T) {
	n := serverMemoryTestNode(t)
	s := serverMemoryConnect(t, n, "")
	var worksInc string // the id of the memory of an entity deleted at the end
	for i, step := range serverMemoryWorkload {
		c := s.call(step.tool, json.RawMessage(step.args))
		if i == 0 {
			mems, err := n.List(context.Background(), api.ListRequest{Namespace: DefaultNamespace})
			if err != nil || len(mems) != 3 {
				t.Fatalf("%d memories (%v) after creating 3 entities", len(mems), err)
			}
			worksInc = mems[slices.IndexFunc(mems, func(m api.Memory) bool { return m.Title == "Works Inc" })].ID
		}
		want := strings.ReplaceAll(step.text, "⏎", "\u2028")
		if c.text() != want || c.IsError != step.isError {
			t.Fatalf("step %d %s %s:\n got (error %v) %s\nwant (error %v) %s", i, step.tool, step.args, c.IsError, c.text(), step.isError, want)
		}
		switch {
		case step.isError:
			if c.Structured != nil {
				t.Errorf("step %d: error result with structured content %s", i, c.Structured)
			}
		case strings.HasPrefix(step.tool, "delete_"):
			if got := string(c.Structured); got != `{"success":true,"message":"`+want+`"}` {
				t.Errorf("step %d: structured content %s", i, got)
			}
		default:
			var text, structured any
			if err := json.Unmarshal([]byte(want), &text); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(c.Structured, &structured); err != nil {
				t.Fatalf("step %d: structured content %s: %v", i, c.Structured, err)
			}
			if key := map[string]string{"create_entities": "entities", "create_relations": "relations", "add_observations": "results"}[step.tool]; key != "" {
				text = map[string]any{key: text}
			}
			if !reflect.DeepEqual(structured, text) {
				t.Errorf("step %d %s: structured content %s, want %s", i, step.tool, c.Structured, serverMemoryJSONOf(t, text))
			}
		}
	}

	// The graph is stored as described in the package comment.
	mems, err := n.List(context.Background(), api.ListRequest{Namespace: DefaultNamespace, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(mems) != 2 {
		t.Fatalf("%d memories in the namespace, want 2", len(mems))
	}
	bob := mems[slices.IndexFunc(mems, func(m api.Memory) bool { return m.Title == "Bob" })]
	if bob.Content != "entity: \"Bob\"\ntype: person\n- b\n- b\n- c" || bob.Kind != "entity" || bob.Tier != model.TierAgent ||
		!bob.Evergreen || !bob.ExpiresAt.IsZero() || bob.Provenance.Agent != "test-client/1.0" || !strings.HasPrefix(bob.Provenance.Session, "stdio-") || len(bob.Revisions) != 3 {
		t.Errorf("Bob's memory: %+v", bob.Memory)
	}
	for _, r := range bob.Revisions {
		if r.Agent != "test-client/1.0" {
			t.Errorf("Bob's revision %s written by agent %q, want the client's", r.ID, r.Agent)
		}
	}
	if m, err := n.Get(context.Background(), worksInc); err != nil || m.Status != model.StatusDeleted {
		t.Errorf("Works Inc's memory: %v, status %s; want deleted", err, m.Status)
	}
}

// serverMemoryOddEntities have names, types and observations that a line
// format could easily get wrong.
var serverMemoryOddEntities = []Entity{
	{Name: "", EntityType: "", Observations: []string{}},
	{Name: "a b", EntityType: "t", Observations: []string{"o"}},
	{Name: "a  b", EntityType: "t", Observations: []string{"o"}},
	{Name: " a b ", EntityType: "t", Observations: []string{"o"}},
	{Name: "a\tb", EntityType: "t", Observations: []string{"o"}},
	{Name: "a\u00a0b", EntityType: "t", Observations: []string{"o"}},
	{Name: "x type: y", EntityType: "z", Observations: []string{}},
	{Name: "x", EntityType: "y type: z", Observations: []string{}},
	{Name: "line one\nline two", EntityType: "multi\nline", Observations: []string{"a\nb"}},
	{Name: `"quoted"`, EntityType: `"`, Observations: []string{`"`, `""`, `"x"`, `say "hi"`}},
	{Name: `back\slash \n`, EntityType: `\`, Observations: []string{`\x20`, `C:\path`}},
	{Name: "日本語の名前 😀", EntityType: "Ünïcödé", Observations: []string{"emoji 🎉 and ß", "\u2028\u2029", "\u200b zero width"}},
	{Name: "dashes", EntityType: "- ", Observations: []string{"- leading dash", "-", "- ", "--", "-x"}},
	{Name: "fields", EntityType: "type: person", Observations: []string{"entity: other", "type: x", "entity:", "type:"}},
	{Name: "blanks", EntityType: " ", Observations: []string{"", " ", "  ", "\t", "\n", "\r\n", "trailing  ", "  leading", "in  between"}},
	{Name: "controls", EntityType: "\x00", Observations: []string{"nul\x00byte", "bell\a", "\x7f", "\r"}},
	{Name: "multi-line", EntityType: "note", Observations: []string{"first\n  indented\n\n- not an observation\nlast\n"}},
	{Name: "duplicates", EntityType: "t", Observations: []string{"same", "same", "Same"}},
	{Name: strings.Repeat("long name ", 40), EntityType: "t", Observations: []string{strings.Repeat("x", 5000)}},
}

func TestServerMemoryContentRoundTrip(t *testing.T) {
	hashes := map[string]string{}
	for _, e := range serverMemoryOddEntities {
		content, err := serverMemoryContent(e)
		if err != nil {
			t.Fatalf("%q: %v", e.Name, err)
		}
		if content != strings.TrimSpace(content) {
			t.Errorf("%q: content %q has surrounding white space", e.Name, content)
		}
		if got := serverMemoryDecode(content, "title"); !reflect.DeepEqual(got, e) {
			t.Errorf("round trip of %q:\n got %#v\nwant %#v\ncontent %q", e.Name, got, e, content)
		}
		// memmesh's duplicate detection compares content with white space
		// collapsed: no two entities may look the same to it.
		key := strings.Join(strings.Fields(content), " ")
		if other, ok := hashes[key]; ok {
			t.Errorf("entities %q and %q have the same content for duplicate detection", other, e.Name)
		}
		hashes[key] = e.Name
	}

	want := "entity: \"John Smith\"\ntype: person\n- Speaks fluent Spanish\n- \"Graduated in 2019\\nwith honours\"\n- \"\\x20\\x20padded\\x20\\x20\"\n- \"\""
	e := Entity{Name: "John Smith", EntityType: "person", Observations: []string{"Speaks fluent Spanish", "Graduated in 2019\nwith honours", "  padded  ", ""}}
	if got, _ := serverMemoryContent(e); got != want {
		t.Errorf("content:\n got %q\nwant %q", got, want)
	}
}

func TestServerMemoryDecodeOtherText(t *testing.T) {
	tests := []struct {
		name, content, title string
		want                 Entity
	}{
		{"free text", "Some note\n\nwritten by hand", "Title", Entity{Name: "Title", Observations: []string{"Some note", "written by hand"}}},
		{"no type line", "entity: \"N\"\n- a", "T", Entity{Name: "N", Observations: []string{"a"}}},
		{"broken quote", "entity: \"N\ntype: \"t\n- \"o", "T", Entity{Name: `"N`, EntityType: `"t`, Observations: []string{`"o`}}},
		{"windows line ends", "entity: \"N\"\r\ntype: t\r\n- a\r\n", "T", Entity{Name: "N", EntityType: "t", Observations: []string{"a"}}},
		{"bare keys", "entity:\ntype:\n-", "T", Entity{Observations: []string{""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serverMemoryDecode(tt.content, tt.title); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestServerMemoryOddEntities stores the odd entities through the tools
// and reads them back unchanged.
func TestServerMemoryOddEntities(t *testing.T) {
	s := serverMemoryConnect(t, serverMemoryTestNode(t), "")
	var created struct{ Entities []Entity }
	s.ok("create_entities", map[string]any{"entities": serverMemoryOddEntities}, &created)
	if !reflect.DeepEqual(created.Entities, serverMemoryOddEntities) {
		t.Errorf("created %s\nwant %s", serverMemoryJSONOf(t, created.Entities), serverMemoryJSONOf(t, serverMemoryOddEntities))
	}
	if g := s.graph(); !reflect.DeepEqual(g.Entities, serverMemoryOddEntities) {
		t.Errorf("read_graph %s\nwant %s", serverMemoryJSONOf(t, g.Entities), serverMemoryJSONOf(t, serverMemoryOddEntities))
	}
	var opened Graph
	s.ok("open_nodes", map[string]any{"names": []string{"a\u00a0b", " a b ", "a  b", "a   b"}}, &opened)
	if want := []Entity{serverMemoryOddEntities[2], serverMemoryOddEntities[3], serverMemoryOddEntities[5]}; !reflect.DeepEqual(opened.Entities, want) {
		t.Errorf("open_nodes: %s", serverMemoryJSONOf(t, opened.Entities))
	}

	// Observations added to and deleted from odd entities round trip too.
	var added struct {
		Results []serverMemoryAdded
	}
	s.ok("add_observations", map[string]any{"observations": []map[string]any{
		{"entityName": "", "contents": []string{"- new", "", "\n"}},
		{"entityName": "blanks", "contents": []string{"", "fresh"}},
	}}, &added)
	wantAdded := []serverMemoryAdded{{EntityName: "", AddedObservations: []string{"- new", "", "\n"}}, {EntityName: "blanks", AddedObservations: []string{"fresh"}}}
	if !reflect.DeepEqual(added.Results, wantAdded) {
		t.Errorf("add_observations: %+v, want %+v", added.Results, wantAdded)
	}
	s.ok("delete_observations", map[string]any{"deletions": []map[string]any{
		{"entityName": "blanks", "observations": []string{"", "  ", "\r\n"}},
	}}, nil)
	g := s.graph()
	if got := g.Entities[0].Observations; !reflect.DeepEqual(got, []string{"- new", "", "\n"}) {
		t.Errorf("unnamed entity: %q", got)
	}
	if got := g.Entities[14].Observations; !reflect.DeepEqual(got, []string{" ", "\t", "\n", "trailing  ", "  leading", "in  between", "fresh"}) {
		t.Errorf("blanks: %q", got)
	}
}

func TestServerMemoryRelationTypes(t *testing.T) {
	n := serverMemoryTestNode(t)
	s := serverMemoryConnect(t, n, "")
	s.ok("create_entities", map[string]any{"entities": []Entity{
		{Name: "A", EntityType: "t", Observations: []string{}},
		{Name: "B", EntityType: "t", Observations: []string{}},
	}}, nil)
	types := []string{
		"works_at", "Works At", "works at", "WORKS_AT", "works-at", "works__at", " works at ", "worksAt",
		"", " ", "2fa", "rel", "über", "関係", `"quoted"`, "line\nbreak", strings.Repeat("long ", 30),
		strings.Repeat("a", 64), strings.Repeat("a", 65),
	}
	var rels []Relation
	for _, typ := range types {
		rels = append(rels, Relation{From: "A", To: "B", RelationType: typ})
	}
	var created struct{ Relations []Relation }
	s.ok("create_relations", map[string]any{"relations": rels}, &created)
	if !reflect.DeepEqual(created.Relations, rels) {
		t.Errorf("created %s", serverMemoryJSONOf(t, created.Relations))
	}
	g := s.graph()
	var got []string
	for _, r := range g.Relations {
		got = append(got, r.RelationType)
	}
	if want := slices.Sorted(slices.Values(types)); !reflect.DeepEqual(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("relation types read back:\n got %q\nwant %q", slices.Sorted(slices.Values(got)), want)
	}

	// Each is its own edge with a valid relation name.
	a := g.Entities[0].Name
	mems, err := n.List(context.Background(), api.ListRequest{Namespace: DefaultNamespace})
	if err != nil {
		t.Fatal(err)
	}
	from := mems[slices.IndexFunc(mems, func(m api.Memory) bool { return m.Title == a })].ID
	res, err := n.Traverse(context.Background(), api.TraverseRequest{Start: from, Direction: api.Out})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Edges) != len(types) {
		t.Errorf("%d edges, want %d", len(res.Edges), len(types))
	}
	for _, e := range res.Edges {
		typ := e.Rel
		if e.Notes != "" {
			typ = serverMemoryUnquote(e.Notes)
		}
		if e.Origin != "server-memory" || !slices.Contains(types, typ) || serverMemoryRel(typ) != e.Rel || (e.Notes == "") != (e.Rel == typ) {
			t.Errorf("edge %+v", e.Edge)
		}
	}
	if rel := serverMemoryRel("Works At"); rel != "works_at-815ba396" {
		t.Errorf(`serverMemoryRel("Works At") = %q, want works_at-815ba396`, rel)
	}

	// delete_relations finds every one of them by its exact type.
	s.ok("delete_relations", map[string]any{"relations": rels[1:]}, nil)
	if g := s.graph(); !reflect.DeepEqual(g.Relations, rels[:1]) {
		t.Errorf("after deleting all but the first: %s", serverMemoryJSONOf(t, g.Relations))
	}
}

func TestServerMemoryBadInput(t *testing.T) {
	s := serverMemoryConnect(t, serverMemoryTestNode(t), "")
	s.ok("create_entities", map[string]any{"entities": []Entity{
		{Name: "A", EntityType: "t", Observations: []string{"o"}},
		{Name: "B", EntityType: "t", Observations: []string{}},
	}}, nil)
	s.ok("create_relations", map[string]any{"relations": []Relation{{From: "A", To: "B", RelationType: "knows"}}}, nil)
	before := s.graph()

	const prefix = "MCP error -32602: Input validation error: Invalid arguments for tool "
	big := strings.Repeat("x", api.MaxContentBytes)
	tests := []struct {
		tool, args, want string
	}{
		// The official server's own messages.
		{"create_entities", `{"entities":"nope"}`, prefix + "create_entities: Invalid input: expected array, received string at entities"},
		{"create_entities", `{}`, prefix + "create_entities: Invalid input: expected array, received undefined at entities"},
		{"create_entities", `null`, prefix + "create_entities: Invalid input: expected array, received undefined at entities"},
		{"create_entities", `{"entities":[{"name":"A","entityType":"t","observations":["o",3]}]}`,
			prefix + "create_entities: Invalid input: expected string, received number at entities[0].observations[1]"},
		{"create_entities", `{"entities":[{"name":1,"observations":null}]}`,
			prefix + "create_entities: Invalid input: expected string, received number at entities[0].name\n" +
				"Invalid input: expected string, received undefined at entities[0].entityType\n" +
				"Invalid input: expected array, received null at entities[0].observations"},
		{"add_observations", `{"observations":[{"entityName":"A"}]}`,
			prefix + "add_observations: Invalid input: expected array, received undefined at observations[0].contents"},
		{"open_nodes", `{"names":[null]}`, prefix + "open_nodes: Invalid input: expected string, received null at names[0]"},
		{"search_nodes", `{"query":5}`, prefix + "search_nodes: Invalid input: expected string, received number at query"},
		{"delete_entities", `{"entityNames":[true]}`, prefix + "delete_entities: Invalid input: expected string, received boolean at entityNames[0]"},
		{"delete_relations", `{"relations":[[]]}`, prefix + "delete_relations: Invalid input: expected object, received array at relations[0]"},
		{"delete_observations", `{"deletions":[{"entityName":"A","observations":{}}]}`,
			prefix + "delete_observations: Invalid input: expected array, received object at deletions[0].observations"},
		{"create_entities", `[1]`, prefix + "create_entities: Invalid input: expected object, received array\n" +
			"Invalid input: expected array, received undefined at entities"},
		{"add_observations", `{"observations":[{"entityName":"A","contents":["p"]},{"entityName":"Zed","contents":["q"]}]}`,
			"Entity with name Zed not found"},
		// What memmesh cannot store.
		{"create_relations", `{"relations":[{"from":"B","to":"A","relationType":"r"},{"from":"Nobody","to":"Nobody","relationType":"likes"}]}`,
			"Relation likes from Nobody to itself, which is not an entity: memmesh stores a relation from an entity to itself once the entity exists; create it with create_entities first. Nothing was changed."},
		{"create_entities", fmt.Sprintf(`{"entities":[{"name":"C","entityType":"t","observations":[]},{"name":"D","entityType":"t","observations":[%q]}]}`, big),
			fmt.Sprintf("entity D: its name, type and observations take %d bytes, more than the %d memmesh stores for one entity; nothing was changed", len(big)+len("entity: \"D\"\ntype: t\n- "), api.MaxContentBytes)},
		{"add_observations", fmt.Sprintf(`{"observations":[{"entityName":"B","contents":["ok"]},{"entityName":"A","contents":[%q]}]}`, big),
			fmt.Sprintf("entity A: its name, type and observations take %d bytes, more than the %d memmesh stores for one entity; nothing was changed", len(big)+len("entity: \"A\"\ntype: t\n- o\n- "), api.MaxContentBytes)},
	}
	for _, tt := range tests {
		c := s.call(tt.tool, json.RawMessage(tt.args))
		if !c.IsError || c.text() != tt.want {
			t.Errorf("%s %.80s:\n got (error %v) %q\nwant %q", tt.tool, tt.args, c.IsError, c.text(), tt.want)
		}
		if g := s.graph(); !reflect.DeepEqual(g, before) {
			t.Fatalf("%s %.80s changed the graph: %s", tt.tool, tt.args, serverMemoryJSONOf(t, g))
		}
	}

	// Unknown tools and malformed requests are JSON-RPC errors; the server
	// keeps serving.
	s.next++
	s.send(map[string]any{"jsonrpc": "2.0", "id": s.next, "method": "tools/call", "params": map[string]any{"name": "nosuch"}})
	if a := s.answer(s.next); a.Error == nil {
		t.Errorf("unknown tool: %s", a.Result)
	}
	if _, err := s.in.Write([]byte("{not json\n")); err != nil {
		t.Fatal(err)
	}
	if a := s.answer(nil); a.Error == nil {
		t.Errorf("malformed request: %s", a.Result)
	}
	if g := s.graph(); !reflect.DeepEqual(g, before) {
		t.Errorf("graph changed: %s", serverMemoryJSONOf(t, g))
	}
}

// TestServerMemoryErrorsQuoteExcerpts: the profile's own messages about a
// 60 KB argument, and an import's about a 60 KB line, quote an excerpt,
// not the whole argument, and no secret.
func TestServerMemoryErrorsQuoteExcerpts(t *testing.T) {
	const maxErrorText = 2048 // the bound of the memmesh profile's errors (mcp's TestErrorsQuoteExcerpts)
	const secret = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"
	huge := secret + " " + strings.Repeat("!x", 30<<10)
	n := serverMemoryTestNode(t)
	s := serverMemoryConnect(t, n, "")
	for _, tc := range []struct {
		tool string
		args any
	}{
		{"add_observations", map[string]any{"observations": []any{map[string]any{"entityName": huge, "contents": []string{"o"}}}}},
		{"create_relations", map[string]any{"relations": []any{map[string]any{"from": huge, "to": huge, "relationType": huge}}}},
		{"create_entities", map[string]any{"entities": []any{map[string]any{"name": huge, "entityType": "t", "observations": []string{strings.Repeat("o", api.MaxContentBytes)}}}}},
	} {
		res := s.call(tc.tool, tc.args)
		if text := res.text(); !res.IsError || len(text) > maxErrorText || strings.Contains(text, secret) {
			t.Errorf("server-memory %s with a 60 KB name: error %v, %d bytes: %.300q", tc.tool, res.IsError, len(text), text)
		}
	}
	if _, err := Import(context.Background(), n, strings.NewReader(`{"type":"`+huge+`"}`), ""); err == nil || len(err.Error()) > maxErrorText || strings.Contains(err.Error(), secret) {
		t.Errorf("import of a 60 KB type: %.300v", err)
	}
}

// TestServerMemoryDevices checks an entity created under one name on two
// devices before they synced: it shows as one entity.
func TestServerMemoryDevices(t *testing.T) {
	ctx := context.Background()
	n := serverMemoryTestNode(t)
	for i, obs := range [][]string{{"a", "b"}, {"b", "c"}} {
		content, err := serverMemoryContent(Entity{Name: "Twin", EntityType: fmt.Sprint("type", i), Observations: obs})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Remember(ctx, api.RememberRequest{Namespace: DefaultNamespace, Kind: "entity", Title: "Twin", Content: content,
			At: time.Now().Add(time.Duration(i-2) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	// An entity of another namespace is not part of the graph.
	if _, err := n.Remember(ctx, api.RememberRequest{Namespace: "elsewhere", Kind: "entity", Title: "Twin", Content: "entity: \"Twin\"\ntype: x"}); err != nil {
		t.Fatal(err)
	}
	s := serverMemoryConnect(t, n, "")
	s.ok("create_entities", map[string]any{"entities": []Entity{
		{Name: "Twin", EntityType: "new", Observations: []string{}},
		{Name: "Other", EntityType: "t", Observations: []string{}},
	}}, nil)
	twin := Entity{Name: "Twin", EntityType: "type0", Observations: []string{"a", "b", "c"}}
	if g := s.graph(); !reflect.DeepEqual(g.Entities, []Entity{twin, {Name: "Other", EntityType: "t", Observations: []string{}}}) {
		t.Fatalf("graph: %s", serverMemoryJSONOf(t, g.Entities))
	}
	s.ok("create_relations", map[string]any{"relations": []Relation{{From: "Other", To: "Twin", RelationType: "knows"}}}, nil)
	s.ok("add_observations", map[string]any{"observations": []map[string]any{{"entityName": "Twin", "contents": []string{"c", "d"}}}}, nil)
	s.ok("delete_observations", map[string]any{"deletions": []map[string]any{{"entityName": "Twin", "observations": []string{"b"}}}}, nil)
	twin.Observations = []string{"a", "d", "c"}
	if g := s.graph(); !reflect.DeepEqual(g.Entities[0], twin) || len(g.Relations) != 1 {
		t.Fatalf("graph: %s", serverMemoryJSONOf(t, g))
	}
	s.ok("delete_entities", map[string]any{"entityNames": []string{"Twin"}}, nil)
	if g := s.graph(); len(g.Entities) != 1 || len(g.Relations) != 0 {
		t.Fatalf("graph after deleting Twin: %s", serverMemoryJSONOf(t, g))
	}
	if mems, err := n.List(ctx, api.ListRequest{Namespace: "elsewhere"}); err != nil || len(mems) != 1 {
		t.Errorf("other namespace: %d memories, %v", len(mems), err)
	}
}

func TestServerMemoryNamespaceAndResource(t *testing.T) {
	n := serverMemoryTestNode(t)
	a := serverMemoryConnect(t, n, "graph-a")
	a.ok("create_entities", map[string]any{"entities": []Entity{{Name: "Only in a", EntityType: "t", Observations: []string{"o"}}}}, nil)
	var res struct {
		Contents []struct {
			URI, MIMEType, Text string
		}
	}
	if err := json.Unmarshal(a.request("resources/read", map[string]any{"uri": "memory://knowledge-graph"}), &res); err != nil {
		t.Fatal(err)
	}
	c := a.ok("read_graph", map[string]any{}, nil)
	if len(res.Contents) != 1 || res.Contents[0].Text != c.text() || res.Contents[0].URI != "memory://knowledge-graph" {
		t.Errorf("resource %+v, want the text of read_graph %q", res.Contents, c.text())
	}
	if mems, err := n.List(context.Background(), api.ListRequest{Namespace: "graph-a"}); err != nil || len(mems) != 1 {
		t.Errorf("graph-a holds %d memories (%v), want 1", len(mems), err)
	}
}

func TestServerMemoryPaging(t *testing.T) {
	ctx := context.Background()
	n := serverMemoryTestNode(t)
	st := newServerMemoryStore(n, DefaultNamespace)
	var want []Entity
	for i := range 7 {
		want = append(want, Entity{Name: fmt.Sprint("e", i), EntityType: "t", Observations: []string{}})
	}
	if _, err := st.createEntities(ctx, want, serverMemoryProvenance{}); err != nil {
		t.Fatal(err)
	}
	for _, page := range []int{2, 3, 6, 7, 1000} {
		st.page = page
		g, err := st.readGraph(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g.Entities, want) {
			t.Errorf("page %d: %s", page, serverMemoryJSONOf(t, g.Entities))
		}
	}
}

// serverMemoryOfficialFile is a memory.jsonl written by the official
// server: duplicate names and relations, and a relation to an entity that
// does not exist, as its tools allow.
const serverMemoryOfficialFile = `{"type":"entity","name":"Alice","entityType":"person","observations":["likes <tea> & \"cake\"","x\u2028y"]}
{"type":"entity","name":"Alice","entityType":"robot","observations":["beeps","x\u2028y"]}
{"type":"entity","name":"Bob","entityType":"person","observations":["a","a","b","b","c"]}
{"type":"entity","name":"C","entityType":"t","observations":["o"]}

{"type":"relation","from":"Alice","to":"Bob","relationType":"knows"}
{"type":"relation","from":"Alice","to":"Bob","relationType":"knows"}
{"type":"relation","from":"Alice","to":"Nobody","relationType":"Works At"}
{"type":"relation","from":"C","to":"C","relationType":"self"}
{"type":"relation","from":"Bob","to":"C","relationType":"Works At"}
{"type":"relation","from":"Nobody","to":"Nobody","relationType":"self"}`

func TestServerMemoryImport(t *testing.T) {
	ctx := context.Background()
	n := serverMemoryTestNode(t)
	s := serverMemoryConnect(t, n, "")
	s.ok("create_entities", map[string]any{"entities": []Entity{{Name: "C", EntityType: "existing", Observations: []string{"p"}}}}, nil)

	res, err := Import(ctx, n, strings.NewReader(serverMemoryOfficialFile), "")
	if err != nil {
		t.Fatal(err)
	}
	want := ImportResult{
		Namespace: DefaultNamespace, Entities: 4, Relations: 6,
		CreatedEntities: 2, UpdatedEntities: 1, CreatedRelations: 4,
		Skipped: []SkippedRelation{
			{Line: 11, Relation: Relation{From: "Nobody", To: "Nobody", RelationType: "self"}, Reason: `a relation from "Nobody" to itself, which is no entity`},
		},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("import:\n got %+v\nwant %+v", res, want)
	}
	wantGraph := Graph{
		Entities: []Entity{
			{Name: "C", EntityType: "existing", Observations: []string{"p", "o"}},
			{Name: "Alice", EntityType: "person", Observations: []string{"likes <tea> & \"cake\"", "x\u2028y", "beeps"}},
			{Name: "Bob", EntityType: "person", Observations: []string{"a", "a", "b", "b", "c"}},
		},
		Relations: []Relation{
			{From: "Alice", To: "Bob", RelationType: "knows"}, {From: "Alice", To: "Nobody", RelationType: "Works At"},
			{From: "C", To: "C", RelationType: "self"}, {From: "Bob", To: "C", RelationType: "Works At"},
		},
	}
	// Relations made within one millisecond have no order among them.
	byName := func(g Graph) Graph {
		slices.SortFunc(g.Relations, func(a, b Relation) int {
			return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To), strings.Compare(a.RelationType, b.RelationType))
		})
		return g
	}
	wantGraph = byName(wantGraph)
	if g := byName(s.graph()); !reflect.DeepEqual(g, wantGraph) {
		t.Errorf("graph after import:\n got %s\nwant %s", serverMemoryJSONOf(t, g), serverMemoryJSONOf(t, wantGraph))
	}

	// Importing again changes nothing.
	again, err := Import(ctx, n, strings.NewReader(serverMemoryOfficialFile), DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if again.CreatedEntities+again.UpdatedEntities+again.CreatedRelations != 0 || len(again.Skipped) != 1 {
		t.Errorf("second import: %+v", again)
	}
	if g := byName(s.graph()); !reflect.DeepEqual(g, wantGraph) {
		t.Errorf("graph after the second import: %s", serverMemoryJSONOf(t, g))
	}
	// Three entities, and the references of Nobody and of C (for C -self-> C).
	if mems, err := n.List(ctx, api.ListRequest{Namespace: DefaultNamespace}); err != nil || len(mems) != 5 {
		t.Errorf("%d memories (%v), want 5", len(mems), err)
	}
}

func TestServerMemoryImportBadFiles(t *testing.T) {
	ctx := context.Background()
	n := serverMemoryTestNode(t)
	good := `{"type":"entity","name":"A","entityType":"t","observations":[]}` + "\n"
	tests := []struct {
		name, file, want string
	}{
		{"not JSON", good + "\n{oops\n", "line 3: not a JSON object: invalid character 'o' looking for beginning of object key string"},
		{"not an object", good + `[1]`, "line 2: Invalid input: expected object, received array"},
		{"unknown type", good + `{"type":"node","name":"B"}`, `line 2: "type" is "node": want "entity" or "relation"`},
		{"no type", good + `{"name":"B"}`, `line 2: "type" is missing: want "entity" or "relation"`},
		{"bad entity", `{"type":"entity","name":1,"observations":["a",null]}`,
			"line 1: Invalid input: expected string, received number at name; Invalid input: expected string, received undefined at entityType; Invalid input: expected string, received null at observations[1]"},
		{"bad relation", good + `{"type":"relation","from":"A","to":["B"]}`,
			"line 2: Invalid input: expected string, received array at to; Invalid input: expected string, received undefined at relationType"},
		{"not UTF-8", good + "{\"type\":\"entity\",\"name\":\"Caf\xe9\",\"entityType\":\"t\",\"observations\":[]}", "line 2: not UTF-8 text: invalid byte 0xe9 at offset 28"},
		{"half a surrogate pair", good + `{"type":"entity","name":"B","entityType":"t","observations":["\udc00"]}`, `line 2: not Unicode text: the escape \udc00 at offset 62 is half of a UTF-16 surrogate pair`},
		{"too big", fmt.Sprintf(`{"type":"entity","name":"B","entityType":"t","observations":[%q]}`, strings.Repeat("x", api.MaxContentBytes)),
			fmt.Sprintf("entity B: its name, type and observations take %d bytes, more than the %d memmesh stores for one entity; nothing was changed", api.MaxContentBytes+len("entity: \"B\"\ntype: t\n- "), api.MaxContentBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Import(ctx, n, strings.NewReader(tt.file), "")
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %s", err, tt.want)
			}
			if mems, err := n.List(ctx, api.ListRequest{Namespace: DefaultNamespace}); err != nil || len(mems) != 0 {
				t.Errorf("%d memories imported (%v)", len(mems), err)
			}
		})
	}
}

// TestServerMemoryFollowsEveryWriter: the graph the profile keeps in
// memory follows what another process writes on the same node, what
// another machine writes (through the mesh), and an entity moved out of
// the namespace.
func TestServerMemoryFollowsEveryWriter(t *testing.T) {
	ctx := context.Background()
	a, b := serverMemoryMeshNode(t, "laptop"), serverMemoryMeshNode(t, "desk")
	inv, err := a.Invite(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(ctx, inv.Token); err != nil {
		t.Fatal(err)
	}
	mine := serverMemoryConnect(t, a, "")
	mine.ok("create_entities", map[string]any{"entities": []Entity{{Name: "Alice", EntityType: "person", Observations: []string{}}}}, nil)
	if g := mine.graph(); len(g.Entities) != 1 {
		t.Fatalf("graph: %s", serverMemoryJSONOf(t, g))
	}

	other := serverMemoryConnect(t, a, "")
	other.ok("create_entities", map[string]any{"entities": []Entity{{Name: "Bob", EntityType: "person", Observations: []string{"x"}}}}, nil)
	other.ok("create_relations", map[string]any{"relations": []Relation{{From: "Alice", To: "Bob", RelationType: "knows"}}}, nil)
	other.ok("add_observations", map[string]any{"observations": []map[string]any{{"entityName": "Alice", "contents": []string{"y"}}}}, nil)
	want := Graph{
		Entities: []Entity{
			{Name: "Alice", EntityType: "person", Observations: []string{"y"}},
			{Name: "Bob", EntityType: "person", Observations: []string{"x"}},
		},
		Relations: []Relation{{From: "Alice", To: "Bob", RelationType: "knows"}},
	}
	if g := mine.graph(); !reflect.DeepEqual(g, want) {
		t.Fatalf("after another process wrote:\n got %s\nwant %s", serverMemoryJSONOf(t, g), serverMemoryJSONOf(t, want))
	}

	remote := serverMemoryConnect(t, b, "")
	remote.ok("create_entities", map[string]any{"entities": []Entity{{Name: "Carol", EntityType: "person", Observations: []string{}}}}, nil)
	testwait.Until(t, "an entity made on the other machine shows", func() bool {
		var found Graph
		mine.ok("open_nodes", map[string]any{"names": []string{"Carol"}}, &found)
		return len(found.Entities) == 1
	})

	mems, err := a.List(ctx, api.ListRequest{Namespace: DefaultNamespace, Kind: "entity", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mems {
		if m.Title == "Bob" {
			away := "elsewhere"
			if _, err := a.Update(ctx, m.ID, api.UpdateRequest{Namespace: &away}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var alice Graph
	mine.ok("open_nodes", map[string]any{"names": []string{"Alice", "Bob"}}, &alice)
	if len(alice.Entities) != 1 || alice.Entities[0].Name != "Alice" || len(alice.Relations) != 0 {
		t.Errorf("after Bob moved to another namespace: %s", serverMemoryJSONOf(t, alice))
	}
}
