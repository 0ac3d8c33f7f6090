package api

import (
	"strconv"
	"strings"
	"time"

	"github.com/memmesh/memmesh/model"
)

// IDPrefix starts every memory id shown to people and agents: "m-" and
// the stored id.
const IDPrefix = "m-"

// Memory is a memory as the service shows it: the materialised document with
// its display ids.
type Memory struct {
	model.Memory
	ID      string `json:"id"`       // "m-" + the full id
	ShortID string `json:"short_id"` // "m-" + the shortest unique prefix
	// Derived on this machine, never replicated.
	Reads         int      `json:"reads"`          // times read here
	Maturity      Maturity `json:"maturity"`       // from Reads
	ConfidenceNow float64  `json:"confidence_now"` // Confidence after decay (half-life since the last update)
	// Replaces is set by an update that moved the memory out of a
	// local-only namespace: the id it had there. The move made a new
	// memory, whose history starts at the move, and purged that one, so
	// that no revision written while it was private leaves the machine.
	Replaces string `json:"replaces,omitempty"`
}

// RememberRequest asks the node to store a memory. Only Content is required.
type RememberRequest struct {
	Namespace  string     `json:"namespace,omitempty"`
	Title      string     `json:"title,omitempty"`
	Content    string     `json:"content"`
	Kind       string     `json:"kind,omitempty"`
	Tags       []string   `json:"tags,omitempty"`
	Tier       model.Tier `json:"tier,omitempty"`       // default agent
	Confidence *float64   `json:"confidence,omitempty"` // default by tier
	TTL        string     `json:"ttl,omitempty"`        // e.g. "30d", "none"; default by tier
	Evergreen  bool       `json:"evergreen,omitempty"`  // never expires nor goes stale
	Agent      string     `json:"agent,omitempty"`      // the client that wrote it
	Session    string     `json:"session,omitempty"`
	At         time.Time  `json:"at,omitzero"` // when it was learned; default now
}

// Similar is an existing memory close to a new one.
type Similar struct {
	ID         string  `json:"id"`
	ShortID    string  `json:"short_id"`
	Title      string  `json:"title"`
	Similarity float64 `json:"similarity"` // Jaccard similarity of their words
}

// RememberResult reports what Remember stored.
type RememberResult struct {
	ID          string    `json:"id"`
	ShortID     string    `json:"short_id"`
	DuplicateOf string    `json:"duplicate_of"` // set when the content already existed: ID is that memory
	Similar     []Similar `json:"similar"`
	Redacted    []string  `json:"redacted,omitempty"` // kinds of secrets removed before storing
}

// UpdateRequest changes a memory; nil fields are left as they are.
type UpdateRequest struct {
	Title   *string `json:"title,omitempty"`
	Content *string `json:"content,omitempty"` // appended as a new revision
	// Base is the revision the new Content was made from ("" means the
	// current one). When another revision was made from Base since, the
	// two are kept as a sync conflict instead of the newer being replaced
	// unseen.
	Base       string        `json:"base,omitempty"`
	Namespace  *string       `json:"namespace,omitempty"`
	Kind       *string       `json:"kind,omitempty"`
	AddTags    []string      `json:"add_tags,omitempty"`
	RemoveTags []string      `json:"remove_tags,omitempty"`
	Tier       *model.Tier   `json:"tier,omitempty"`
	Confidence *float64      `json:"confidence,omitempty"`
	Evergreen  *bool         `json:"evergreen,omitempty"`
	Status     *model.Status `json:"status,omitempty"` // active, stale or archived
	TTL        *string       `json:"ttl,omitempty"`    // from now; "none" removes it
	// Confirm records that a person or an agent checked the memory and
	// found it still holds (provenance confirmed_at and confirmed_by):
	// its git staleness clears until the files it names change again.
	// ConfirmedBy says who; default "device <this device's id>".
	Confirm     bool   `json:"confirm,omitempty"`
	ConfirmedBy string `json:"confirmed_by,omitempty"`
	// Agent is the client making the change (name/version), recorded on
	// the revision that new Content adds; "" for a person or unknown.
	Agent string `json:"agent,omitempty"`
}

// ListRequest selects memories to list, newest first.
type ListRequest struct {
	Namespace string         `json:"namespace,omitempty"`
	Tags      []string       `json:"tags,omitempty"`
	Kind      string         `json:"kind,omitempty"`
	Statuses  []model.Status `json:"statuses,omitempty"`
	Tiers     []model.Tier   `json:"tiers,omitempty"`
	Device    string         `json:"device,omitempty"` // as SearchRequest.Device
	Since     time.Time      `json:"since,omitzero"`
	Until     time.Time      `json:"until,omitzero"`
	Limit     int            `json:"limit,omitempty"` // default 50
	// Session, when set, keeps only the memories whose provenance names
	// this session: an agent's session id, or "file:PATH" for what was
	// imported from an agent instruction file (deleted ones are left out).
	Session string `json:"session,omitempty"`
	// Cursor continues a list where the page that returned it (ListPage's
	// Next) ended; "" starts from the newest.
	Cursor string `json:"cursor,omitempty"`
}

// ListPage is a page of a list and where the next one starts.
type ListPage struct {
	Memories []Memory `json:"memories"`
	// Next is ListRequest.Cursor for the page after this one; "" when
	// this page was the last (it held fewer than the limit).
	Next string `json:"next,omitempty"`
}

// Stats describes what a node holds.
type Stats struct {
	DeviceID      string         `json:"device_id"`
	Home          string         `json:"home"`
	Memories      int            `json:"memories"` // every memory, deleted included
	ByStatus      map[string]int `json:"by_status"`
	ByNamespace   map[string]int `json:"by_namespace"`
	ByKind        map[string]int `json:"by_kind"`
	ByTier        map[string]int `json:"by_tier"`
	Indexed       uint64         `json:"indexed"` // documents in the search index
	SchemaVersion int            `json:"schema_version"`
}

// Maturity is how well a memory has proven itself on this machine, from
// how often it was read here (local data, never replicated).
type Maturity string

// Maturities, least proven first.
const (
	MaturityCandidate   Maturity = "candidate"   // read fewer than 3 times
	MaturityEstablished Maturity = "established" // read 3 to 9 times
	MaturityProven      Maturity = "proven"      // read 10 times or more
)

// Purged describes a purged memory: erased, with its history and links,
// on every node that has received the tombstone.
type Purged struct {
	ID     string    `json:"id"` // "m-" + the full id
	At     time.Time `json:"purged_at"`
	By     string    `json:"purged_by"`                // the device that purged it
	ByName string    `json:"purged_by_name,omitempty"` // that device's name, when known here
	// Edges counts the links erased with the memory on this node; Already
	// is set when the memory had been purged before this call.
	Edges   int  `json:"edges"`
	Already bool `json:"already,omitempty"`
}

// Limits on what a memory may hold.
const (
	MaxContentBytes = 1 << 20 // 1 MiB of content
	MaxTitleRunes   = 200
	MaxTags         = 32
)

// DefaultNamespace holds memories captured without a namespace.
const DefaultNamespace = "default"

// ParseTTL parses a time to live: "none" (never expires), a number of days
// ("90d"), weeks ("2w") or a Go duration ("36h"). A zero duration is
// refused rather than read as "none" or "at once".
func ParseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "none", "never":
		return 0, nil
	case "":
		return 0, Invalidf("empty ttl: use e.g. 30d, 2w, 36h or none")
	}
	d, err := parseDuration(s)
	if err == nil && d == 0 {
		return 0, Invalidf("ttl %q: a time to live of zero means nothing; use none for no expiry, or e.g. 30d", s)
	}
	return d, err
}

// parseDuration parses days, weeks or a Go duration, not negative.
func parseDuration(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || !(v >= 0 && v <= 100*365) { // NaN too
				return 0, Invalidf("ttl %q: use e.g. 30d, 2w, 36h or none", s)
			}
			return time.Duration(v * float64(unit)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, Invalidf("ttl %q: use e.g. 30d, 2w, 36h or none", s)
	}
	return d, nil
}
