package transcript

// The Cline format, read from cline/cline src/shared/ExtensionMessage.ts
// (ClineMessage, ClineAsk, ClineSay, ClineSayTool), src/core/storage/disk.ts
// (the task files) and webview-ui/src/components/chat/ChatRow.tsx (how
// each message shows). It matches Cline 3.x:
//
//	<VS Code user data>/User/globalStorage/saoudrizwan.claude-dev/tasks/<task id>/ui_messages.json
//
// One JSON array of {ts (Unix ms), type: ask|say, ask?, say?, text?,
// partial?}, rewritten whole at every change. say "task" is the first
// prompt and say "user_feedback" the later ones; say "text" and
// "completion_result" are replies; ask or say "command" holds a command
// and "command_output" its output (Cline records no exit status); ask or
// say "tool" holds JSON {tool: editedExistingFile|newFileCreated|readFile
// ..., path}; say "error" and "diff_error" are failures; say
// "api_req_started" holds the request, whose environment details name the
// "Current Working Directory". The task's directory name is its id. The
// task's api_conversation_history.json holds the same conversation as the
// model saw it, without times: it is not read.

import (
	"cmp"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Cline reads Cline's task files.
type Cline struct{}

var _ Adapter = Cline{}

// Client is "cline".
func (Cline) Client() string { return "cline" }

// clineEditors are the user data directories of the VS Code builds Cline
// runs in, on Linux and macOS, under the home directory.
var clineEditors = []string{
	".config/Code", ".config/Code - Insiders", ".config/VSCodium", ".config/Cursor", ".config/Windsurf",
	"Library/Application Support/Code", "Library/Application Support/Code - Insiders",
	"Library/Application Support/VSCodium", "Library/Application Support/Cursor",
}

// Discover lists the ui_messages.json of every task in every editor's
// global storage.
func (Cline) Discover(home string) ([]string, error) {
	var out []string
	for _, e := range clineEditors {
		m, err := glob(filepath.Join(home, e, "User", "globalStorage", "saoudrizwan.claude-dev", "tasks", "*", "ui_messages.json"))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

// Read reads the task at path (its ui_messages.json) from cur.
func (Cline) Read(path string, cur Cursor, lim Limits) (Batch, error) {
	return readDocument("cline", path, cur, lim, func(r *reading, data []byte) (document, bool) {
		return clineParse(r, filepath.Base(filepath.Dir(path)), data)
	})
}

type clineMessage struct {
	TS      int64  `json:"ts"`
	Type    string `json:"type"`
	Ask     string `json:"ask"`
	Say     string `json:"say"`
	Text    string `json:"text"`
	Partial bool   `json:"partial"`
}

// clineQuiet are the asks and says that are the interface's bookkeeping.
var clineQuiet = map[string]bool{
	"api_req_finished": true, "api_req_retried": true, "api_req_failed": true, "deleted_api_reqs": true,
	"reasoning": true, "checkpoint_created": true, "shell_integration_warning": true, "info": true,
	"task_progress": true, "resume_task": true, "resume_completed_task": true, "mistake_limit_reached": true,
	"auto_approval_max_req_reached": true, "browser_action_launch": true, "browser_action": true,
	"browser_action_result": true, "mcp_server_request_started": true, "mcp_server_response": true,
	"mcp_notification": true, "use_mcp_server": true, "load_mcp_documentation": true,
	"user_feedback_diff": true, "new_task": true, "condense": true, "summarize_task": true,
	"report_bug": true, "clineignore_error": true, "generate_explanation": true, "hook": true, "hook_output": true,
}

// clineChanges are the tools that change the files they name.
var clineChanges = map[string]bool{"editedExistingFile": true, "newFileCreated": true, "fileDeleted": true}

// clineCwd finds the working directory in a request's environment details.
var clineCwd = regexp.MustCompile(`Current Working Directory \(([^)\n]+)\)`)

func clineParse(r *reading, task string, data []byte) (document, bool) {
	var msgs []clineMessage
	if err := json.Unmarshal(data, &msgs); err != nil {
		r.warn("not a Cline task: %v", shortErr(err))
		return document{}, false
	}
	doc := document{meta: Meta{ID: task}}
	command := ""
	for _, m := range msgs {
		rec := record{id: strconv.FormatInt(m.TS, 10) + m.Type + m.Ask + m.Say, pending: m.Partial}
		t := Turn{Time: millis(m.TS)}
		kind := cmp.Or(m.Say, m.Ask)
		switch kind {
		case "task", "user_feedback":
			t.Role, t.Text = RoleUser, m.Text
		case "text", "completion_result", "followup", "plan_mode_respond", "act_mode_respond":
			t.Role, t.Text = RoleAssistant, clineReply(m.Text)
		case "command":
			command = strings.TrimSuffix(m.Text, "REQ_APP")
			t.Role, t.Tool, t.Command = RoleAssistant, "execute_command", command
		case "command_output":
			t.Role, t.Tool, t.Command, t.Text = RoleTool, "execute_command", command, m.Text
		case "tool":
			t = clineTool(t, m.Text)
		case "error", "diff_error":
			t.Role, t.Tool, t.Text, t.Failed = RoleTool, kind, m.Text, true
		case "api_req_started":
			if c := clineCwd.FindStringSubmatch(m.Text); c != nil && doc.meta.Project == "" {
				doc.meta.Project = strings.TrimSpace(c[1])
			}
		default:
			if !clineQuiet[kind] {
				rec.warnings = append(rec.warnings, "unknown message "+quote(m.Type+" "+kind))
			}
		}
		if t.Role != "" && (t.Text != "" || t.Command != "" || t.Tool != "") {
			rec.turns = []Turn{t}
		}
		doc.records = append(doc.records, rec)
	}
	return doc, true
}

// clineReply reads a reply that is text, or a followup's JSON {question}.
func clineReply(text string) string {
	var q struct {
		Question string `json:"question"`
		Response string `json:"response"`
	}
	if strings.HasPrefix(text, "{") && json.Unmarshal([]byte(text), &q) == nil {
		return cmp.Or(q.Question, q.Response, text)
	}
	return text
}

// clineTool reads a tool message's JSON {tool, path}.
func clineTool(t Turn, text string) Turn {
	var st struct {
		Tool string `json:"tool"`
		Path string `json:"path"`
	}
	_ = json.Unmarshal([]byte(text), &st) // a tool message of another shape names no tool
	t.Role, t.Tool, t.Changed = RoleAssistant, cmp.Or(st.Tool, "tool"), clineChanges[st.Tool]
	if st.Path != "" {
		t.Files = []string{st.Path}
	}
	return t
}
