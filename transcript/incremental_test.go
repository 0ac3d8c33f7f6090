package transcript

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFixture copies a fixture into a temporary directory (as name) and
// returns its path there.
func copyFixture(t *testing.T, from, name string) string {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return to
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// reread reads path again from cur, the cursor having gone through JSON
// as a caller keeps it.
func reread(t *testing.T, a Adapter, path string, cur Cursor) Batch {
	t.Helper()
	data, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	var kept Cursor
	if err := json.Unmarshal(data, &kept); err != nil {
		t.Fatal(err)
	}
	b, err := a.Read(path, kept, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const claudeTurn = `{"type":"user","sessionId":"7f3c9a2e-5b1d-4e8a-9c47-2d6f0b8e1a53","cwd":"/home/dev/src/fetchkit","timestamp":"2026-11-20T09:20:00Z","message":{"role":"user","content":"thanks, now commit it"}}` + "\n"

func TestLinesReadOnlyWhatIsNew(t *testing.T) {
	path := copyFixture(t, claudeFixture, "s.jsonl")
	first := readAll(t, ClaudeCode{}, path)
	size := first.Cursor.Offset

	// Damage a line after the first bytes (which identify the file) in
	// place: a reader that went through the old lines again would warn.
	data, _ := os.ReadFile(path)
	at := strings.Index(string(data), `"content":"no, don't add`)
	if at < headBytes {
		t.Fatalf("the fixture's correction is at %d, within the identified head", at)
	}
	copy(data[at:], "\x00\x00\x00\x00")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, claudeTurn)

	b := reread(t, ClaudeCode{}, path, first.Cursor)
	if b.Restarted || len(b.Warnings) != 0 || len(b.Session.Turns) != 1 {
		t.Fatalf("restarted %v, warnings %v, %d turns; want only the new turn", b.Restarted, b.Warnings, len(b.Session.Turns))
	}
	turn := b.Session.Turns[0]
	if turn.Index != len(first.Session.Turns) || turn.Line != first.Cursor.Line+1 || turn.Text != "thanks, now commit it" {
		t.Errorf("new turn %+v, want index %d line %d", turn, len(first.Session.Turns), first.Cursor.Line+1)
	}
	if b.Cursor.Offset != size+int64(len(claudeTurn)) {
		t.Errorf("offset %d, want %d", b.Cursor.Offset, size+int64(len(claudeTurn)))
	}
	if b.Session.Title != first.Session.Title || b.Session.ID != first.Session.ID || !b.Session.Start.Equal(first.Session.Start) {
		t.Errorf("metadata lost: %+v", b.Session)
	}

	again := reread(t, ClaudeCode{}, path, b.Cursor)
	if len(again.Session.Turns) != 0 || len(again.Warnings) != 0 || again.Cursor.Offset != b.Cursor.Offset {
		t.Errorf("an unchanged file gave %d turns, warnings %v", len(again.Session.Turns), again.Warnings)
	}
}

func TestLinesLeaveAPartialLastLine(t *testing.T) {
	path := copyFixture(t, claudeFixture, "s.jsonl")
	first := readAll(t, ClaudeCode{}, path)
	half := len(claudeTurn) / 2
	appendFile(t, path, claudeTurn[:half])
	b := reread(t, ClaudeCode{}, path, first.Cursor)
	if len(b.Session.Turns) != 0 || len(b.Warnings) != 0 || b.Cursor.Offset != first.Cursor.Offset {
		t.Fatalf("a line being written gave %d turns, warnings %v, offset %d", len(b.Session.Turns), b.Warnings, b.Cursor.Offset)
	}
	appendFile(t, path, claudeTurn[half:])
	b = reread(t, ClaudeCode{}, path, b.Cursor)
	if len(b.Session.Turns) != 1 || b.Session.Turns[0].Text != "thanks, now commit it" || len(b.Warnings) != 0 {
		t.Errorf("the completed line gave %+v, warnings %v", b.Session.Turns, b.Warnings)
	}
}

func TestLinesReadARewrittenFileAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rewrite func(t *testing.T, path string, data []byte)
	}{
		{"truncated", func(t *testing.T, path string, data []byte) {
			if err := os.Truncate(path, int64(len(data)/2)); err != nil {
				t.Fatal(err)
			}
			appendFile(t, path, "\n")
		}},
		{"same size, other start", func(t *testing.T, path string, data []byte) {
			other := []byte(strings.Replace(string(data), "Fix flaky retry test", "Fix flaky RETRY test", 1))
			if err := os.WriteFile(path, other, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by another file", func(t *testing.T, path string, data []byte) {
			next := path + ".new"
			if err := os.WriteFile(next, append(data, claudeTurn...), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(next, path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFixture(t, claudeFixture, "s.jsonl")
			first := readAll(t, ClaudeCode{}, path)
			data, _ := os.ReadFile(path)
			tc.rewrite(t, path, data)
			b := reread(t, ClaudeCode{}, path, first.Cursor)
			if !b.Restarted || len(b.Session.Turns) == 0 || b.Session.Turns[0].Index != 0 || b.Session.Turns[0].Line != 3 {
				t.Errorf("restarted %v, %d turns, first %+v", b.Restarted, len(b.Session.Turns), b.Session.Turns)
			}
		})
	}
}

func TestLinesKeepCallsBetweenReads(t *testing.T) {
	data, err := os.ReadFile(codexFixture)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	path := filepath.Join(t.TempDir(), "rollout-x.jsonl")
	// Up to the first call, without its output.
	if err := os.WriteFile(path, []byte(strings.Join(lines[:8], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	first := readAll(t, Codex{}, path)
	if n := len(first.Session.Turns); n != 2 || first.Session.Turns[1].Command != "cargo build" {
		t.Fatalf("first read: %+v", first.Session.Turns)
	}
	appendFile(t, path, lines[8])
	b := reread(t, Codex{}, path, first.Cursor)
	if len(b.Session.Turns) != 1 {
		t.Fatalf("second read: %+v", b.Session.Turns)
	}
	out := b.Session.Turns[0]
	if out.Role != RoleTool || out.Command != "cargo build" || out.Tool != "shell" || !out.Failed || out.Index != 2 {
		t.Errorf("the output read after its call: %+v", out)
	}
	if b.Session.ID != "019a8c3e-77d2-7b41-9f3a-5e1c2d4b6a80" || b.Session.Project != "/home/dev/src/ledger" {
		t.Errorf("session metadata not kept: %q %q", b.Session.ID, b.Session.Project)
	}
	if len(b.Cursor.Calls) != 0 {
		t.Errorf("answered calls kept: %v", b.Cursor.Calls)
	}
}

func TestAiderReadsNewRuns(t *testing.T) {
	path := copyFixture(t, aiderFixture, aiderFile)
	first := readAll(t, Aider{}, path)
	appendFile(t, path, "\n# aider chat started at 2026-11-25 10:00:00\n\n#### /test make check  \n> ok  \n")
	b := reread(t, Aider{}, path, first.Cursor)
	if len(b.Session.Turns) != 2 || b.Session.Turns[0].Command != "make check" || b.Session.Turns[0].Index != len(first.Session.Turns) {
		t.Errorf("new run read as %+v", b.Session.Turns)
	}
}

// editJSON rewrites the JSON document at path whole, through edit.
func editJSON[T any](t *testing.T, path string, edit func(*T)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	edit(&v)
	if data, err = json.MarshalIndent(v, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

type anyDoc = map[string]any

func TestDocumentReturnsOnlyNewRecords(t *testing.T) {
	path := copyFixture(t, geminiFixture, "session.json")
	first := readAll(t, Gemini{}, path)
	n := len(first.Session.Turns)

	// Gemini CLI writes the whole file again with a message more, whose
	// tool call is still running.
	editJSON(t, path, func(d *anyDoc) {
		msgs := (*d)["messages"].([]any)
		(*d)["messages"] = append(msgs,
			anyDoc{"id": "m-new-1", "timestamp": "2026-11-22T08:45:00Z", "type": "user", "content": "now run the linter"},
			anyDoc{"id": "m-new-2", "timestamp": "2026-11-22T08:45:05Z", "type": "gemini", "content": "",
				"toolCalls": []any{anyDoc{"id": "c1", "name": "run_shell_command", "args": anyDoc{"command": "ruff check ."}, "status": "executing"}}})
	})
	b := reread(t, Gemini{}, path, first.Cursor)
	if b.Restarted || len(b.Session.Turns) != 1 || b.Session.Turns[0].Text != "now run the linter" || b.Session.Turns[0].Index != n {
		t.Fatalf("restarted %v, turns %+v", b.Restarted, b.Session.Turns)
	}
	if len(b.Warnings) != 0 {
		t.Errorf("warnings of records read before came again: %v", b.Warnings)
	}

	// The call ends.
	editJSON(t, path, func(d *anyDoc) {
		msgs := (*d)["messages"].([]any)
		call := msgs[len(msgs)-1].(anyDoc)["toolCalls"].([]any)[0].(anyDoc)
		call["status"] = "success"
		call["result"] = []any{anyDoc{"functionResponse": anyDoc{"response": anyDoc{"output": "All checks passed!\nExit Code: 0"}}}}
	})
	b = reread(t, Gemini{}, path, b.Cursor)
	if len(b.Session.Turns) != 2 || b.Session.Turns[0].Command != "ruff check ." || b.Session.Turns[1].Role != RoleTool {
		t.Fatalf("the finished call: %+v", b.Session.Turns)
	}

	// A message read before is changed: the document is another one.
	editJSON(t, path, func(d *anyDoc) {
		msgs := (*d)["messages"].([]any)
		msgs[len(msgs)-1].(anyDoc)["id"] = "m-other"
	})
	b = reread(t, Gemini{}, path, b.Cursor)
	if !b.Restarted || len(b.Session.Turns) != n+3 || b.Session.Turns[0].Index != 0 {
		t.Errorf("rewritten: restarted %v, %d turns", b.Restarted, len(b.Session.Turns))
	}
}

func TestClineReadsAPartialMessageWhenDone(t *testing.T) {
	path := copyFixture(t, clineFixture, "ui_messages.json")
	first := readAll(t, Cline{}, path)
	editJSON(t, path, func(msgs *[]anyDoc) {
		last := (*msgs)[len(*msgs)-1]
		last["partial"], last["text"] = false, "Also updated the README."
	})
	b := reread(t, Cline{}, path, first.Cursor)
	if len(b.Session.Turns) != 1 || b.Session.Turns[0].Text != "Also updated the README." || b.Restarted {
		t.Errorf("the finished message: %+v", b.Session.Turns)
	}
}

func TestOpenCodeReadsNewMessages(t *testing.T) {
	home := t.TempDir()
	if err := os.CopyFS(home, os.DirFS("testdata/home/.local")); err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(home, "share", "opencode", "storage")
	path := filepath.Join(storage, "session", "8f2e4c6a0b1d3e5f7a9c1e3b5d7f9a1c3e5b7d9f", "ses_5a1b2c3d4ffeAbCdEfGhIjKlMn.json")
	first := readAll(t, OpenCode{}, path)

	// The message being written is finished.
	msg := filepath.Join(storage, "message", "ses_5a1b2c3d4ffeAbCdEfGhIjKlMn", "msg_019ab697e806Aa0Bb1Cc2Dd3.json")
	editJSON(t, msg, func(m *anyDoc) { (*m)["time"].(anyDoc)["completed"] = 1795536099000 })
	parts := filepath.Join(storage, "part", "msg_019ab697e806Aa0Bb1Cc2Dd3")
	editJSON(t, filepath.Join(parts, "prt_019ab697e80601Zz9Yy8Xx.json"), func(p *anyDoc) {
		(*p)["state"] = anyDoc{"status": "completed", "input": anyDoc{"command": "pnpm test"}, "output": "PASS", "metadata": anyDoc{"exit": 0}}
	})
	b := reread(t, OpenCode{}, path, first.Cursor)
	if len(b.Session.Turns) != 3 || b.Session.Turns[1].Command != "pnpm test" || b.Session.Turns[0].Index != len(first.Session.Turns) {
		t.Fatalf("the finished message: %+v", b.Session.Turns)
	}
	if len(b.Warnings) != 0 {
		t.Errorf("messages read before were read again: %v", b.Warnings)
	}
}

func TestContinueReturnsOnlyNewHistory(t *testing.T) {
	path := copyFixture(t, continueFixture, "s.json")
	first := readAll(t, Continue{}, path)
	editJSON(t, path, func(s *anyDoc) {
		(*s)["history"] = append((*s)["history"].([]any), anyDoc{"message": anyDoc{"role": "user", "content": "and add a test for it"}, "contextItems": []any{}})
	})
	b := reread(t, Continue{}, path, first.Cursor)
	if b.Restarted || len(b.Session.Turns) != 1 || b.Session.Turns[0].Text != "and add a test for it" || len(b.Warnings) != 0 {
		t.Fatalf("restarted %v, turns %+v, warnings %v", b.Restarted, b.Session.Turns, b.Warnings)
	}
	// The person edits an earlier prompt: Continue drops what followed.
	editJSON(t, path, func(s *anyDoc) {
		h := (*s)["history"].([]any)
		h[0].(anyDoc)["message"].(anyDoc)["content"] = "rename loadCfg to readConfig"
		(*s)["history"] = h[:1]
	})
	b = reread(t, Continue{}, path, b.Cursor)
	if !b.Restarted || len(b.Session.Turns) != 1 || b.Session.Turns[0].Index != 0 {
		t.Errorf("edited: restarted %v, turns %+v", b.Restarted, b.Session.Turns)
	}
}

func TestDocumentsComeInBoundedReads(t *testing.T) {
	cur := Cursor{}
	var turns []Turn
	for reads := 1; ; reads++ {
		b, err := Cline{}.Read(clineFixture, cur, Limits{Turns: 5})
		if err != nil {
			t.Fatal(err)
		}
		turns, cur = append(turns, b.Session.Turns...), b.Cursor
		if !b.More {
			break
		}
		if reads > 10 {
			t.Fatal("reads do not end")
		}
	}
	all := readAll(t, Cline{}, clineFixture)
	if len(turns) != len(all.Session.Turns) {
		t.Errorf("%d turns in bounded reads, %d in one", len(turns), len(all.Session.Turns))
	}
	for i, turn := range turns {
		if turn.Index != i {
			t.Errorf("turn %d has index %d", i, turn.Index)
		}
	}
}

func TestOpenCodeReadsARewrittenSessionAgain(t *testing.T) {
	home := t.TempDir()
	if err := os.CopyFS(home, os.DirFS("testdata/home/.local")); err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(home, "share", "opencode", "storage")
	path := filepath.Join(storage, "session", "8f2e4c6a0b1d3e5f7a9c1e3b5d7f9a1c3e5b7d9f", "ses_5a1b2c3d4ffeAbCdEfGhIjKlMn.json")
	first := readAll(t, OpenCode{}, path)
	// The session is reverted to before its last messages.
	for _, m := range []string{"msg_019ab697e805Aa0Bb1Cc2Dd3", "msg_019ab697e806Aa0Bb1Cc2Dd3"} {
		if err := os.Remove(filepath.Join(storage, "message", "ses_5a1b2c3d4ffeAbCdEfGhIjKlMn", m+".json")); err != nil {
			t.Fatal(err)
		}
	}
	b := reread(t, OpenCode{}, path, first.Cursor)
	if !b.Restarted || len(b.Session.Turns) != len(first.Session.Turns)-1 || b.Session.Turns[0].Index != 0 {
		t.Errorf("reverted: restarted %v, %d turns", b.Restarted, len(b.Session.Turns))
	}
}
