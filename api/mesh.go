package api

import (
	"time"

	"github.com/memmesh/memmesh/model"
)

// Invite limits.
const (
	DefaultInviteTTL = time.Hour
	MaxInviteTTL     = 7 * 24 * time.Hour
)

// Invitation is a new invite token.
type Invitation struct {
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
	Addrs   []string  `json:"addrs"`
}

// JoinResult reports a successful join.
type JoinResult struct {
	Inviter string   `json:"inviter"` // device id of the member that admitted us
	Addr    string   `json:"addr"`    // where it answered
	Devices int      `json:"devices"` // devices in the registry now
	Members []string `json:"members"` // member addresses contacted
}

// Device is one entry of the device registry. A revoked device has
// RevokedBy and RevokedAt set from the first of the revocations that
// stand against it.
type Device struct {
	model.MeshRecord
	Self bool `json:"self"`
	// Revocations are the revocations of this device that this node
	// holds, whether they stand or not.
	Revocations []Revocation `json:"revocations,omitempty"`
	// Refused is what this node refused or removed of the device's work
	// beyond the frontier of its revocation.
	Refused *RefusedWork `json:"refused,omitempty"`
}

// Revocation is one member's revocation of a device, as this node judges
// it from what each revoker held of the other's work (never from a clock).
type Revocation struct {
	Revokes string    `json:"revokes"`
	By      string    `json:"by"`
	At      time.Time `json:"at"` // as the revoker's clock said; shown, never trusted
	// Frontier counts the documents the revoker held of the revoked
	// device's work: nothing else of that work stands.
	Frontier int  `json:"frontier"`
	Stands   bool `json:"stands"`
	// Why says why it does not stand (the revoker had been revoked before
	// it), or, for one that stands, that two devices revoked each other
	// at once.
	Why string `json:"why,omitempty"`
}

// RefusedWork is what a node refused or removed of a revoked device's
// work made beyond its revocation's frontier.
type RefusedWork struct {
	Device    string    `json:"device"`
	Changes   int       `json:"changes"`   // changes removed from documents this node held
	Documents int       `json:"documents"` // documents those changes were in
	Erased    int       `json:"erased"`    // documents nothing was left of (the device made them)
	Purges    int       `json:"purges"`    // purges undone
	Refused   int       `json:"refused"`   // documents refused on receipt with nothing to keep
	Last      time.Time `json:"last,omitzero"`
}

// NamespaceChange changes a namespace's settings; nil fields are left as
// they are.
type NamespaceChange struct {
	// Sync is the replication policy: model.SyncLocal keeps the namespace's
	// memories on the machine that wrote them (enforced when sending and
	// when receiving), model.SyncAll replicates them.
	Sync *string `json:"sync,omitempty"`
	// StaleAfter is the age after which a memory that was not updated is
	// stale, in whole days ("30d"), or "default" (60 days).
	StaleAfter *string `json:"stale_after,omitempty"`
}

// Peer is one other device of the mesh as this node sees it.
type Peer struct {
	Device   string        `json:"device"`
	Name     string        `json:"name"`
	Addr     string        `json:"addr"`
	State    string        `json:"state"`         // alive, suspect, dead, left, unknown (never seen), revoked
	Via      []string      `json:"via,omitempty"` // alive but not reached directly: the devices that reach it
	RTT      time.Duration `json:"rtt_ns"`
	LastSync time.Time     `json:"last_sync,omitzero"` // last complete pull from it
	Pulls    int           `json:"pulls"`              // pulls from it since this node started
	Behind   int           `json:"behind"`             // our documents it lacks, as far as the last exchanges tell (see Mesh.Peers)
	Version  string        `json:"version"`
	LastErr  string        `json:"last_error,omitempty"`
}

// MeshStatus summarises this node's part in the mesh.
type MeshStatus struct {
	Device    string    `json:"device"`
	Name      string    `json:"name"`
	Enabled   bool      `json:"enabled"` // false: the node runs without the mesh
	Listen    string    `json:"listen,omitempty"`
	Advertise string    `json:"advertise,omitempty"`
	Devices   int       `json:"devices"`     // in the registry, this one included, revoked ones not
	Alive     int       `json:"peers_alive"` // other devices alive now
	Peers     int       `json:"peers"`       // other devices in the registry
	LastSync  time.Time `json:"last_sync,omitzero"`
	Behind    int       `json:"behind"` // most documents any peer is behind us
	Errors    []string  `json:"errors,omitempty"`
}
