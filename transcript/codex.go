package transcript

// The Codex CLI format, read from openai/codex codex-rs/protocol/src/
// protocol.rs (RolloutLine, SessionMeta, TurnContext), models.rs
// (ResponseItem) and core/src/rollout/recorder.rs, as
// kvsankar/agent-history docs/specs/agents/formats/codex-cli-format.md
// sets them out. It matches Codex CLI 0.44 to 0.77:
//
//	~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl
//
// One {timestamp, type, payload} a line. "session_meta" (the first) holds
// id, cwd, cli_version; "turn_context" the cwd of a turn. The
// conversation is in "response_item" lines: message {role, content
// [input_text|output_text]}, function_call {name, arguments (JSON text),
// call_id}, function_call_output {call_id, output}, custom_tool_call
// {name, input, call_id} (apply_patch, whose input is the patch),
// custom_tool_call_output and local_shell_call {action {command}}. The
// shell tools' arguments are {command: argv} (shell), {command: string}
// (shell_command) or {cmd} (exec_command); a shell output is JSON
// {output, metadata {exit_code}}, or text with "Exit code: N" (shell_command)
// or "Process exited with code N" (exec_command). The "event_msg" lines
// repeat the conversation for the interface (user_message, agent_message,
// agent_reasoning, token_count...) and are not read, so that nothing is
// counted twice; "compacted" lines hold a summary the model made of
// earlier turns. The user messages Codex writes itself
// (<environment_context>, <user_instructions>, AGENTS.md) are not prompts.
// The rollouts of older versions (mid-2025) have no such lines: their
// first line is {id, timestamp, instructions} and the items follow bare,
// with {"record_type": "state"} lines between; they are read too.

import (
	"cmp"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
)

// Codex reads Codex CLI's rollout files.
type Codex struct{}

var _ Adapter = Codex{}

// Client is "codex".
func (Codex) Client() string { return "codex" }

// Discover lists ~/.codex/sessions/**/rollout-*.jsonl.
func (Codex) Discover(home string) ([]string, error) {
	return walkFiles(filepath.Join(home, ".codex", "sessions"), 4, func(name string) bool {
		return strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, ".jsonl")
	})
}

// Read reads the rollout at path from cur.
func (Codex) Read(path string, cur Cursor, lim Limits) (Batch, error) {
	if cur.Meta.ID == "" {
		cur.Meta.ID = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "rollout-"), ".jsonl")
	}
	return readLines("codex", path, cur, lim, codexLine)
}

type codexRecord struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Cwd       string          `json:"cwd"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    *struct {
		Command json.RawMessage `json:"command"`
	} `json:"action"`
}

type codexArgs struct {
	Command json.RawMessage `json:"command"`
	Cmd     string          `json:"cmd"`
	Input   string          `json:"input"`
	Path    string          `json:"path"`
}

// codexOwn are the starts of the user messages Codex writes itself.
var codexOwn = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<turn_aborted>"}

func codexLine(r *reading, line []byte) {
	var rec codexRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		r.warn("not a JSON record: %v", shortErr(err))
		return
	}
	var p codexPayload
	if err := json.Unmarshal(rec.Payload, &p); err != nil && len(rec.Payload) > 0 {
		r.warn("%s record with a payload that is not an object", clip(rec.Type))
		return
	}
	switch rec.Type {
	case "session_meta":
		r.cur.Meta.ID = cmp.Or(p.ID, r.cur.Meta.ID)
		r.cur.Meta.Project = cmp.Or(p.Cwd, r.cur.Meta.Project)
	case "turn_context":
		r.cur.Meta.Project = cmp.Or(p.Cwd, r.cur.Meta.Project)
	case "response_item":
		codexItem(r, parseTime(rec.Timestamp), p)
	case "event_msg", "compacted":
	case "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
		"local_shell_call", "reasoning":
		// The rollouts of older Codex CLI versions hold the items bare, one a
		// line, with no time.
		var item codexPayload
		_ = json.Unmarshal(line, &item) // the line decoded as a record above
		codexItem(r, time.Time{}, item)
	case "":
		codexLegacyMeta(r, line)
	default:
		r.warn("unknown record type %q", clip(rec.Type))
	}
}

// codexLegacyMeta reads the lines of the older rollouts that have
// no type: the first, {id, timestamp, instructions}, and the state lines
// {"record_type": "state"}.
func codexLegacyMeta(r *reading, line []byte) {
	var m struct {
		ID         string `json:"id"`
		Timestamp  string `json:"timestamp"`
		RecordType string `json:"record_type"`
	}
	_ = json.Unmarshal(line, &m) // the line decoded as a record above
	switch {
	case m.ID != "":
		r.cur.Meta.ID = m.ID
		if t := parseTime(m.Timestamp); !t.IsZero() && r.cur.Meta.Start.IsZero() {
			r.cur.Meta.Start = t
		}
	case m.RecordType == "state":
	default:
		r.warn("record of no type")
	}
}

func codexItem(r *reading, at time.Time, p codexPayload) {
	switch p.Type {
	case "message":
		text := textOf(p.Content)
		switch {
		case p.Role == "assistant":
			r.emit(Turn{Time: at, Role: RoleAssistant, Text: text})
		case p.Role == "user" && !codexIsOwn(text):
			r.emit(Turn{Time: at, Role: RoleUser, Text: text})
		}
	case "function_call", "custom_tool_call":
		codexCall(r, at, p)
	case "local_shell_call":
		t := Turn{Time: at, Role: RoleAssistant, Tool: "local_shell"}
		if p.Action != nil {
			t.Command = commandOf(p.Action.Command)
		}
		r.call(p.CallID, Call{Tool: t.Tool, Command: t.Command})
		r.emit(t)
	case "function_call_output", "custom_tool_call_output":
		codexOutput(r, at, p)
	case "reasoning", "ghost_snapshot", "web_search_call":
	default:
		r.warn("unknown response item %q", clip(p.Type))
	}
}

func codexIsOwn(text string) bool {
	for _, p := range codexOwn {
		if strings.HasPrefix(strings.TrimSpace(text), p) {
			return true
		}
	}
	return false
}

func codexCall(r *reading, at time.Time, p codexPayload) {
	t := Turn{Time: at, Role: RoleAssistant, Tool: p.Name}
	var args codexArgs
	if p.Arguments != "" {
		_ = json.Unmarshal([]byte(p.Arguments), &args) // arguments of another shape name no command
	}
	t.Command = cmp.Or(commandOf(args.Command), args.Cmd)
	patch := cmp.Or(p.Input, args.Input)
	if rest, ok := strings.CutPrefix(t.Command, "apply_patch "); ok {
		patch, t.Command, t.Tool = rest, "", "apply_patch"
	}
	if files := patchFiles(patch); len(files) > 0 {
		t.Files, t.Changed = files, true
	} else if args.Path != "" {
		t.Files = []string{args.Path}
	}
	if t.Command == "" && len(t.Files) == 0 {
		t.Text = cmp.Or(p.Arguments, p.Input)
	}
	r.call(p.CallID, Call{Tool: t.Tool, Command: t.Command})
	r.emit(t)
}

// codexOutput reads a tool's output: JSON {output, metadata {exit_code}}
// from the shell tool, or text (with "Exit code: N" from the newer shell
// tools).
func codexOutput(r *reading, at time.Time, p codexPayload) {
	c := r.result(p.CallID)
	t := Turn{Time: at, Role: RoleTool, Tool: c.Tool, Command: c.Command}
	out := textOf(p.Output)
	var wrapped struct {
		Output   string `json:"output"`
		Metadata struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(out), &wrapped) == nil && (wrapped.Output != "" || wrapped.Metadata.ExitCode != nil) {
		out, t.ExitCode = wrapped.Output, wrapped.Metadata.ExitCode
	} else if c.Command != "" {
		t.ExitCode = exitCodeIn(out)
	}
	t.Text = out
	t.Failed = t.ExitCode != nil && *t.ExitCode != 0
	r.emit(t)
}
