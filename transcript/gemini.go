package transcript

// The Gemini CLI format, read from google-gemini/gemini-cli
// packages/core/src/services/chatRecordingService.ts (ConversationRecord,
// MessageRecord, ToolCallRecord; as built in @google/gemini-cli-core
// 0.x, dist/src/services/chatRecordingService.d.ts) and
// docs/cli/chat-recording, with kvsankar/agent-history
// docs/specs/agents/formats/gemini-cli-format.md. It matches Gemini CLI
// 0.8 to 0.20:
//
//	~/.gemini/tmp/<sha256 of the project root>/chats/session-<time>-<id>.json
//
// One JSON document, rewritten whole at every change: {sessionId,
// projectHash, startTime, lastUpdated, summary?, messages [{id, timestamp,
// type: user|gemini|info|error|warning, content, toolCalls? [{id, name,
// args, result [{functionResponse {response {output|error}}}], status,
// timestamp, resultDisplay}]}]}. content is a string or parts ({text}).
// run_shell_command takes {command}; its output holds "Exit Code: N"
// when the command failed; replace and write_file take {file_path}. A
// tool call's status is success, error or cancelled once it is over. The
// project root is not written, only its hash: it is found among the
// configured project roots.

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
)

// Gemini reads Gemini CLI's chat recordings.
type Gemini struct {
	// Roots are project directories, to name the project of a session
	// (Gemini CLI records only the hash of its root).
	Roots []string
}

var _ Adapter = Gemini{}

// Client is "gemini".
func (Gemini) Client() string { return "gemini" }

// Discover lists ~/.gemini/tmp/*/chats/session-*.json.
func (Gemini) Discover(home string) ([]string, error) {
	return glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.json"))
}

// Read reads the recording at path from cur.
func (g Gemini) Read(path string, cur Cursor, lim Limits) (Batch, error) {
	return readDocument("gemini", path, cur, lim, g.parse)
}

type geminiDoc struct {
	SessionID   string          `json:"sessionId"`
	ProjectHash string          `json:"projectHash"`
	StartTime   string          `json:"startTime"`
	Summary     string          `json:"summary"`
	Messages    []geminiMessage `json:"messages"`
}

type geminiMessage struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []geminiCall    `json:"toolCalls"`
}

type geminiCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result"`
	Status    string          `json:"status"`
	Timestamp string          `json:"timestamp"`
}

type geminiArgs struct {
	Command      string   `json:"command"`
	FilePath     string   `json:"file_path"`
	AbsolutePath string   `json:"absolute_path"`
	Paths        []string `json:"paths"`
}

// geminiChanges are the tools that change the files they name.
var geminiChanges = map[string]bool{"replace": true, "write_file": true, "edit": true, "smart_edit": true}

func (g Gemini) parse(r *reading, data []byte) (document, bool) {
	var d geminiDoc
	if err := json.Unmarshal(data, &d); err != nil {
		r.warn("not a Gemini CLI recording: %v", shortErr(err))
		return document{}, false
	}
	doc := document{meta: Meta{ID: d.SessionID, Project: g.project(d.ProjectHash), Title: d.Summary, Start: parseTime(d.StartTime)}}
	for _, m := range d.Messages {
		doc.records = append(doc.records, geminiRecord(m))
	}
	return doc, true
}

// project finds the root whose hash the recording names.
func (g Gemini) project(hash string) string {
	for _, root := range g.Roots {
		sum := sha256.Sum256([]byte(root))
		if hex.EncodeToString(sum[:]) == hash {
			return root
		}
	}
	return ""
}

func geminiRecord(m geminiMessage) record {
	rec := record{id: m.ID}
	at := parseTime(m.Timestamp)
	switch m.Type {
	case "user":
		if text := partsText(m.Content); text != "" {
			rec.turns = append(rec.turns, Turn{Time: at, Role: RoleUser, Text: text})
		}
	case "gemini":
		if text := partsText(m.Content); text != "" {
			rec.turns = append(rec.turns, Turn{Time: at, Role: RoleAssistant, Text: text})
		}
		for _, c := range m.ToolCalls {
			switch c.Status {
			case "success", "error", "cancelled":
			default:
				rec.pending = true
			}
			rec.turns = append(rec.turns, geminiCallTurns(at, c)...)
		}
	case "info", "error", "warning":
	default:
		rec.warnings = append(rec.warnings, "unknown message type "+quote(m.Type))
	}
	return rec
}

// geminiCallTurns are a tool call and its result.
func geminiCallTurns(at time.Time, c geminiCall) []Turn {
	var a geminiArgs
	_ = json.Unmarshal(c.Args, &a) // arguments of another shape name no command or file
	call := Turn{Time: at, Role: RoleAssistant, Tool: c.Name, Command: a.Command, Changed: geminiChanges[c.Name]}
	if f := cmp.Or(a.FilePath, a.AbsolutePath); f != "" {
		call.Files = []string{f}
	} else {
		call.Files = a.Paths
	}
	if call.Command == "" && len(call.Files) == 0 {
		call.Text = string(c.Args)
	}
	out, failed := geminiResult(c.Result)
	res := Turn{Time: cmp.Or(parseTime(c.Timestamp), at), Role: RoleTool, Tool: c.Name, Command: a.Command, Text: out}
	if a.Command != "" {
		res.ExitCode = exitCodeIn(out)
	}
	res.Failed = failed || c.Status == "error" || (res.ExitCode != nil && *res.ExitCode != 0)
	return []Turn{call, res}
}

// geminiResult reads a tool's function responses: their output, or their
// error.
func geminiResult(raw json.RawMessage) (string, bool) {
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Output string `json:"output"`
				Error  string `json:"error"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var out []string
	failed := false
	for _, p := range parts {
		resp := p.FunctionResponse.Response
		if resp.Error != "" {
			out, failed = append(out, resp.Error), true
		} else if resp.Output != "" {
			out = append(out, resp.Output)
		}
	}
	return strings.Join(out, "\n"), failed
}

// partsText reads content given as a string, a part ({text}) or parts.
func partsText(raw json.RawMessage) string {
	var one struct {
		Text string `json:"text"`
	}
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &one) == nil {
		return one.Text
	}
	return textOf(raw)
}
