package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxDaemonRSS bounds the daemon's peak resident memory while it refuses
// hostile input: generous, to detect a blow-up, not to measure.
const maxDaemonRSS = 300 << 20

// peakRSS returns the peak resident set (VmHWM) and the current one
// (VmRSS) of process pid, in bytes.
func peakRSS(t *testing.T, pid int) (peak, now int64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, _ := strings.Cut(line, ":")
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(f[0], 10, 64)
		switch name {
		case "VmHWM":
			peak = kb << 10
		case "VmRSS":
			now = kb << 10
		}
	}
	return peak, now
}

// hugeWord is one word of n letters that repeat rarely, as a hostile
// query would be.
func hugeWord(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (i*7+i/26)%26)
	}
	return string(b)
}

// mcpHTTPSession is a session of a daemon's MCP endpoint.
type mcpHTTPSession struct {
	endpoint string
	auth     string // the Authorization header; "" for none
	id       string // the session id, once initialized
}

// openMCPHTTP initializes a session on endpoint with token.
func openMCPHTTP(t *testing.T, endpoint, token string) *mcpHTTPSession {
	t.Helper()
	s := &mcpHTTPSession{endpoint: endpoint, auth: "Bearer " + token}
	resp := s.post(t, mcpInitialize)
	s.id = resp.Header.Get("Mcp-Session-Id")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || s.id == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, s.id)
	}
	s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return s
}

// post sends one message of the session.
func (s *mcpHTTPSession) post(t *testing.T, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// recall calls the recall tool with query in every namespace and
// returns the answer's body.
func (s *mcpHTTPSession) recall(t *testing.T, query string) string {
	t.Helper()
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "recall", "arguments": map[string]any{"query": query, "namespace": "*"}}})
	resp := s.post(t, string(msg))
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("recall: %d %s", resp.StatusCode, data)
	}
	return string(data)
}

// uploadHuge sends a request announcing a body of size bytes to conn and
// writes the body while the server reads it; it returns the answer.
func uploadHuge(t *testing.T, conn net.Conn, head string, size int) (int, string) {
	t.Helper()
	defer conn.Close()
	fmt.Fprintf(conn, "%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", head, size)
	go func() {
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := conn.Write(chunk); err != nil {
				return // the server answered and closed
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a %d-byte upload: %v", size, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestHostileInputBounded: a running daemon sent a 1 MB one-word query
// (MCP over stdio and over HTTP, and, as large as a command-line argument
// may be, memmesh search) and 50 MB bodies (the socket API and MCP over
// HTTP) answers each with a clear error, keeps serving, and its memory
// stays bounded.
func TestHostileInputBounded(t *testing.T) {
	home := newHome(t)
	endpoint, addr := startServeHTTP(t, home)
	pid := daemonPID(t, home)
	var c captureOut
	okJSON(t, home, &c, "capture", "--ns", "proj", "Bounded queries keep the daemon alive")
	word := hugeWord(1 << 20)

	t.Run("query over MCP stdio", func(t *testing.T) {
		s := startStdio(t, home)
		s.send(mcpInitialize)
		s.next("initialize")
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
			"params": map[string]any{"name": "recall", "arguments": map[string]any{"query": word}}})
		s.send(string(msg))
		if m := s.next("recall"); m.Error != nil || !bytes.Contains(m.Result, []byte(`"isError":true`)) || !bytes.Contains(m.Result, []byte("query is 1048576 bytes: at most 4096")) {
			t.Fatalf("recall of a 1 MB word: %+v %.500s", m.Error, m.Result)
		}
	})
	t.Run("query over MCP HTTP", func(t *testing.T) {
		s := openMCPHTTP(t, endpoint, httpToken(t, home))
		if body := s.recall(t, word); !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "query is 1048576 bytes: at most 4096") {
			t.Fatalf("recall of a 1 MB word: %.500s", body)
		}
		if body := s.recall(t, "bounded queries"); !strings.Contains(body, c.ShortID) {
			t.Fatalf("recall after: %.500s", body)
		}
	})
	t.Run("query from the command line", func(t *testing.T) {
		// Linux takes one argument of at most 128 KiB.
		r := mm(t, home, "", "search", word[:100_000])
		if r.code != 1 || !strings.Contains(r.stderr, "query is 100000 bytes: at most 4096") {
			t.Fatalf("search: exit %d, stderr %.300q", r.code, r.stderr)
		}
	})
	t.Run("50 MB to the socket API", func(t *testing.T) {
		conn, err := net.Dial("unix", filepath.Join(home, "memmesh.sock"))
		if err != nil {
			t.Fatal(err)
		}
		status, body := uploadHuge(t, conn, "POST /v1/memories HTTP/1.1\r\nHost: memmesh\r\n", 50<<20)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "at most 8388608") {
			t.Fatalf("got %d %s, want 413", status, body)
		}
	})
	t.Run("50 MB to MCP over HTTP", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: application/json, text/event-stream\r\n", addr, httpToken(t, home))
		status, body := uploadHuge(t, conn, head, 50<<20)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "at most 4194304") {
			t.Fatalf("got %d %s, want 413", status, body)
		}
	})

	var s searchOut
	okJSON(t, home, &s, "search", "--ns", "proj", "bounded")
	if len(s.Results) != 1 {
		t.Fatalf("the daemon no longer searches: %+v", s)
	}
	if daemonPID(t, home) != pid {
		t.Fatalf("the daemon restarted")
	}
	peak, now := peakRSS(t, pid)
	t.Logf("daemon RSS: peak %d MiB, now %d MiB", peak>>20, now>>20)
	if peak > maxDaemonRSS {
		t.Errorf("daemon peak RSS %d MiB, want under %d MiB", peak>>20, maxDaemonRSS>>20)
	}
}

// TestSearchAnswersExcerpts: memmesh search --json of a memory of nearly
// 1 MiB answers an excerpt around the match, flagged, and show answers the
// whole memory.
func TestSearchAnswersExcerpts(t *testing.T) {
	home := newHome(t)
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 17000)
	content := filepath.Join(home, "big.md")
	os.WriteFile(content, []byte(filler+"the zanzibar driver is pgx "+filler), 0o600)
	var c captureOut
	okJSON(t, home, &c, "capture", "--ns", "proj", "--file", content)
	out := ok(t, home, "search", "--ns", "proj", "--json", "zanzibar")
	var s struct {
		Results []struct {
			ID           string `json:"id"`
			Content      string `json:"content"`
			Truncated    bool   `json:"truncated"`
			ContentBytes int    `json:"content_bytes"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || len(s.Results) != 1 {
		t.Fatalf("search: %v %.300s", err, out)
	}
	h := s.Results[0]
	if len(out) > 8<<10 || !h.Truncated || h.ContentBytes < 900_000 || !strings.Contains(h.Content, "the zanzibar driver is pgx") {
		t.Fatalf("search answered %d bytes: truncated %v, content_bytes %d, content %.200q", len(out), h.Truncated, h.ContentBytes, h.Content)
	}
	var m struct {
		Content string `json:"content"`
	}
	okJSON(t, home, &m, "show", c.ID)
	if len(m.Content) < 900_000 {
		t.Fatalf("show answered %d bytes of content", len(m.Content))
	}
}
