package api

import "time"

// Symbol is a definition in a source file: a function, a method, a type,
// class, struct, interface, trait or enum.
type Symbol struct {
	Name string `json:"name"`           // Commit
	Qual string `json:"qual,omitempty"` // Store.Commit for a method; empty when it is Name
	Kind string `json:"kind"`
	Line int    `json:"line"` // 1-based
}

// Qualified returns the symbol's qualified name: Type.Method for a
// method, its name otherwise.
func (s Symbol) Qualified() string {
	if s.Qual != "" {
		return s.Qual
	}
	return s.Name
}

// SymbolLocation is a symbol where it is defined.
type SymbolLocation struct {
	Symbol
	File      string `json:"file"` // slash-separated, relative to Root
	Root      string `json:"root"` // the working tree
	Namespace string `json:"namespace"`
}

// SymbolsRequest asks for the symbols whose name or qualified name
// starts with Query (any case), exact names first.
type SymbolsRequest struct {
	Query     string `json:"query"`
	Namespace string `json:"namespace,omitempty"` // only the trees of this namespace
	Limit     int    `json:"limit,omitempty"`     // default 50, at most 1,000
}

// SymbolsIndexRequest asks to index the working tree that holds Dir (an
// absolute path on the daemon's machine) now.
type SymbolsIndexRequest struct {
	Dir       string `json:"dir"`
	Namespace string `json:"namespace,omitempty"` // the namespace the tree's memories are in
}

// SymbolTree is an indexed working tree.
type SymbolTree struct {
	Root      string    `json:"root"`
	Namespace string    `json:"namespace"`
	Files     int       `json:"files"`
	Symbols   int       `json:"symbols"`
	IndexedAt time.Time `json:"indexed_at"`
	Warnings  []string  `json:"warnings,omitempty"`
}

// SymbolsReport says what indexing a tree did.
type SymbolsReport struct {
	SymbolTree
	Parsed  int            `json:"parsed"`  // files parsed (new or changed)
	Removed int            `json:"removed"` // files dropped (deleted, or now skipped)
	Skipped SymbolsSkipped `json:"skipped"`
	TookMS  float64        `json:"took_ms"`
}

// SymbolsSkipped counts the files an index left out, by reason.
type SymbolsSkipped struct {
	Large   int `json:"large,omitempty"`    // over the size limit (never read)
	Binary  int `json:"binary,omitempty"`   // a NUL byte, or not UTF-8
	Special int `json:"special,omitempty"`  // symlinks, devices, paths too long or too deep
	Errors  int `json:"errors,omitempty"`   // unreadable, or a parse that failed
	OverCap int `json:"over_cap,omitempty"` // past the limit of files or symbols per tree
}

// SymbolsProgress is how far indexing a tree is.
type SymbolsProgress struct {
	Done   int `json:"done"`   // files looked at
	Total  int `json:"total"`  // source files found
	Parsed int `json:"parsed"` // of those, parsed
}
