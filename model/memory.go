package model

import "time"

// Status is the lifecycle state of a memory.
type Status string

// Memory statuses.
const (
	StatusActive    Status = "active"
	StatusStale     Status = "stale"
	StatusArchived  Status = "archived"
	StatusCompacted Status = "compacted"
	StatusDeleted   Status = "deleted"
)

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusActive, StatusStale, StatusArchived, StatusCompacted, StatusDeleted:
		return true
	}
	return false
}

// Tier is the trust tier of a memory: who vouches for it.
type Tier string

// Trust tiers, most trusted first.
const (
	TierHuman Tier = "human"
	TierAgent Tier = "agent"
	TierAuto  Tier = "auto"
)

// Valid reports whether t is a known trust tier.
func (t Tier) Valid() bool {
	return t == TierHuman || t == TierAgent || t == TierAuto
}

// Revision is one version of a memory's content. Revisions are never edited
// or removed; the current content is the newest revision that no other
// revision builds on.
type Revision struct {
	ID     string   `json:"id"`
	Parent string   `json:"parent,omitempty"` // revision this one edits; empty for the first
	Merges []string `json:"merges,omitempty"` // other leaf revisions this one resolves
	Text   string   `json:"text"`
	Device string   `json:"device"`
	// Agent is the client that wrote the revision (name/version), when
	// known; revisions written before it was recorded have none.
	Agent string    `json:"agent,omitempty"`
	At    time.Time `json:"at"`
}

// Provenance records where a memory came from.
type Provenance struct {
	Device    string    `json:"device"`
	Agent     string    `json:"agent,omitempty"`
	Session   string    `json:"session,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// ConfirmedAt and ConfirmedBy record the last time a person or an
	// agent checked the memory and found it still holds, and who.
	ConfirmedAt time.Time `json:"confirmed_at,omitzero"`
	ConfirmedBy string    `json:"confirmed_by,omitempty"`
}

// Memory is the materialised, plain-Go form of a memory document.
type Memory struct {
	ID            string     `json:"id"` // full id (26 base32 characters)
	Namespace     string     `json:"namespace"`
	Title         string     `json:"title,omitempty"`
	Content       string     `json:"content"` // text of the current revision
	Kind          string     `json:"kind"`
	Tags          []string   `json:"tags,omitempty"`    // sorted, unique
	Touches       []string   `json:"touches,omitempty"` // sorted, unique
	Tier          Tier       `json:"tier"`
	Confidence    float64    `json:"confidence"`
	Evergreen     bool       `json:"evergreen,omitempty"`
	Status        Status     `json:"status"`
	CompactedInto string     `json:"compacted_into,omitempty"`
	ExpiresAt     time.Time  `json:"expires_at,omitzero"` // zero: never expires
	Provenance    Provenance `json:"provenance"`
	Revisions     []Revision `json:"revisions"` // oldest first
	// Conflict lists the leaf revisions when more than one exists: edits
	// made concurrently on different machines, none of which is lost.
	Conflict []Revision `json:"conflict,omitempty"`
	Heads    []string   `json:"heads,omitempty"` // Automerge change hashes, sorted
}

// Expired reports whether m has a TTL that has passed at now.
func (m *Memory) Expired(now time.Time) bool {
	return !m.ExpiresAt.IsZero() && !now.Before(m.ExpiresAt)
}

// Edge is the materialised form of an edge document: a typed, directed link
// between two memories or a memory and an artefact.
type Edge struct {
	ID        string    `json:"id"` // EdgeID(From, Rel, To)
	From      string    `json:"from"`
	Rel       string    `json:"rel"`
	To        string    `json:"to"`
	Notes     string    `json:"notes,omitempty"`
	Strength  float64   `json:"strength"`
	Origin    string    `json:"origin"`
	ValidFrom time.Time `json:"valid_from,omitzero"`
	ValidTo   time.Time `json:"valid_to,omitzero"`
	Deleted   bool      `json:"deleted,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Heads     []string  `json:"heads"`
}
