package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
)

// rememberLine is a tools/call of remember with id and the JSON text of
// content (raw, so that it may hold any bytes).
func rememberLine(id int, content string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"remember","arguments":{"content":"%s"}}}`, id, content)
}

// TestStdioRefusesNotText: a message over stdio that is not UTF-8, or that
// escapes half a surrogate pair, is answered with a parse error for its
// id that says where, and stores nothing (it is never stored with U+FFFD);
// a notification that is no text gets no answer; the server goes on.
func TestStdioRefusesNotText(t *testing.T) {
	n := testNode(t)
	out, in := serveStdio(t, testServer(t, n))
	// A failed test stops reading; the server must still be able to end.
	t.Cleanup(func() { go io.Copy(io.Discard, out) })
	replies := bufio.NewScanner(out)
	replies.Buffer(nil, 1<<20)
	next := func() map[string]any {
		t.Helper()
		if !replies.Scan() {
			t.Fatalf("no reply: %v", replies.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(replies.Bytes(), &m); err != nil {
			t.Fatalf("reply %q: %v", replies.Text(), err)
		}
		return m
	}
	if _, err := in.Write([]byte(initializeBody + "\n")); err != nil {
		t.Fatal(err)
	}
	next()
	// The pipes hold nothing: the lines go in while the replies are read.
	go func() {
		for _, line := range []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			rememberLine(2, "caf\xe9 au lait"),
			"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"reason\":\"\xff\"}}",
			rememberLine(3, `x\ud800y`),
			rememberLine(4, "a memory of text"),
		} {
			if _, err := in.Write([]byte(line + "\n")); err != nil {
				return
			}
		}
	}()
	for _, want := range []struct {
		id  float64
		msg string
	}{
		{2, "not UTF-8 text: invalid byte 0xe9 at offset 101"},
		{3, `the escape \ud800 at offset 99 is half of a UTF-16 surrogate pair`},
	} {
		m := next()
		e, _ := m["error"].(map[string]any)
		if m["id"] != want.id || e == nil || e["code"] != float64(jsonrpcParseError) || !strings.Contains(e["message"].(string), want.msg) {
			t.Fatalf("reply %v, want a parse error for id %v saying %q", m, want.id, want.msg)
		}
	}
	if m := next(); m["id"] != float64(4) || m["error"] != nil {
		t.Fatalf("a call after the refused ones: %v", m)
	}
	list, err := n.List(context.Background(), api.ListRequest{Namespace: testNamespace})
	if err != nil || len(list) != 1 || list[0].Content != "a memory of text" {
		t.Fatalf("stored %+v, %v: want only the memory of text", list, err)
	}
}

// TestHTTPRefusesNotText: MCP over HTTP answers a body that is not UTF-8
// with 400 and a parse error for its id, and stores nothing.
func TestHTTPRefusesNotText(t *testing.T) {
	n := testNode(t)
	url := testHTTP(t, n, nil)
	status, body := post(t, url, "Bearer "+testToken, rememberLine(7, "\xff\xfeh"))
	if status != http.StatusBadRequest || !strings.Contains(body, `"id":7`) || !strings.Contains(body, "not UTF-8 text: invalid byte 0xff at offset 98") {
		t.Fatalf("got %d %s, want 400 with a parse error for id 7", status, body)
	}
	if status, body := post(t, url, "Bearer "+testToken, initializeBody); status != http.StatusOK {
		t.Fatalf("after: %d %s", status, body)
	}
	if st, err := n.Stats(context.Background()); err != nil || st.Memories != 0 {
		t.Fatalf("%d memories stored, %v", st.Memories, err)
	}
}
