package transcript

// The Continue format, read from continuedev/continue core/index.d.ts
// (Session, ChatHistoryItem, ChatMessage, ToolCallState, ContextItem) and
// core/util/history.ts (the session files), with the built-in tools'
// arguments from core/tools/builtIn.ts and core/tools/definitions. It
// matches Continue 1.0 to 1.2 (VS Code and JetBrains):
//
//	~/.continue/sessions/<session id>.json   (sessions.json is the index)
//
// One JSON document {sessionId, title, workspaceDirectory, history
// [{message {role: user|assistant|thinking|system|tool, content,
// toolCalls?, toolCallId?}, contextItems, toolCallState? {toolCallId,
// toolCall {function {name, arguments}}, status, output}}]}, rewritten
// whole. content is a string or parts ({type: text, text}). A tool's
// result is the "tool" message with its toolCallId; the call's status
// (generating, generated, calling, done, errored, canceled) says whether
// it failed or is still running. Built-in tools are named with or
// without a "builtin_" prefix: run_terminal_command {command},
// edit_existing_file, create_new_file, single_find_and_replace and
// read_file {filepath}. Continue records no times.

import (
	"encoding/json"
	"hash/fnv"
	"path/filepath"
	"strconv"
	"strings"
)

// Continue reads Continue's sessions.
type Continue struct{}

var _ Adapter = Continue{}

// Client is "continue".
func (Continue) Client() string { return "continue" }

// Discover lists ~/.continue/sessions/*.json but the index.
func (Continue) Discover(home string) ([]string, error) {
	all, err := glob(filepath.Join(home, ".continue", "sessions", "*.json"))
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, p := range all {
		if filepath.Base(p) != "sessions.json" {
			out = append(out, p)
		}
	}
	return out, nil
}

// Read reads the session at path from cur.
func (Continue) Read(path string, cur Cursor, lim Limits) (Batch, error) {
	return readDocument("continue", path, cur, lim, continueParse)
}

type continueSession struct {
	SessionID string `json:"sessionId"`
	Title     string `json:"title"`
	Workspace string `json:"workspaceDirectory"`
	History   []struct {
		Message struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"toolCallId"`
		} `json:"message"`
		ToolCallState *struct {
			ToolCallID string `json:"toolCallId"`
			ToolCall   struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"toolCall"`
			Status string `json:"status"`
		} `json:"toolCallState"`
	} `json:"history"`
}

// continueChanges are the tools that change the files they name.
var continueChanges = map[string]bool{"edit_existing_file": true, "create_new_file": true, "single_find_and_replace": true, "multi_edit": true}

func continueParse(r *reading, data []byte) (document, bool) {
	var s continueSession
	if err := json.Unmarshal(data, &s); err != nil {
		r.warn("not a Continue session: %v", shortErr(err))
		return document{}, false
	}
	doc := document{meta: Meta{ID: s.SessionID, Project: continueDir(s.Workspace), Title: s.Title}}
	results := map[string]Turn{} // the result of each call, but its text
	for i, h := range s.History {
		text := textOf(h.Message.Content)
		rec := record{id: continueID(i, h.Message.Role, text)}
		switch h.Message.Role {
		case "user":
			rec.turns = []Turn{{Role: RoleUser, Text: text}}
		case "assistant":
			if text != "" {
				rec.turns = append(rec.turns, Turn{Role: RoleAssistant, Text: text})
			}
			if st := h.ToolCallState; st != nil {
				call := continueCall(st.ToolCall.Function.Name, st.ToolCall.Function.Arguments)
				results[st.ToolCallID] = Turn{Role: RoleTool, Tool: call.Tool, Command: call.Command, Failed: st.Status == "errored"}
				rec.pending = st.Status == "generating" || st.Status == "generated" || st.Status == "calling"
				rec.turns = append(rec.turns, call)
			}
		case "tool":
			res := results[h.Message.ToolCallID]
			res.Role, res.Text = RoleTool, text
			rec.turns = []Turn{res}
		case "thinking", "system":
		default:
			rec.warnings = []string{"unknown message role " + quote(h.Message.Role)}
		}
		doc.records = append(doc.records, rec)
	}
	return doc, true
}

// continueCall reads a tool call's name and JSON arguments.
func continueCall(name, arguments string) Turn {
	name = strings.TrimPrefix(name, "builtin_")
	var a struct {
		Command  string `json:"command"`
		Filepath string `json:"filepath"`
	}
	_ = json.Unmarshal([]byte(arguments), &a) // arguments of another shape name no command or file
	t := Turn{Role: RoleAssistant, Tool: name, Command: a.Command, Changed: continueChanges[name]}
	if a.Filepath != "" {
		t.Files = []string{a.Filepath}
	}
	if t.Command == "" && len(t.Files) == 0 {
		t.Text = arguments
	}
	return t
}

// continueID names a history item by its place, role and the start of
// its text: an item changed in place is another one.
func continueID(i int, role, text string) string {
	h := fnv.New64a()
	h.Write([]byte(role))
	h.Write([]byte(text[:min(len(text), 256)]))
	return strconv.Itoa(i) + ":" + strconv.FormatUint(h.Sum64(), 16)
}

// continueDir reads a workspace directory, which Continue writes as a
// file URI.
func continueDir(ws string) string {
	return strings.TrimPrefix(ws, "file://")
}
