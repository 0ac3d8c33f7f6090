package corpus

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// ClaudeSessionID is the session id of the transcripts WriteClaudeSession
// writes.
const ClaudeSessionID = "a1b2c3d4-0000-4000-8000-000000000001"

// WriteClaudeSession writes a Claude Code transcript (JSON Lines) of at
// least size bytes to w, the mix of a working session drawn from seed:
// prompts, replies, thinking, shell commands and edits with outputs of a
// few hundred bytes to a few KB, a fifth of them failed. It returns the
// bytes written.
func WriteClaudeSession(w io.Writer, size int64, seed uint64) (int64, error) {
	bw := bufio.NewWriter(w)
	rng := rand.New(rand.NewPCG(seed, 50))
	words := strings.Fields("the build fails because the cache key ignores the go version so a stale object is linked run go test again with count one and clamp the retry jitter in client retry go")
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	var written int64
	var werr error // the first write error; later lines are not written
	line := func(typ string, content any) {
		if werr != nil {
			return
		}
		at = at.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		rec := map[string]any{
			"parentUuid": "p", "isSidechain": false, "userType": "external", "cwd": "/home/dev/src/fetchkit",
			"sessionId": ClaudeSessionID, "version": "2.0.14", "gitBranch": "main",
			"type": typ, "uuid": fmt.Sprintf("u-%d", written), "timestamp": at.Format(time.RFC3339Nano),
			"message": map[string]any{"role": typ, "content": content},
		}
		data, err := json.Marshal(rec)
		if err != nil {
			werr = err
			return
		}
		n, err := bw.Write(append(data, '\n'))
		written += int64(n)
		werr = err
	}
	for i := 0; written < size && werr == nil; i++ {
		line("user", text(40+rng.IntN(300)))
		line("assistant", []any{map[string]any{"type": "thinking", "thinking": text(200), "signature": "EqQBCkYI"}})
		line("assistant", []any{map[string]any{"type": "text", "text": text(100 + rng.IntN(600))}})
		for j := range 1 + rng.IntN(4) {
			id := fmt.Sprintf("toolu_%d_%d", i, j)
			if rng.IntN(3) == 0 {
				line("assistant", []any{map[string]any{"type": "tool_use", "id": id, "name": "Edit",
					"input": map[string]any{"file_path": "/home/dev/src/fetchkit/client/retry.go", "old_string": text(80), "new_string": text(90)}}})
			} else {
				line("assistant", []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash",
					"input": map[string]any{"command": "go test ./client -run TestRetry", "description": "Run the tests"}}})
			}
			line("user", []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text(200 + rng.IntN(4000)), "is_error": rng.IntN(5) == 0}})
		}
	}
	if werr != nil {
		return written, werr
	}
	return written, bw.Flush()
}
