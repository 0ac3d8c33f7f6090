package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/api"
)

// ServeStdio serves s on in and out, one JSON-RPC message a line, with
// mcp-go's stdio server, until ctx ends or in is closed. A message that
// is no Unicode text (api.CheckJSONText) never reaches s: mcp-go's
// decoder would put U+FFFD in its place and store that; it is answered
// with a parse error for its id instead.
func ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, log *slog.Logger) error {
	w := &lockedWriter{w: out}
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(slog.NewLogLogger(log.Handler(), slog.LevelError))
	return stdio.Listen(ctx, &textLines{in: bufio.NewReader(in), out: w, log: log}, w)
}

// lockedWriter serialises the writes of the stdio server and of
// textLines' answers; each writes a whole message in one call.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// textLines passes on the lines of in that are Unicode text, and answers
// the others itself.
type textLines struct {
	in      *bufio.Reader
	out     io.Writer
	log     *slog.Logger
	pending []byte // what is left of the line being passed on
	err     error  // of in, once pending is passed on
}

func (t *textLines) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		var line []byte
		line, t.err = t.in.ReadBytes('\n')
		if err := api.CheckJSONText(line); err != nil {
			t.refuse(line, err)
			continue
		}
		t.pending = line
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	return n, nil
}

// refuse answers a message that is no Unicode text; a notification,
// which has no id, gets no answer.
func (t *textLines) refuse(msg []byte, err error) {
	reply, request := notTextReply(msg, err)
	if !request {
		t.log.Warn("dropped a notification that is no Unicode text", "err", err)
		return
	}
	t.out.Write(append(reply, '\n'))
}

// jsonrpcParseError is the JSON-RPC code of a message that is no JSON.
const jsonrpcParseError = -32700

// notTextReply returns the JSON-RPC error that answers msg, a message
// that is no Unicode text (err says where), and whether msg is a request
// (has an id) that the error answers; else its id is null.
func notTextReply(msg []byte, err error) (reply []byte, request bool) {
	// Go's decoder reads past the bad bytes; an id that holds some is
	// answered with U+FFFD in their place.
	var head struct {
		ID any `json:"id"`
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	if dec.Decode(&head) != nil {
		head.ID = nil
	}
	reply, _ = json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      head.ID,
		"error": map[string]any{
			"code":    jsonrpcParseError,
			"message": "Parse error: the message is " + err.Error() + " (JSON-RPC messages are UTF-8 text). Nothing was done.",
		},
	})
	return reply, head.ID != nil
}
