// Package transcript reads the session transcripts that coding agents'
// clients write (Claude Code, Codex CLI, Gemini CLI, OpenCode, Cline,
// Continue, Aider) into one shape: a session of turns. Each client's format
// is read by an adapter of its own; what an adapter does not understand is
// skipped with a warning naming the file and line.
package transcript

import "time"

// Role is who produced a turn.
type Role string

const (
	RoleUser      Role = "user"      // the person's prompt
	RoleAssistant Role = "assistant" // the agent's reply or its tool call
	RoleTool      Role = "tool"      // a tool's result
)

// Turn is one entry of a session: a prompt, a reply, a tool call or a
// tool's result.
type Turn struct {
	// Index is the turn's position in its session, from 0.
	Index int `json:"index"`
	// Line is the line of the transcript file where the turn starts
	// (from 1), for warnings and for evidence.
	Line int `json:"line,omitempty"`
	// Time is when the client recorded the turn; zero when it does not.
	Time time.Time `json:"time,omitzero"`
	Role Role      `json:"role"`
	// Text is what was said, or the tool's output.
	Text string `json:"text,omitempty"`
	// Tool names the tool a call or result is of ("" for plain text), as
	// the client names it (Bash, Edit, shell, apply_patch...).
	Tool string `json:"tool,omitempty"`
	// Command is the shell command a tool call runs.
	Command string `json:"command,omitempty"`
	// Files are the files a tool call reads or changes, as written.
	Files []string `json:"files,omitempty"`
	// Changed says the call changes Files (an edit, a write, a patch).
	Changed bool `json:"changed,omitempty"`
	// Failed says the tool reported a failure (an error, a non-zero exit).
	Failed bool `json:"failed,omitempty"`
	// ExitCode is a command's exit status when the client records it.
	ExitCode *int `json:"exit_code,omitempty"`
}

// Session is one conversation of one client, in one project directory.
type Session struct {
	// Client names the client: claude-code, codex, gemini, opencode,
	// cline, continue or aider.
	Client string `json:"client"`
	// ID is the client's id of the session (the file's name when the
	// client has none).
	ID string `json:"id"`
	// Path is the transcript file.
	Path string `json:"path"`
	// Project is the directory the session ran in, when known.
	Project string    `json:"project,omitempty"`
	Start   time.Time `json:"start,omitzero"`
	End     time.Time `json:"end,omitzero"`
	Turns   []Turn    `json:"turns"`
}
