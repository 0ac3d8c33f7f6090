package transcript

// The Aider format, read from Aider-AI/aider aider/io.py (InputOutput:
// append_chat_history, user_input, ai_output, tool_output, tool_error)
// and aider/commands.py (/run, its alias !, /test). It matches Aider 0.50
// to 0.86:
//
//	<project>/.aider.chat.history.md
//
// Markdown, appended to. Each run starts with "# aider chat started at
// 2006-01-02 15:04:05" (local time, the only time written). The user's
// input is written as "#### " lines; the model's reply as plain text in
// one piece; Aider's own messages (edits applied, commits, errors, the
// output of commands) as "> " lines, one message at a time. A turn runs
// from its first line to the first line of another kind, so a reply that
// quotes with "> " or has "#### " headings is read as turns of those
// kinds: the format does not tell them apart. Files edited are named by
// "> Applied edit to PATH"; commands run by the user are "#### /run CMD",
// "#### !CMD" and "#### /test CMD"; no exit status is written. The file
// holds every run in the project: its session is the file.

import (
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Aider reads Aider's chat histories.
type Aider struct {
	// Roots are the project directories searched for histories (Aider
	// writes them where it runs).
	Roots []string
}

var _ Adapter = Aider{}

// aiderFile is the name of Aider's chat history.
const aiderFile = ".aider.chat.history.md"

// Client is "aider".
func (Aider) Client() string { return "aider" }

// Discover lists the histories in the home directory and under the
// roots, down to four directories deep.
func (a Aider) Discover(home string) ([]string, error) {
	var out []string
	if fi, err := os.Stat(filepath.Join(home, aiderFile)); err == nil && fi.Mode().IsRegular() {
		out = append(out, filepath.Join(home, aiderFile))
	}
	for _, root := range a.Roots {
		m, err := walkFiles(root, 4, func(name string) bool { return name == aiderFile })
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

// Read reads the history at path from cur.
func (Aider) Read(path string, cur Cursor, lim Limits) (Batch, error) {
	cur.Meta.ID = cmp.Or(cur.Meta.ID, path)
	cur.Meta.Project = cmp.Or(cur.Meta.Project, filepath.Dir(path))
	return readLines("aider", path, cur, lim, aiderLine)
}

var (
	aiderStarted = []byte("# aider chat started at ")
	aiderUser    = []byte("#### ")
	aiderTool    = []byte("> ")
)

func aiderLine(r *reading, line []byte) {
	switch {
	case bytes.HasPrefix(line, aiderStarted):
		r.flush()
		if t, err := time.ParseInLocation(time.DateTime, string(bytes.TrimSpace(line[len(aiderStarted):])), time.Local); err == nil {
			r.cur.Meta.End = t // the time of the run, for its turns
			if r.cur.Meta.Start.IsZero() {
				r.cur.Meta.Start = t
			}
		}
	case bytes.HasPrefix(line, aiderUser):
		r.extend(RoleUser, strings.TrimSpace(string(line[len(aiderUser):])))
	case bytes.HasPrefix(line, aiderTool):
		r.extend(RoleTool, strings.TrimSpace(string(line[len(aiderTool):])))
	case len(bytes.TrimSpace(line)) == 0:
		if r.open != nil && r.open.Role == RoleAssistant {
			r.extend(RoleAssistant, "")
		}
	default:
		r.extend(RoleAssistant, strings.TrimRight(string(line), " "))
	}
}

// extend adds a line to the turn being read, or starts a turn when the
// line is of another kind.
func (r *reading) extend(role Role, text string) {
	if r.open == nil || r.open.Role != role {
		r.flush()
		r.open = &Turn{Line: r.line, Role: role, Time: r.cur.Meta.End}
		r.open.Text = text
		r.aiderNotes(text)
		return
	}
	if len(r.open.Text) < r.lim.TurnText {
		r.open.Text += "\n" + text
	} else {
		r.open.Cut += 1 + len(text)
	}
	r.aiderNotes(text)
}

// aiderNotes reads the commands and edits a line of the open turn names.
func (r *reading) aiderNotes(text string) {
	t := r.open
	switch t.Role {
	case RoleUser:
		for _, p := range []string{"/run ", "!", "/test "} {
			if cmd, ok := strings.CutPrefix(text, p); ok && t.Command == "" {
				t.Tool, t.Command = strings.TrimSpace(p), strings.TrimSpace(cmd)
			}
		}
	case RoleTool:
		if f, ok := strings.CutPrefix(text, "Applied edit to "); ok {
			t.Tool, t.Changed, t.Files = "edit", true, append(t.Files, strings.TrimSpace(f))
		}
	}
}
