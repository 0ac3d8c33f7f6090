package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/model"
)

// hostileText holds what takes over a terminal or reorders text: a screen
// clear, an OSC retitle, the 8-bit CSI, a carriage return, DEL and a
// right-to-left override. hostileArg adds a NUL, which no stored text
// holds (content with one is binary, refused) but an error may quote.
const (
	hostileText = "\x1b[2J\x1b]0;pwned\x07\u009b2J safe\roverwritten \u202egpj.exe\x7f"
	hostileArg  = hostileText + "\x00"
)

// TestTextIsInert stores memories and an edge holding hostileText, then
// reads them through every tool, resource and prompt: no text an agent
// reads (tool text, resource JSON, prompt messages, errors) holds an
// active character, while structured content keeps the stored values.
func TestTextIsInert(t *testing.T) {
	n := testNode(t)
	ctx := context.Background()
	title := "Pool sizing \x1b]0;pwned\x07 \u202eevil"
	content := "The pool in internal/db/pool.go holds 20 connections. " + hostileText
	first, err := n.Remember(ctx, api.RememberRequest{Namespace: testNamespace, Title: title, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	second, err := n.Remember(ctx, api.RememberRequest{Namespace: testNamespace, Title: "Limits " + hostileText[:4], Content: "The pool in internal/db/pool.go holds 20 connections at most. " + hostileText})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Link(ctx, api.LinkRequest{From: first.ID, Rel: "related_to", To: second.ID, Notes: "notes " + hostileText}); err != nil {
		t.Fatal(err)
	}
	stale := model.StatusStale
	if _, err := n.Update(ctx, second.ID, api.UpdateRequest{Status: &stale}); err != nil {
		t.Fatal(err)
	}
	c := connect(t, n)
	check := func(what, text string) {
		t.Helper()
		if i := inert.Index(text); i >= 0 {
			t.Errorf("%s: an active character at byte %d of %q", what, i, text)
		}
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"get", map[string]any{"id": first.ID}},
		{"recall", map[string]any{"query": "pool connections"}},
		{"context", nil},
		{"traverse", map[string]any{"start": first.ID, "depth": 2}},
		{"traverse", map[string]any{"start": "internal/db/pool.go", "mode": "impact"}},
		{"review", map[string]any{"check": "stale"}},
		{"review", map[string]any{"check": "analyze"}},
		{"review", map[string]any{"check": "reflect"}},
		{"remember", map[string]any{"content": "The pool in internal/db/pool.go holds 20 connections, really. " + hostileText}},
		{"update", map[string]any{"id": first.ID, "title": "Renamed " + title}},
		{"link", map[string]any{"from": first.ID, "rel": "depends_on", "to": "file:" + hostileText[:4], "notes": hostileText}},
		{"get", map[string]any{"id": "m-" + hostileArg}},
		{"remember", map[string]any{"content": "refused: " + hostileArg}},
		{"forget", map[string]any{"id": second.ID}},
	} {
		res := callTool(t, c, tc.tool, tc.args)
		check(tc.tool+" text", resultText(res))
	}
	var got memoryResult
	call(t, c, "get", map[string]any{"id": first.ID}, &got)
	if got.Content != content {
		t.Errorf("structured content changed the stored content: %q, want %q", got.Content, content)
	}

	for _, uri := range []string{contextURI, staleURI, statsURI, memoryURIPrefix + first.ID, memoryURIPrefix + "m-%1B%5B2J%E2%80%AEx"} {
		var req mcpgo.ReadResourceRequest
		req.Params.URI = uri
		res, err := c.ReadResource(ctx, req)
		if err != nil {
			check("error reading "+uri, err.Error())
			continue
		}
		for _, rc := range res.Contents {
			text := rc.(mcpgo.TextResourceContents).Text
			check(uri, text)
			if !json.Valid([]byte(text)) {
				t.Errorf("%s: not valid JSON: %s", uri, text)
			}
		}
	}
	var m struct {
		Content string `json:"content"`
	}
	readJSON(t, c, memoryURIPrefix+first.ID, &m)
	if m.Content != content {
		t.Errorf("the memory resource changed the stored content: %q, want %q", m.Content, content)
	}
	for _, topic := range []string{"pool connections", "pool " + hostileArg} {
		text, err := getPrompt(t, c, "recall_context", map[string]string{"topic": topic})
		if err != nil {
			check("recall_context error", err.Error())
			continue
		}
		check("recall_context", text)
		if !strings.Contains(text, "Pool sizing") {
			t.Errorf("recall_context lacks the memory:\n%s", text)
		}
	}
}
