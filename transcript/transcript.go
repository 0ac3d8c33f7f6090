// Package transcript reads the session transcripts that coding agents'
// clients write (Claude Code, Codex CLI, Gemini CLI, OpenCode, Cline,
// Continue, Aider) into one shape: a session of turns. Each client's format
// is read by an adapter of its own (one file each); what an adapter does
// not understand is skipped with a warning naming the file and line.
//
// Reading is incremental: an adapter reads from a Cursor and returns the
// cursor to read from next, so that re-reading a transcript that grew by
// one turn reads only the new bytes (line formats) or parses the document
// again but returns only the new turns (whole-document formats). Every
// read is bounded by Limits: the length of a line, the size of a document,
// the text of a turn, the turns and the bytes of one read.
//
// Adapters return raw text: scrubbing secrets is the business of whoever
// stores or indexes it. Nothing here logs turn text; warnings name the
// file, the line and the kind of record, never its content.
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
	// (from 1), for warnings and for evidence; 0 for the formats that are
	// one JSON document (Gemini CLI, Cline, Continue) or many (OpenCode).
	Line int `json:"line,omitempty"`
	// Time is when the client recorded the turn; zero when it does not.
	Time time.Time `json:"time,omitzero"`
	Role Role      `json:"role"`
	// Text is what was said, or the tool's output.
	Text string `json:"text,omitempty"`
	// Cut is how many bytes of Text were left out to hold Limits.TurnText.
	Cut int `json:"cut,omitempty"`
	// Tool names the tool a call or result is of ("" for plain text), as
	// the client names it (Bash, Edit, shell, apply_patch...).
	Tool string `json:"tool,omitempty"`
	// Command is the shell command a tool call runs (on a result: the
	// command it is the result of, when the call was read).
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
	Project string `json:"project,omitempty"`
	// Title is the client's title or summary of the session, when it
	// writes one.
	Title string    `json:"title,omitempty"`
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	Turns []Turn    `json:"turns"`
}

// Warning is a part of a transcript that was skipped: a line that is not
// JSON, a record of a kind the adapter does not know, a line or document
// over its limit. It names where, never what the text said.
type Warning struct {
	Path string `json:"path"`
	// Line is the line of the file (from 1); 0 when the format has no
	// lines to speak of (a JSON document), then Record says which record.
	Line int `json:"line,omitempty"`
	// Record is the record's position in a JSON document (from 1).
	Record int    `json:"record,omitempty"`
	Reason string `json:"reason"`
}

// Batch is what one read returns: the session's metadata and the turns
// that are new since the cursor it started from.
type Batch struct {
	// Session holds the turns new since the cursor (Index continues from
	// the turns read before) and the session's metadata as known so far.
	Session Session
	// Cursor is where the next read starts; keep it with the session.
	Cursor Cursor
	// Warnings are the parts skipped by this read.
	Warnings []Warning
	// More says a limit of the read stopped it before the end of what is
	// there: read again from Cursor for the rest.
	More bool
	// Restarted says the file was rewritten or truncated under the
	// reader, so it was read from its start again: the turns returned
	// replace all those read before.
	Restarted bool
}

// Adapter reads one client's transcripts.
type Adapter interface {
	// Client names the client, as Session.Client does.
	Client() string
	// Discover lists the transcripts under the client's default
	// locations in the home directory home (and, for the clients that
	// keep them in projects, under the configured project roots). A
	// location that does not exist lists nothing.
	Discover(home string) ([]string, error)
	// Read reads the transcript at path from cur (the zero Cursor reads
	// from the start), within lim (zero fields take the defaults). Only
	// an unreadable file is an error; what cannot be understood is a
	// warning.
	Read(path string, cur Cursor, lim Limits) (Batch, error)
}
