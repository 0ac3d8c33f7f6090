package api

import "time"

// GitTree is a git working tree a namespace has on this machine: the
// memories of the namespace that name files or symbols are checked
// against it. Trees are local to a machine and never replicated.
type GitTree struct {
	Namespace string `json:"namespace"`
	Root      string `json:"root"`   // absolute top directory of the working tree
	Source    string `json:"source"` // what made it known: TreeFromMap, TreeFromStale or TreeFromHook
	// Missing is set when the directory is gone (or no longer a working
	// tree) since it was registered.
	Missing bool `json:"missing,omitempty"`
}

// Where a namespace's trees come from (GitTree.Source).
const (
	TreeFromMap   = "map"   // a `memmesh map` glob matches the tree
	TreeFromStale = "stale" // `memmesh stale --git` ran in it
	TreeFromHook  = "hook"  // `memmesh hooks install --git` ran in it
)

// GitCheckRequest asks for the trees of a namespace (or the one tree at
// Dir, registered for the namespace first) to be checked against their
// repositories now.
type GitCheckRequest struct {
	Namespace string `json:"namespace,omitempty"`
	// Dir is a directory inside a working tree; empty checks every tree
	// the namespace has.
	Dir string `json:"dir,omitempty"`
	// Source is what asks: TreeFromStale (default) or TreeFromHook.
	Source string `json:"source,omitempty"`
	// Background returns at once and checks after the call.
	Background bool `json:"background,omitempty"`
}

// GitCheck is the outcome of checking one tree.
type GitCheck struct {
	Root    string `json:"root"`
	Head    string `json:"head,omitempty"` // the commit checked up to
	From    string `json:"from,omitempty"` // the commit the previous check reached
	Commits int    `json:"commits"`        // new commits read
	Files   int    `json:"files"`          // files those commits changed
	Full    bool   `json:"full,omitempty"` // the history was read from the start
	// Stale counts the memories of the namespace this tree makes stale:
	// all of them after a full read or a check without new commits,
	// those naming a file the new commits changed otherwise.
	Stale   int       `json:"stale"`
	Notes   []string  `json:"notes,omitempty"`   // why the check is partial or did not run
	TookMS  float64   `json:"took_ms"`           // wall time of the check
	At      time.Time `json:"at"`                // when it ran
	Pending bool      `json:"pending,omitempty"` // a background check was queued
}

// The rules of git staleness (LifecycleReport.StaleByRule).
const (
	StaleFileChanged = "file-changed"
	StaleFileGone    = "file-gone"
	StaleSymbolGone  = "symbol-gone"
)
