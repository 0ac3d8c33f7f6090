package transcript

// The Claude Code format, read from the client's transcripts as its
// public reproductions and tools show them (anthropics/claude-code has no
// source of the writer): kvsankar/agent-history
// docs/specs/agents/formats/claude-code-format.md, and the lines quoted in
// the tests of tools that read them. It matches Claude Code 1.0 to 2.x:
//
//	~/.claude/projects/<cwd with / as ->/<session id>.jsonl
//
// One JSON object a line. "user" and "assistant" lines carry sessionId,
// cwd, timestamp, uuid and message {role, content}; content is a string
// or blocks: text, thinking, tool_use {id, name, input}, tool_result
// {tool_use_id, content, is_error}. An assistant message is written one
// block a line. Bash input is {command}; Edit, MultiEdit and Write input
// {file_path}; NotebookEdit {notebook_path}; a failed command's result is
// an error whose text starts "Exit code N". Lines with isSidechain are a
// subagent's conversation and isMeta lines are the client's own notes:
// neither is the session's. "summary" lines title the session;
// "system", "file-history-snapshot", "queue-operation" and "progress"
// lines are bookkeeping.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ClaudeCode reads Claude Code's transcripts.
type ClaudeCode struct{}

var _ Adapter = ClaudeCode{}

// Client is "claude-code".
func (ClaudeCode) Client() string { return "claude-code" }

// Discover lists ~/.claude/projects/*/*.jsonl but the subagents'
// transcripts (agent-*.jsonl), which are sidechains of a session of their
// own project and carry its id.
func (ClaudeCode) Discover(home string) ([]string, error) {
	all, err := glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	return slices.DeleteFunc(all, func(p string) bool { return strings.HasPrefix(filepath.Base(p), "agent-") }), err
}

// Read reads the transcript at path from cur.
func (ClaudeCode) Read(path string, cur Cursor, lim Limits) (Batch, error) {
	if cur.Meta.ID == "" {
		cur.Meta.ID = strings.TrimSuffix(filepath.Base(path), ".jsonl")
	}
	return readLines("claude-code", path, cur, lim, claudeLine)
}

type claudeRecord struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Timestamp string `json:"timestamp"`
	Sidechain bool   `json:"isSidechain"`
	Meta      bool   `json:"isMeta"`
	Summary   string `json:"summary"`
	Message   *struct {
		Role    string        `json:"role"`
		Content claudeContent `json:"content"`
	} `json:"message"`
}

// claudeContent is a message's content: text, or blocks. It is decoded
// in the line's one pass (a raw message decoded again costs a scan more
// of every byte, and most of a transcript's bytes are content).
type claudeContent struct {
	text   *string
	blocks []claudeBlock
}

func (c *claudeContent) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		c.text = new(string)
		return json.Unmarshal(data, c.text)
	}
	return json.Unmarshal(data, &c.blocks)
}

type claudeBlock struct {
	Type      string      `json:"type"`
	Text      string      `json:"text"`
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Input     claudeInput `json:"input"`
	ToolUseID string      `json:"tool_use_id"`
	Content   text        `json:"content"`
	IsError   bool        `json:"is_error"`
}

type claudeInput struct {
	Command      string `json:"command"`
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	raw          []byte
}

// UnmarshalJSON keeps the input whole besides the fields read: a call
// that names no command or file is shown by its input.
func (in *claudeInput) UnmarshalJSON(data []byte) error {
	type fields claudeInput
	var f fields
	err := json.Unmarshal(data, &f)
	*in = claudeInput(f)
	in.raw = bytes.Clone(data)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil // an input of another shape names no command or file
		}
	}
	return err
}

// claudeChanges are the tools that change the files they name.
var claudeChanges = map[string]bool{"Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true}

func claudeLine(r *reading, line []byte) {
	var rec claudeRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		r.warn("not a JSON record: %v", shortErr(err))
		return
	}
	switch rec.Type {
	case "user", "assistant":
	case "summary":
		if rec.Summary != "" {
			r.cur.Meta.Title, _ = cut(rec.Summary, 500)
		}
		return
	case "system", "file-history-snapshot", "queue-operation", "progress":
		return
	default:
		r.warn("unknown record type %q", clip(rec.Type))
		return
	}
	if rec.SessionID != "" {
		r.cur.Meta.ID = rec.SessionID
	}
	if rec.Cwd != "" {
		r.cur.Meta.Project = rec.Cwd
	}
	if rec.Sidechain || rec.Meta || rec.Message == nil {
		return
	}
	at := parseTime(rec.Timestamp)
	role := RoleUser
	if rec.Type == "assistant" {
		role = RoleAssistant
	}
	if c := rec.Message.Content; c.text != nil {
		r.emit(Turn{Time: at, Role: role, Text: *c.text})
		return
	}
	for _, b := range rec.Message.Content.blocks {
		claudeBlockTurn(r, role, at, b)
	}
}

func claudeBlockTurn(r *reading, role Role, at time.Time, b claudeBlock) {
	switch b.Type {
	case "text":
		r.emit(Turn{Time: at, Role: role, Text: b.Text})
	case "tool_use":
		in := b.Input
		t := Turn{Time: at, Role: RoleAssistant, Tool: b.Name, Command: in.Command, Changed: claudeChanges[b.Name]}
		if f := cmp.Or(in.FilePath, in.NotebookPath); f != "" {
			t.Files = []string{f}
		}
		if t.Command == "" && len(t.Files) == 0 {
			t.Text = string(in.raw)
		}
		r.call(b.ID, Call{Tool: b.Name, Command: in.Command})
		r.emit(t)
	case "tool_result":
		c := r.result(b.ToolUseID)
		out := string(b.Content)
		t := Turn{Time: at, Role: RoleTool, Text: out, Tool: c.Tool, Command: c.Command, Failed: b.IsError}
		if c.Command != "" && b.IsError {
			t.ExitCode = exitCodeIn(out)
		}
		r.emit(t)
	case "thinking", "redacted_thinking", "image", "document", "server_tool_use", "web_search_tool_result":
	default:
		r.warn("unknown content block %q", clip(b.Type))
	}
}
