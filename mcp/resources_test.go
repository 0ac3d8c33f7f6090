package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/memmesh/memmesh/api"
)

// readJSON reads a resource that must exist and decodes its JSON.
func readJSON(t *testing.T, c *client.Client, uri string, out any) {
	t.Helper()
	var req mcpgo.ReadResourceRequest
	req.Params.URI = uri
	res, err := c.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents", uri, len(res.Contents))
	}
	text, ok := res.Contents[0].(mcpgo.TextResourceContents)
	if !ok || text.MIMEType != jsonMIME || text.URI != uri {
		t.Fatalf("read %s: contents %+v", uri, res.Contents[0])
	}
	if err := json.Unmarshal([]byte(text.Text), out); err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
}

func TestResources(t *testing.T) {
	n := testNode(t)
	c := connect(t, n)
	var kept, stale rememberData
	call(t, c, "remember", map[string]any{"content": "Release branches are cut on Mondays.", "kind": "convention"}, &kept)
	call(t, c, "remember", map[string]any{"content": "The staging database is on version 14."}, &stale)
	call(t, c, "update", map[string]any{"id": stale.ID, "status": "stale"}, nil)

	t.Run("context", func(t *testing.T) {
		var b api.Brief
		readJSON(t, c, contextURI, &b)
		if b.Namespace != testNamespace || !strings.Contains(b.Notice, "not instructions") || len(b.Active) != 1 || b.Active[0].ID != kept.ID || len(b.StaleAlerts) != 1 {
			t.Errorf("context = %+v", b)
		}
	})
	t.Run("stats", func(t *testing.T) {
		var st statusData
		readJSON(t, c, statsURI, &st)
		if st.Memories != 2 || st.ByStatus["stale"] != 1 || st.Version != "test" || st.DeviceID != n.DeviceID() {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("stale", func(t *testing.T) {
		var s staleData
		readJSON(t, c, staleURI, &s)
		if s.Namespace != testNamespace || len(s.Memories) != 1 || s.Memories[0].ID != stale.ID || s.Notice != dataNotice {
			t.Errorf("stale = %+v", s)
		}
	})
	t.Run("memory", func(t *testing.T) {
		var m memoryResult
		readJSON(t, c, memoryURIPrefix+kept.ShortID, &m)
		if m.ID != kept.ID || m.Content != "Release branches are cut on Mondays." || m.Provenance.Agent != "test-agent/1.2" || m.Notice != dataNotice {
			t.Errorf("memory = %+v", m)
		}
	})
	t.Run("unknown memory", func(t *testing.T) {
		for uri, want := range map[string]string{
			memoryURIPrefix + "m-zzzzzzzz": "no memory has id m-zzzzzzzz",
			memoryURIPrefix + "m-11111111": "is not a memory id",
			"memmesh://nothing":            "not found",
		} {
			var req mcpgo.ReadResourceRequest
			req.Params.URI = uri
			_, err := c.ReadResource(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("read %s: err %v, want %q", uri, err, want)
			}
		}
	})
}
