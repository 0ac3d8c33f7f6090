package api

import (
	"time"

	"github.com/memmesh/memmesh/model"
)

// Edge is a typed, directed link as the service shows it. Endpoints are
// memory ids ("m-" + id) or artefacts ("file:path", "file:path:10-20",
// "code:path::symbol", "url:https://...").
type Edge struct {
	model.Edge
}

// LinkRequest creates (or revives) the edge From -Rel-> To.
type LinkRequest struct {
	From      string    `json:"from"`
	Rel       string    `json:"rel"`
	To        string    `json:"to"`
	Notes     string    `json:"notes,omitempty"`
	Strength  *float64  `json:"strength,omitempty"` // 0..1, default 1
	Origin    string    `json:"origin,omitempty"`   // default "manual"
	ValidFrom time.Time `json:"valid_from,omitzero"`
	ValidTo   time.Time `json:"valid_to,omitzero"`
}

// Direction selects which edges of a node a traversal follows.
type Direction string

// Traversal directions.
const (
	Out  Direction = "out"
	In   Direction = "in"
	Both Direction = "both"
)

// TraverseRequest walks the graph breadth-first from Start.
type TraverseRequest struct {
	Start     string    `json:"start"`               // memory id or artefact
	Depth     int       `json:"depth,omitempty"`     // default 1, at most 5
	Direction Direction `json:"direction,omitempty"` // default both
	Rels      []string  `json:"rels,omitempty"`      // only these relations; default all
	AsOf      time.Time `json:"as_of,omitzero"`      // only edges valid then; default now
}

// GraphNode is one node reached by a traversal.
type GraphNode struct {
	ID     string  `json:"id"`               // memory id or artefact
	Depth  int     `json:"depth"`            // hops from the start
	Memory *Memory `json:"memory,omitempty"` // set for memories
}

// TraverseResult holds what a traversal reached, nearest first, and the
// edges it followed.
type TraverseResult struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []Edge      `json:"edges"`
}

// KnownRelations are the relation types with a meaning of their own; other
// kebab-case or snake_case relations are allowed too.
var KnownRelations = []string{
	"related_to", "supersedes", "contradicts", "depends_on", "specializes", "part_of",
	"alternative_to", "builds_on", "caused_by", "led_to", "learned_in", "touches",
	"calls", "imports", "inherits", "defined_in", "similar_to",
}

// AcyclicRelations may not form a cycle: each orders its endpoints (in
// time, or as part and whole). Link refuses an edge that would close one;
// a cycle that appears only when two machines' edges merge is reported.
var AcyclicRelations = []string{"caused_by", "led_to", "supersedes", "part_of"}

// EdgesRequest asks for the live edges at a set of endpoints.
type EdgesRequest struct {
	Endpoints []string  `json:"endpoints"`           // memory ids or artefacts
	Direction Direction `json:"direction,omitempty"` // default both
}

// ImpactRequest asks which memories a file (or a directory) affects.
type ImpactRequest struct {
	// Path is a file path ("internal/db/pool.go", with or without
	// "file:"); a path ending in "/" is a directory and covers every
	// file under it.
	Path string `json:"path"`
	// Depth is how many hops the walk takes back from the memories that
	// touch the file to the memories that build on them (default 2, at
	// most 5).
	Depth int `json:"depth,omitempty"`
}

// Impacted is a memory that a file affects, and how.
type Impacted struct {
	Memory Memory `json:"memory"`
	Depth  int    `json:"depth"` // 0: it touches the file itself
	Via    string `json:"via"`   // "mentions file:PATH", "edge REL file:...", or "REL m-..." (it points at an affected memory)
}

// Cycle is a set of endpoints that edges of one acyclic relation connect
// in a cycle. Link refuses to close one, but two machines can each add an
// edge that is fine alone and closes a cycle once both are merged: such a
// cycle is reported, not hidden, until someone unlinks or invalidates an
// edge on it.
type Cycle struct {
	Rel     string   `json:"rel"`
	Members []string `json:"members"` // endpoints on the cycle, sorted
}

// DoctorReport lists what needs a person's or an agent's decision.
type DoctorReport struct {
	Cycles         []Cycle     `json:"cycles"`
	Conflicts      []string    `json:"conflicts"`      // memories with unresolved sync conflicts
	Contradictions [][2]string `json:"contradictions"` // live memories a contradicts edge connects
	// Revocations are the revocations this node holds, standing or not
	// (a revoked device's own, a dispute lost), and Refused what it
	// refused or removed of each revoked device's work made after its
	// revocation.
	Revocations []Revocation  `json:"revocations"`
	Refused     []RefusedWork `json:"refused"`
}

// OriginAutoLink is the origin of the edges memmesh makes by itself between
// near duplicates.
const OriginAutoLink = "auto-link"

// AnalyzeRequest asks for the shape of a namespace's graph.
type AnalyzeRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Limit     int    `json:"limit,omitempty"` // entries per list; default 10, at most 100
}

// Ranked is an endpoint with a score; Title is set for memories.
type Ranked struct {
	ID    string  `json:"id"`
	Title string  `json:"title,omitempty"`
	Score float64 `json:"score"`
}

// Analysis is the shape of a namespace's knowledge graph: its memories
// (active and stale) and every edge at them, valid now.
type Analysis struct {
	Namespace string   `json:"namespace"`
	Memories  int      `json:"memories"`
	Edges     int      `json:"edges"`
	GodNodes  []Ranked `json:"god_nodes"`         // most connected (degree)
	Bridges   []Ranked `json:"bridges,omitempty"` // most shortest paths through them (betweenness); omitted for graphs over maxBetweenness
	PageRank  []Ranked `json:"pagerank"`          // most linked-to, transitively
	Gaps      []Ranked `json:"gaps"`              // memories with no edge at all
	GapCount  int      `json:"gap_count"`         // all of them, beyond the list
}
