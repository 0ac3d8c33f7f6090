package api

import (
	"fmt"
	"strings"
	"time"

	"github.com/memmesh/memmesh/model"
)

// SearchRequest is a full-text search with filters.
type SearchRequest struct {
	Query     string         `json:"query"`
	Namespace string         `json:"namespace,omitempty"`
	Tags      []string       `json:"tags,omitempty"`
	Kind      string         `json:"kind,omitempty"`
	Statuses  []model.Status `json:"statuses,omitempty"` // default active and stale
	Tiers     []model.Tier   `json:"tiers,omitempty"`
	// Device keeps the memories a device wrote (their provenance or any
	// revision): a device id, a unique prefix of one, or its name.
	Device  string    `json:"device,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until,omitzero"`
	Limit   int       `json:"limit,omitempty"` // default 10
	Explain bool      `json:"explain,omitempty"`
	// NoGraph turns graph expansion off: only text matches, ranked by
	// their own scores.
	NoGraph bool `json:"no_graph,omitempty"`
	// Budget, when set, bounds the tokens of the result as JSON (see
	// fitBudget): the best results that fit, long ones as excerpts.
	Budget int `json:"budget,omitempty"`
}

// SearchHit is one search result: the memory with, in place of a content
// longer than HitContentBytes, an excerpt around the words that matched
// (and likewise for the versions of a sync conflict), and without its
// revisions. Get returns the whole memory.
type SearchHit struct {
	Memory
	Score   float64      `json:"score"`
	Explain *Explanation `json:"explain,omitempty"` // the text score; nil for a memory found only through the graph
	// Semantic is set on a memory near the query by meaning: the cosine
	// of its vector to the query's. A memory found by meaning alone (no
	// word of the query matched it) has it and no other reason.
	Semantic float64 `json:"semantic,omitempty"`
	Fusion   *Fusion `json:"fusion,omitempty"` // with Explain, when graph expansion took part
	// Related is set on a memory that does not match the query and was
	// pulled in through a link to a match: why, e.g. "linked from m-… by
	// depends_on". Related memories come after the matches and are not
	// counted in the total.
	Related string `json:"related,omitempty"`
	// Labels say, derived when searched, that the memory may no longer
	// hold: "stale: <reason>", "superseded by m-…", "contradicted by
	// m-…".
	Labels []string `json:"labels,omitempty"`
	// Truncated is set when Content (or a conflicting version) is an
	// excerpt: get or show the memory for all of it.
	Truncated    bool `json:"truncated,omitempty"`
	ContentBytes int  `json:"content_bytes"` // size of the whole content
}

// Explanation breaks a hit's text score into its components:
// Final = BM25 * Confidence * Tier * Recency * Status * Maturity. A memory
// that only the feedback pass found (Match "associated") has the BM25
// and multipliers of that pass, and Final is Associated, their product
// scaled to the best match of the query's words. When the query was also
// searched by meaning, Final is the score of the fused lists, and a
// memory found by meaning alone (Match "meaning") has its cosine as
// Semantic, in place of a BM25.
type Explanation struct {
	BM25       float64 `json:"bm25"`                 // bleve's text score
	Confidence float64 `json:"confidence"`           // multiplier, after decay
	Tier       float64 `json:"tier"`                 // multiplier
	Recency    float64 `json:"recency"`              // multiplier
	Status     float64 `json:"status"`               // multiplier
	Maturity   float64 `json:"maturity"`             // multiplier
	Associated float64 `json:"associated,omitempty"` // the score of a memory found through associations alone
	Semantic   float64 `json:"semantic,omitempty"`   // the cosine of a memory found by meaning alone (its BM25 is 0)
	Final      float64 `json:"final"`
	Match      string  `json:"match"` // search's match kinds: terms, phrase, fuzzy, filter or associated
}

// HitContentBytes bounds the content of a search hit, about a page of
// text around the matched words, so that a search answers in a bounded
// size whatever the memories hold.
const HitContentBytes = 1500

// SearchResult holds the hits of a search, best first.
type SearchResult struct {
	Results []SearchHit `json:"results"`
	Fuzzy   bool        `json:"fuzzy,omitempty"` // no exact match: these are typo-tolerant matches
	Loose   bool        `json:"loose,omitempty"` // no memory holds the quoted phrases: these match their words
	Total   uint64      `json:"total"`           // memories that match; related memories are not counted
	// Tokens is, with a budget, the size of this result as JSON, counted
	// by internal/tokens.
	Tokens int `json:"tokens,omitempty"`
}

// Fusion explains a result's score in a graph-aware search:
// Score = Text + Linked + Session.
type Fusion struct {
	Text    float64 `json:"text"`              // its own text score; 0 when pulled in
	Linked  float64 `json:"linked,omitempty"`  // lent by matches it is linked to
	Session float64 `json:"session,omitempty"` // lent by its session's best matches
	Via     string  `json:"via,omitempty"`     // the match that lent the most
	Rel     string  `json:"rel,omitempty"`     // how it is linked to Via
	Score   float64 `json:"score"`
}

// String explains f in one line, e.g. "text 1.20 + linked 0.31 (thread
// from m-…)".
func (f *Fusion) String() string {
	parts := []string{fmt.Sprintf("text %.3f", f.Text)}
	if f.Linked > 0 {
		parts = append(parts, fmt.Sprintf("linked %.3f (%s from %s)", f.Linked, f.Rel, f.Via))
	}
	if f.Session > 0 {
		parts = append(parts, fmt.Sprintf("session %.3f", f.Session))
	}
	return fmt.Sprintf("%.3f = %s", f.Score, strings.Join(parts, " + "))
}

// The bounds of a search's token budget. The least holds a result's
// envelope and one short excerpt.
const (
	MinSearchBudget = 100
	MaxSearchBudget = 100_000
)

// EmbedStatus says how far the vectors of search by meaning are on this
// machine (memmesh embed status).
type EmbedStatus struct {
	Provider string `json:"provider"` // off, builtin, ollama or openai
	Model    string `json:"model,omitempty"`
	Dims     int    `json:"dims,omitempty"`
	Embedded int    `json:"embedded"` // memories whose vector is up to date
	Total    int    `json:"total"`    // memories to embed
	// Scanning is set while the memories are read to find those without
	// an up-to-date vector (at start, after a reindex): Total is not
	// known until then.
	Scanning bool `json:"scanning,omitempty"`
	// Error is the embedder's last failure, cleared by its next success;
	// meanwhile search goes on by words alone.
	Error string `json:"error,omitempty"`
}
