package api

import (
	"time"
)

// ChangesRequest asks what changed after a position of the change log, so
// that a client keeping a copy of part of the store (the server-memory
// profile's graph) updates it instead of reading it all again.
type ChangesRequest struct {
	// After is the position the client's copy is at: the Next of the last
	// answer. A position beyond the log's end (a client that started from
	// ^uint64(0), or whose node was replaced) answers Reset.
	After uint64 `json:"after"`
	// Namespace keeps the memories of this namespace only; "" keeps all.
	Namespace string `json:"namespace,omitempty"`
	// Limit bounds the documents read, up to and by default
	// MaxChangesLimit; a commit of several documents comes whole.
	Limit int `json:"limit,omitempty"`
}

// MaxChangesLimit is the most documents one Changes call reads.
const MaxChangesLimit = 10_000

// ChangesResult is what changed, each document in its newest version.
type ChangesResult struct {
	Memories []Memory `json:"memories"` // any status: a memory deleted or moved away changed too
	Edges    []Edge   `json:"edges"`    // deleted ones too; an erased one has only its id and Deleted
	Purged   []string `json:"purged"`   // ids (m-...) of memories erased (purged, or a revoked device's)
	// Elsewhere holds the ids of the memories changed in other namespaces
	// than the one asked for: one of them may have moved out of it.
	Elsewhere []string `json:"elsewhere,omitempty"`
	Next      uint64   `json:"next"` // the position to ask from next
	More      bool     `json:"more"` // Limit cut the answer: ask again from Next
	// Reset says that After is beyond the log: the client's copy cannot be
	// brought up to date and must be read again; Next is the log's end.
	Reset bool `json:"reset,omitempty"`
}

// An export file (JSON Lines) holds everything a home knows that matters
// to restore it: a header, then the namespace settings, the tombstones of
// purged memories, every memory (deleted ones included) with every field
// and revision, and every edge with its notes, strength, origin, validity
// and deletion. Each line is a JSON object whose "type" says what it
// holds. Files of version 1 (memories only, no header) import too.
const (
	ExportFormat  = "memmesh-export"
	ExportVersion = 2
)

// ExportHeader is the first line of an export file: what wrote it, and how
// many records of each type follow (as counted when the export started).
type ExportHeader struct {
	Type       string    `json:"type"` // "header"
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	Device     string    `json:"device"`
	ExportedAt time.Time `json:"exported_at"`
	Namespaces int       `json:"namespaces"`
	Purged     int       `json:"purged"`
	Memories   int       `json:"memories"`
	Edges      int       `json:"edges"`
}

// Records is how many records the header announces.
func (h ExportHeader) Records() int { return h.Namespaces + h.Purged + h.Memories + h.Edges }

// ImportResult reports what Import did.
type ImportResult struct {
	Lines          int `json:"lines"`           // lines read
	Imported       int `json:"imported"`        // memories stored
	Skipped        int `json:"skipped"`         // memories already here (same id)
	Erased         int `json:"erased"`          // memories not stored: they were purged
	Edges          int `json:"edges"`           // edges stored
	EdgesSkipped   int `json:"edges_skipped"`   // edges already here, or at a memory that is not
	Namespaces     int `json:"namespaces"`      // namespace settings stored
	Purged         int `json:"purged"`          // tombstones stored (their memories erased)
	NamespacesKept int `json:"namespaces_kept"` // namespace settings already here, kept as they are
}
