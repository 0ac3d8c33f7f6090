package api

import (
	"time"

	"github.com/memmesh/memmesh/model"
)

// ContextRequest asks for a namespace's brief.
type ContextRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Budget    int    `json:"budget,omitempty"` // tokens; default 2000, or 600 with Query
	// Query aims the brief at a task (an agent's prompt): it then holds
	// only the memories that match it well, and nothing when none does.
	Query string `json:"query,omitempty"`
	// Format is the form whose tokens the budget counts: FormatMarkdown
	// (the default) or FormatJSON.
	Format string `json:"format,omitempty"`
}

// The forms of a brief (ContextRequest.Format).
const (
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// BriefItem is one memory in a brief, shortened to fit.
type BriefItem struct {
	ID         string     `json:"id"`
	ShortID    string     `json:"short_id"`
	Title      string     `json:"title,omitempty"`
	Kind       string     `json:"kind"`
	Tier       model.Tier `json:"tier"`
	Confidence float64    `json:"confidence"`
	Device     string     `json:"device,omitempty"` // the machine that wrote it: for what was learned on other machines
	Agent      string     `json:"agent,omitempty"`
	UpdatedAt  time.Time  `json:"updated_at"`
	Content    string     `json:"content"`
	Truncated  bool       `json:"truncated,omitempty"`
	Reason     string     `json:"reason,omitempty"`  // conflicts and stale alerts: why it is listed there
	Similar    int        `json:"similar,omitempty"` // near duplicates it stands for, not shown
}

// Brief is what an agent should know at the start of a session in a
// namespace (or, with a query, for a task), cut to a token budget counted
// on the text emitted: Markdown or JSON, as Format says.
type Brief struct {
	Namespace   string      `json:"namespace"`
	Notice      string      `json:"notice"`
	Query       string      `json:"query,omitempty"`
	Format      string      `json:"format"`
	LoadedAt    time.Time   `json:"loaded_at"`
	Budget      int         `json:"budget"`
	Tokens      int         `json:"tokens"`            // tokens of the brief in Format, by internal/tokens
	Matches     []BriefItem `json:"matches,omitempty"` // with a query: the memories that match it, best first
	Conflicts   []BriefItem `json:"conflicts"`
	Cycles      []Cycle     `json:"cycles"`           // acyclic relations that merged into a cycle through this namespace
	FromPeers   []BriefItem `json:"from_peers"`       // written or changed on other machines since this one last asked
	Decisions   []BriefItem `json:"recent_decisions"` // kind decision, changed in the last 14 days
	Tasks       []BriefItem `json:"open_tasks"`       // kind task, active
	Active      []BriefItem `json:"active"`           // the other active memories, most important first
	StaleAlerts []BriefItem `json:"stale_alerts"`
}

// Empty reports whether the brief lists nothing.
func (b *Brief) Empty() bool {
	return len(b.Matches)+len(b.Conflicts)+len(b.Cycles)+len(b.FromPeers)+len(b.Decisions)+len(b.Tasks)+len(b.Active)+len(b.StaleAlerts) == 0
}
