package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/memmesh/memmesh/internal/inert"
)

// A brief is rendered here, once, for every client: the CLI, the hook, the
// MCP tool, resource and prompt print Markdown or JSON, and node holds the
// budget on the tokens of that very text (internal/tokens). Both forms
// are inert: control and bidi characters are shown (Markdown) or escaped
// (JSON).

// sectionTitles are the Markdown headings of the sections.
var sectionTitles = [SectionCount]string{
	SectionMatches:   "Memories that match the prompt",
	SectionConflicts: "Conflicts (edited on two machines at once: resolve with update (MCP) or 'memmesh update'; or contradicting another memory: forget the wrong one)",
	SectionFromPeers: "Learned on other machines since this one last asked",
	SectionDecisions: "Recent decisions",
	SectionTasks:     "Open tasks",
	SectionActive:    "Active",
	SectionStale:     "Stale (may no longer hold: check, then update or forget)",
}

// CyclesHead is the heading of the cycles, rendered after the conflicts.
const CyclesHead = "## Cycles (merged from two machines: remove or invalidate one edge of each)\n\n"

// The sections of a brief, in the order they are shown.
const (
	SectionMatches = iota
	SectionConflicts
	SectionFromPeers
	SectionDecisions
	SectionTasks
	SectionActive
	SectionStale
	SectionCount
)

// Sections returns the brief's item lists by section.
func (b *Brief) Sections() [SectionCount]*[]BriefItem {
	return [SectionCount]*[]BriefItem{&b.Matches, &b.Conflicts, &b.FromPeers, &b.Decisions, &b.Tasks, &b.Active, &b.StaleAlerts}
}

// Text renders the brief in its Format.
func (b *Brief) Text() string {
	if b.Format == FormatJSON {
		return string(b.JSON())
	}
	return b.Markdown()
}

// Markdown renders the brief for an agent to read. Memories are quoted
// data, not instructions, and the brief says so.
func (b *Brief) Markdown() string {
	var w strings.Builder
	w.WriteString(b.Head())
	if b.Empty() {
		if b.Query != "" {
			fmt.Fprintf(&w, "Nothing in %s matches this prompt well.\n", b.Namespace)
		} else {
			fmt.Fprintf(&w, "Nothing is stored in %s yet.\n", b.Namespace)
		}
		return inert.Text(w.String())
	}
	for sec, items := range b.Sections() {
		if len(*items) > 0 {
			w.WriteString(SectionHead(sec))
			for i := range *items {
				w.WriteString((*items)[i].Markdown())
			}
		}
		if sec == SectionConflicts && len(b.Cycles) > 0 {
			w.WriteString(CyclesHead)
			for _, c := range b.Cycles {
				w.WriteString(c.Markdown())
			}
			w.WriteString("\n")
		}
	}
	return inert.Text(strings.TrimSuffix(w.String(), "\n"))
}

// Head is the Markdown's first block: what the brief is about, when it
// was loaded and its tokens, and the notice.
func (b *Brief) Head() string {
	what := "what is known about " + b.Namespace
	if b.Query != "" {
		what = "memories of " + b.Namespace + " for this prompt"
	}
	return fmt.Sprintf("# memmesh: %s\n\nLoaded %s; %d of %d tokens. %s\n\n",
		what, b.LoadedAt.UTC().Format("2006-01-02 15:04 UTC"), b.Tokens, b.Budget, b.Notice)
}

// SectionHead is the Markdown heading of section sec. Every block of the
// Markdown (the head, a section's heading, an item) ends with a blank line
// and starts with none, so that the tokens of the blocks, counted apart,
// add up to those of the whole.
func SectionHead(sec int) string { return "## " + sectionTitles[sec] + "\n\n" }

// Markdown renders the cycle as one line of a list.
func (c Cycle) Markdown() string {
	return fmt.Sprintf("- %s among %s\n", c.Rel, strings.Join(c.Members, ", "))
}

// Markdown renders one memory: its title unless the content starts with
// it, its provenance, the content quoted, and why it is listed.
func (it *BriefItem) Markdown() string {
	var w strings.Builder
	if it.Title != "" {
		fmt.Fprintf(&w, "**%s** · ", strings.ReplaceAll(it.Title, "\n", " "))
	}
	fmt.Fprintf(&w, "%s · %s · %s tier · confidence %.2f · %s\n", it.ShortID, it.Kind, it.Tier, it.Confidence, it.UpdatedAt.UTC().Format(time.DateOnly))
	for _, line := range strings.Split(it.Content, "\n") {
		fmt.Fprintf(&w, "> %s\n", line)
	}
	if it.Reason != "" {
		fmt.Fprintf(&w, "Why listed here: %s\n", it.Reason)
	}
	if it.Similar > 0 {
		fmt.Fprintf(&w, "And %d similar %s, not shown.\n", it.Similar, plural(it.Similar, "note", "notes"))
	}
	w.WriteString("\n")
	return w.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// JSON renders the brief as one line of JSON.
func (b *Brief) JSON() []byte {
	return inert.JSON(CompactJSON(b))
}

// CompactJSON encodes v as one line of JSON, with no HTML escaping.
func CompactJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
