package api

import (
	"strings"
	"time"
)

// KindSession is the kind of a session's summary memory.
const KindSession = "session"

// SessionTag is the tag that ties a memory (an agent's handoff, say) to a
// session.
func SessionTag(id string) string { return "session:" + strings.ToLower(id) }

// Session scopes of SessionSearchRequest.
const (
	ScopeAll       = ""          // every turn
	ScopePrompts   = "prompts"   // what the person asked
	ScopeCommands  = "commands"  // shell commands run
	ScopeFiles     = "files"     // turns that read or changed files
	ScopeErrors    = "errors"    // tool calls that failed
	ScopeDecisions = "decisions" // turns that state a decision
)

// Limits of session requests.
const (
	MaxSessionList  = 500
	MaxSessionHits  = 200
	MaxSessionTurns = 100_000 // turns of one session kept on its machine
	MaxTurnText     = 16 << 10
	MaxSessionQuery = 1_000 // bytes of a session search's query
)

// SessionsRequest selects the sessions listed, newest first.
type SessionsRequest struct {
	Namespace string    `json:"namespace,omitempty"`
	Client    string    `json:"client,omitempty"`
	Device    string    `json:"device,omitempty"` // device id or name
	Since     time.Time `json:"since,omitzero"`
	Until     time.Time `json:"until,omitzero"`
	Limit     int       `json:"limit,omitempty"` // default 50
}

// Session is one agent session of any machine of the mesh, as its summary
// memory tells; the machine that ran it also has its turns (Local).
type Session struct {
	ID         string    `json:"id"` // the client's session id
	Client     string    `json:"client"`
	Project    string    `json:"project,omitempty"`
	Namespace  string    `json:"namespace"`
	Device     string    `json:"device"`
	DeviceName string    `json:"device_name,omitempty"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Turns      int       `json:"turns"`
	// FilesChanged and Commands are what the session changed and ran,
	// first seen first (capped).
	FilesChanged []string `json:"files_changed"`
	Commands     []string `json:"commands"`
	Failures     int      `json:"failures"` // tool calls that failed
	Title        string   `json:"title"`
	Summary      string   `json:"summary"`    // the summary memory's text
	SummaryID    string   `json:"summary_id"` // the summary memory
	Local        bool     `json:"local"`      // its turns are on this machine
	// Learned and Strengthened count the memories this machine learned
	// from the session's turns, and those it repeated (on the machine
	// that ran it).
	Learned      int `json:"learned,omitempty"`
	Strengthened int `json:"strengthened,omitempty"`
}

// SessionTurn is one turn of a session, scrubbed of secrets.
type SessionTurn struct {
	Index   int       `json:"index"`
	Time    time.Time `json:"time,omitzero"`
	Role    string    `json:"role"`
	Text    string    `json:"text,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	Command string    `json:"command,omitempty"`
	Files   []string  `json:"files,omitempty"`
	Changed bool      `json:"changed,omitempty"`
	Failed  bool      `json:"failed,omitempty"`
}

// SessionDetail is a session with its turns (none when they are on
// another machine).
type SessionDetail struct {
	Session
	Transcript []SessionTurn `json:"transcript"`
	// Lessons are the memories this machine learned from the session.
	Lessons []Lesson `json:"lessons"`
	// Handoffs are the summaries agents wrote of the session and tagged
	// with it (SessionTag), on any machine.
	Handoffs []MemoryRef `json:"handoffs"`
}

// MemoryRef names a memory.
type MemoryRef struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Title string `json:"title"`
}

// Lesson is a memory learned from a session, with its evidence.
type Lesson struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Rule   string `json:"rule"`   // why it was learned (user-correction, bug-fix, ...)
	Turns  []int  `json:"turns"`  // the session's turns it comes from
	Repeat bool   `json:"repeat"` // it strengthened a memory that was there
}

// SessionSearchRequest searches the turns of this machine's sessions.
type SessionSearchRequest struct {
	Query     string    `json:"query"`
	Scope     string    `json:"scope,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Client    string    `json:"client,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	Until     time.Time `json:"until,omitzero"`
	Limit     int       `json:"limit,omitempty"` // default 20
}

// SessionHit is a turn that matched, with its session.
type SessionHit struct {
	Session   string      `json:"session"`
	Client    string      `json:"client"`
	Namespace string      `json:"namespace"`
	Turn      SessionTurn `json:"turn"`
}

// IngestReport says what reading one transcript brought.
type IngestReport struct {
	Client    string `json:"client"`
	Path      string `json:"path"`
	Session   string `json:"session,omitempty"`
	Turns     int    `json:"turns"`            // new turns stored
	Warnings  int    `json:"warnings"`         // parts skipped (the daemon's log names them)
	Restarted bool   `json:"restarted"`        // the file was rewritten: its turns were read again
	More      bool   `json:"more"`             // a bound stopped the read: the rest comes with the next
	Queued    bool   `json:"queued,omitempty"` // not read yet: the daemon reads it in the background
}

// IngestRequest asks a node to read transcripts: one file of a client, or
// (Path "") every transcript it finds. Without Wait it answers at once
// and reads in the background.
type IngestRequest struct {
	Client string `json:"client,omitempty"`
	Path   string `json:"path,omitempty"`
	Wait   bool   `json:"wait,omitempty"`
}
