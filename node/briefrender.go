package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/internal/tokens"
)

// A brief is rendered here, once, for every client: the CLI, the hook, the
// MCP tool, resource and prompt print Markdown or JSON, and the budget
// is held on the tokens of that very text (internal/tokens). Both forms
// are inert: control and bidi characters are shown (Markdown) or escaped
// (JSON).

// sectionTitles are the Markdown headings of the sections.
var sectionTitles = [sectionCount]string{
	sectionMatches:   "Memories that match the prompt",
	sectionConflicts: "Conflicts (edited on two machines at once: resolve with update (MCP) or 'memmesh update'; or contradicting another memory: forget the wrong one)",
	sectionFromPeers: "Learned on other machines since this one last asked",
	sectionDecisions: "Recent decisions",
	sectionTasks:     "Open tasks",
	sectionActive:    "Active",
	sectionStale:     "Stale (may no longer hold: check, then update or forget)",
}

const cyclesHead = "## Cycles (merged from two machines: remove or invalidate one edge of each)\n\n"

// sections returns the brief's item lists by section.
func (b *Brief) sections() [sectionCount]*[]BriefItem {
	return [sectionCount]*[]BriefItem{&b.Matches, &b.Conflicts, &b.FromPeers, &b.Decisions, &b.Tasks, &b.Active, &b.StaleAlerts}
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
	w.WriteString(b.markdownHead())
	if b.Empty() {
		if b.Query != "" {
			fmt.Fprintf(&w, "Nothing in %s matches this prompt well.\n", b.Namespace)
		} else {
			fmt.Fprintf(&w, "Nothing is stored in %s yet.\n", b.Namespace)
		}
		return inert.Text(w.String())
	}
	for sec, items := range b.sections() {
		if len(*items) > 0 {
			w.WriteString(sectionHead(sec))
			for i := range *items {
				w.WriteString(markdownItem(&(*items)[i]))
			}
		}
		if sec == sectionConflicts && len(b.Cycles) > 0 {
			w.WriteString(cyclesHead)
			for _, c := range b.Cycles {
				w.WriteString(cycleLine(c))
			}
			w.WriteString("\n")
		}
	}
	return inert.Text(strings.TrimSuffix(w.String(), "\n"))
}

func (b *Brief) markdownHead() string {
	what := "what is known about " + b.Namespace
	if b.Query != "" {
		what = "memories of " + b.Namespace + " for this prompt"
	}
	return fmt.Sprintf("# memmesh: %s\n\nLoaded %s; %d of %d tokens. %s\n\n",
		what, b.LoadedAt.UTC().Format("2006-01-02 15:04 UTC"), b.Tokens, b.Budget, b.Notice)
}

// Every block of the Markdown (the head, a section's heading, an item)
// ends with a blank line and starts with none, so that the tokens of the
// blocks, counted apart, add up to those of the whole.
func sectionHead(sec int) string { return "## " + sectionTitles[sec] + "\n\n" }

func cycleLine(c Cycle) string {
	return fmt.Sprintf("- %s among %s\n", c.Rel, strings.Join(c.Members, ", "))
}

// markdownItem renders one memory: its title unless the content starts
// with it, its provenance, the content quoted, and why it is listed.
func markdownItem(it *BriefItem) string {
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
	return inert.JSON(marshalCompact(b))
}

func marshalCompact(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// jsonItemTokens is what an item adds to a brief's JSON: its object
// without the braces, and one token: the braces and the comma between
// items fall into runs of punctuation with the quotes around them.
func (c *tokenCache) jsonItemTokens(it *BriefItem) int {
	j := marshalCompact(it)
	return c.count(string(j[1:len(j)-1])) + 1
}

// tokenCache remembers the token counts of rendered items, so that a brief
// counts only what it has not seen: an item's text changes when its memory
// does.
type tokenCache struct {
	mu     sync.Mutex
	counts map[uint64]int
}

// tokenCacheSize bounds the cache; it starts over when full.
const tokenCacheSize = 200_000

func (c *tokenCache) count(s string) int {
	h := fnv.New64a()
	h.Write([]byte(s))
	key := h.Sum64()
	c.mu.Lock()
	n, ok := c.counts[key]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = tokens.Count(s)
	c.mu.Lock()
	if c.counts == nil || len(c.counts) >= tokenCacheSize {
		c.counts = map[uint64]int{}
	}
	c.counts[key] = n
	c.mu.Unlock()
	return n
}

// maxMisses is how many candidates in a row that do not fit a brief
// fills on past before it stops: each one is read from storage.
const maxMisses = 32

// fill puts candidates into b in order while they fit its budget,
// counting each item's rendered text once and summing, then counts the
// whole text and drops the last items should it exceed the budget.
func (n *Node) fill(b *Brief, order iter.Seq[candidate]) error {
	sections := b.sections()
	cost := func(it *BriefItem) int {
		if b.Format == FormatJSON {
			return n.tokenCounts.jsonItemTokens(it)
		}
		return n.tokenCounts.count(inert.Text(markdownItem(it)))
	}
	cycles := b.Cycles
	b.Cycles = []Cycle{}
	var used int
	if b.Format == FormatJSON {
		used = tokens.Count(string(b.JSON()))
	} else {
		used = tokens.Count(b.markdownHead())
	}
	for _, c := range cycles {
		var k int
		if b.Format == FormatJSON {
			k = tokens.Count(string(marshalCompact(c))) + 1
		} else {
			k = tokens.Count(inert.Text(cycleLine(c)))
			if len(b.Cycles) == 0 {
				k += tokens.Count(cyclesHead)
			}
		}
		if used+k <= b.Budget {
			used += k
			b.Cycles = append(b.Cycles, c)
		}
	}
	type added struct{ sec int }
	var log []added
	misses := 0
	for c := range order {
		if misses >= maxMisses || b.Budget-used < 10 {
			break
		}
		m, err := n.load(c.id)
		if err != nil {
			if storageNotFound(err) {
				continue // removed since it was ranked
			}
			return err
		}
		it := n.briefItem(&m)
		it.Reason, it.Similar = n.reason(&c.why), c.similar
		if c.section != sectionFromPeers {
			it.Device = ""
		}
		k := cost(&it)
		if b.Format == FormatMarkdown && len(*sections[c.section]) == 0 {
			k += tokens.Count(sectionHead(c.section))
		}
		if used+k > b.Budget {
			misses++
			continue
		}
		misses = 0
		used += k
		*sections[c.section] = append(*sections[c.section], it)
		log = append(log, added{c.section})
	}
	// The sum of the parts is within a few tokens of the count of the
	// whole; the whole decides.
	b.Tokens = used
	for {
		b.Tokens = tokens.Count(b.Text())
		if b.Tokens <= b.Budget || len(log) == 0 {
			break
		}
		last := log[len(log)-1]
		log = log[:len(log)-1]
		*sections[last.sec] = (*sections[last.sec])[:len(*sections[last.sec])-1]
	}
	// The count is in the text: count once more with it in.
	b.Tokens = tokens.Count(b.Text())
	return nil
}
