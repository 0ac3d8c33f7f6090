package model

import "time"

// Mesh records are the documents that configure the mesh itself and
// replicate like memories: one per device in the device registry, one per
// namespace with settings, and one per revocation of a device by a member.
const (
	MeshDevice     = "device"
	MeshNamespace  = "namespace"
	MeshRevocation = "revocation"
)

// Namespace replication policies.
const (
	SyncAll   = "all"   // replicate to every device (the default)
	SyncLocal = "local" // never leaves the machine that wrote it
)

// MeshRecord is the materialised form of a mesh document. Fields that do
// not apply to its kind are zero.
type MeshRecord struct {
	ID        string    `json:"id"`
	What      string    `json:"what"`
	Key       string    `json:"key"`
	Name      string    `json:"name,omitempty"`
	AddedBy   string    `json:"added_by,omitempty"`
	AddedAt   time.Time `json:"added_at,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// Revokes is the device a revocation revokes; RevokedBy is the member
	// that revoked it and RevokedAt when, as that member's clock said
	// (shown, never trusted: what the revocation refuses is decided by
	// the frontier its document holds, see crdt.Frontier).
	Revokes   string    `json:"revokes,omitempty"`
	Sync      string    `json:"sync,omitempty"`
	StaleDays int64     `json:"stale_after_days,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	Heads     []string  `json:"heads"`
}

// Revoked reports whether a device record is revoked. A device record
// carries a revocation only when it was revoked before revocations were
// records of their own; a registry's view of a device fills it from its
// revocations.
func (r *MeshRecord) Revoked() bool { return !r.RevokedAt.IsZero() }

// MaxStaleDays bounds a namespace's staleness age (ten years).
const MaxStaleDays = 3650
