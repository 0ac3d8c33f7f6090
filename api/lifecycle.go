package api

import (
	"time"

	"github.com/memmesh/memmesh/model"
)

// LifecycleReport is the outcome of a lifecycle pass.
type LifecycleReport struct {
	At          time.Time        `json:"at"`
	TookMS      float64          `json:"took_ms"`
	Memories    int              `json:"memories"` // every memory, whatever its status
	Live        int              `json:"live"`     // active or marked stale, not expired
	Expired     int              `json:"expired"`  // past their TTL: out of searches and lists
	Stale       int              `json:"stale"`    // active, but stale by age, supersession, lack of links or git
	Decayed     int              `json:"decayed"`  // confidence decayed below half of what was stated
	Promoted    int              `json:"promoted"` // auto-tier memories recalled often enough, now tier agent
	Maturity    map[Maturity]int `json:"maturity"` // live memories by maturity
	StaleByRule map[string]int   `json:"stale_by_rule"`
	Namespaces  map[string]int   `json:"namespaces"` // live memories per namespace
}

// StaleMemory is a memory that may no longer hold, and why.
type StaleMemory struct {
	Memory  Memory   `json:"memory"`
	Reasons []string `json:"reasons"`
}

// StaleRequest asks for a namespace's stale memories.
type StaleRequest struct {
	Namespace string `json:"namespace,omitempty"`
}

// The rules that make an active memory stale (LifecycleReport.StaleByRule;
// it counts reasons: a memory two of whose files changed counts twice).
const (
	StaleSuperseded = "superseded"
	StaleByAge      = "age"
	StaleUnlinked   = "unlinked"
)

// CompactRequest asks for the clusters of stale memories worth compacting.
type CompactRequest struct {
	Namespace string `json:"namespace,omitempty"`
}

// CompactCluster is a group of stale memories that say related things:
// connected by related_to edges or word similarity.
type CompactCluster struct {
	Members []StaleMemory `json:"members"`
}

// CompactPlan lists a namespace's clusters and how to summarise one.
type CompactPlan struct {
	Namespace string           `json:"namespace"`
	Clusters  []CompactCluster `json:"clusters"`
	Prompt    string           `json:"prompt"` // instructions for whoever writes a summary
}

// CompactApplyRequest replaces memories with a summary of them.
type CompactApplyRequest struct {
	Members []string   `json:"members"` // ids of the memories the summary replaces
	Title   string     `json:"title,omitempty"`
	Summary string     `json:"summary"`
	Tier    model.Tier `json:"tier,omitempty"` // of the summary; default agent
	Agent   string     `json:"agent,omitempty"`
	Session string     `json:"session,omitempty"`
}

// CompactResult is what a compaction wrote.
type CompactResult struct {
	Summary   Memory   `json:"summary"`
	Members   []string `json:"members"`   // now compacted into the summary
	Repointed []Edge   `json:"repointed"` // the new edges to the summary
}

// ReflectRequest asks for a namespace's unconnected memories with
// candidate link targets.
type ReflectRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Limit     int    `json:"limit,omitempty"` // memories to list; default 10, at most 50
}

// Reflection is an unconnected memory and the memories it may relate to.
type Reflection struct {
	Memory     Ranked   `json:"memory"`
	Candidates []Ranked `json:"candidates"` // by search score, best first
}
