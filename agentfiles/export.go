package agentfiles

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/model"
)

// DefaultBudget is the size of a managed block in tokens (o200k_base,
// internal/tokens), note and markers included: Claude Code and Codex
// load CLAUDE.md and AGENTS.md whole into every session, so the block
// stays a small part of what they read (about 8 KB of English).
const DefaultBudget = 2000

// Bounds of a budget asked for.
const (
	MinBudget = 200
	MaxBudget = 20000
)

// ExportFormats are the formats a managed block is written into.
var ExportFormats = []Format{ClaudeMD, AgentsMD}

// Errors of Export.
var (
	// ErrEdited means the managed block is not what memmesh wrote: it was
	// edited by hand, and is written over only when forced.
	ErrEdited = errors.New("agentfiles: the managed block was edited by hand")
	// ErrOutOfDate means a check found the block not what an export
	// would write.
	ErrOutOfDate = errors.New("agentfiles: the managed block is out of date")
)

// ExportOptions say what an export writes and how.
type ExportOptions struct {
	Namespace string
	Format    Format
	Budget    int  // tokens of the block; 0 means DefaultBudget
	Check     bool // compare only: ErrOutOfDate when the block differs
	Force     bool // write over a block edited by hand
	// BackupDir receives the backup of the file replaced ("" for beside
	// it); Now names it.
	BackupDir string
	Now       time.Time
}

// ExportResult says what an export found and did.
type ExportResult struct {
	File      string `json:"file"`
	Namespace string `json:"namespace"`
	Shown     int    `json:"shown"`    // memories in the block
	LeftOut   int    `json:"left_out"` // memories that did not fit the budget
	// Skipped are memories imported from this file, or whose text the
	// file says outside the block: the file has them already.
	Skipped int    `json:"skipped"`
	Tokens  int    `json:"tokens"` // of the block
	Changed bool   `json:"changed"`
	Created bool   `json:"created,omitempty"` // the file was made
	Written bool   `json:"written,omitempty"`
	Backup  string `json:"backup,omitempty"` // the replaced file's copy
	Edited  bool   `json:"edited,omitempty"` // the block had been edited by hand
	Reason  string `json:"reason,omitempty"` // why the block is out of date
	Diff    string `json:"diff,omitempty"`   // from the file's block to the one memmesh writes
}

// Export writes the namespace's human-tier conventions and decisions into
// the file's managed block (after the file's last byte when it has none,
// creating the file when it does not exist), within the budget, most
// trusted and most recent first. Every byte outside the block stays as
// it was; the file is written through a temporary file renamed over it,
// after a backup of it. A block whose hash says it was edited by hand is
// refused (ErrEdited, with the diff) unless forced; a read-only file is
// left alone. With Check nothing is written: ErrOutOfDate, with the
// reason and the diff, when the block is not what it would be.
//
// Memories imported from the file itself, and those whose text the file
// says outside the block, are left out, so that an export never repeats
// what the file holds.
func Export(ctx context.Context, svc Service, src Source, opt ExportOptions) (ExportResult, error) {
	res := ExportResult{File: src.Path, Namespace: opt.Namespace}
	if opt.Namespace == "" {
		return res, errors.New("agentfiles: export: no namespace")
	}
	budget := cmp.Or(opt.Budget, DefaultBudget)
	if budget < MinBudget || budget > MaxBudget {
		return res, fmt.Errorf("budget %d: use %d to %d tokens", budget, MinBudget, MaxBudget)
	}
	lim := DefaultLimits()
	f, err := src.Read(lim)
	if err != nil {
		return res, err
	}
	res.Created = !f.Exists
	items, err := Parse(f.Data, lim)
	if err != nil {
		return res, fmt.Errorf("%s: %w; left as it is", src.Path, err)
	}
	old, found, err := FindBlock(f.Data)
	if err != nil {
		return res, fmt.Errorf("%s: %w", src.Path, err)
	}
	said := map[string]bool{}
	for _, it := range items {
		t, _ := secrets.Scrub(it.Text)
		said[normal(t)] = true
	}
	mems, err := exportable(ctx, svc, opt.Namespace)
	if err != nil {
		return res, err
	}
	mems = slices.DeleteFunc(mems, func(m api.Memory) bool {
		skip := m.Provenance.Session == src.Session() || said[normal(m.Content)]
		if skip {
			res.Skipped++
		}
		return skip
	})
	body := render(mems, opt.Namespace, opt.Format, budget, &res)
	block := renderBlock(body, opt.Format)
	res.Tokens = tokens.Count(block)

	if found && old.Body == body {
		return res, nil
	}
	res.Changed = true
	res.Edited = found && old.Edited()
	res.Diff = lineDiff(old.Body, body)
	switch {
	case !f.Exists:
		res.Reason = "the file does not exist"
	case !found:
		res.Reason = "the file has no managed block"
	case res.Edited:
		res.Reason = fmt.Sprintf("the managed block (line %d) was edited by hand", old.Line)
	default:
		res.Reason = "the memories changed since the block was written"
	}
	if res.Edited && !opt.Force {
		return res, fmt.Errorf("%w: %s, line %d; the diff shows what an export would write over (--force writes it, keeping a backup; or move your text out of the block)", ErrEdited, src.Path, old.Line)
	}
	if opt.Check {
		return res, fmt.Errorf("%w: %s: %s", ErrOutOfDate, src.Path, res.Reason)
	}
	if err := writable(f); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	data, err := placeBlock(f.Data, old, found, block, body)
	if err != nil {
		return res, fmt.Errorf("%s: %w; left as it is", src.Path, err)
	}
	res.Backup, err = f.Replace(data, opt.BackupDir, opt.Now)
	if err != nil {
		return res, fmt.Errorf("%s: %w", src.Path, err)
	}
	res.Written = true
	return res, nil
}

// exportable returns the namespace's live human-tier conventions and
// decisions, in the order they are shown: most trusted, then the longest
// held (what was imported keeps its file's order), then by id, so that
// the block changes only when they do (no local read counts, no decay
// with time).
func exportable(ctx context.Context, svc Service, ns string) ([]api.Memory, error) {
	var out []api.Memory
	for _, kind := range []string{"convention", "decision"} {
		ms, err := svc.List(ctx, api.ListRequest{Namespace: ns, Kind: kind, Tiers: []model.Tier{model.TierHuman},
			Statuses: []model.Status{model.StatusActive}, Limit: maxListed})
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	slices.SortFunc(out, func(a, b api.Memory) int {
		return cmp.Or(cmp.Compare(b.Confidence, a.Confidence), a.Provenance.CreatedAt.Compare(b.Provenance.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// entrySlack bounds how many fewer tokens an entry may add to the block
// than it counts alone.
const entrySlack = 8

// idLen is how much of a memory's id the block shows: enough for
// 'memmesh show', and fixed, so that the block does not change when
// other memories make short ids longer.
const idLen = 10 // "m-" and 8 characters

// render returns the block's body: a heading, a note on where it comes
// from, the conventions and the decisions that fit the budget (counted
// on the whole block), and how many were left out.
func render(mems []api.Memory, ns string, format Format, budget int, res *ExportResult) string {
	head := fmt.Sprintf("## Project memory (memmesh)\n\nThe conventions and decisions people recorded in memmesh namespace `%s`. "+
		"Change them with 'memmesh update ID', not here: 'memmesh export --to %s' rewrites this block.\n", ns, format)
	lines := make([]string, len(mems))
	for i := range mems {
		lines[i] = entry(&mems[i], kindHead(mems[i].Kind))
	}
	sections := func(in []bool) string {
		var b strings.Builder
		b.WriteString(head)
		for _, kind := range kindHeads {
			started := false
			for i, m := range mems {
				if !in[i] || m.Kind != kind.kind {
					continue
				}
				if !started {
					fmt.Fprintf(&b, "\n### %s\n\n", kind.head)
					started = true
				}
				b.WriteString(lines[i])
			}
		}
		return b.String()
	}
	// An entry adds about its own tokens to the block (give or take the
	// few that merge across its edges): one that cannot fit in what is
	// left is not counted on the whole block.
	in := make([]bool, len(mems))
	shown, used := 0, 0
	for i := range mems {
		if tokens.Count(lines[i])-entrySlack > budget-used {
			continue
		}
		in[i] = true
		n := tokens.Count(renderBlock(sections(in)+leftOutNote(len(mems)-shown-1, budget, ns), format))
		if n > budget {
			in[i] = false
			continue
		}
		shown, used = shown+1, n
	}
	res.Shown, res.LeftOut = shown, len(mems)-shown
	switch {
	case len(mems) == 0 && res.Skipped > 0:
		return head + "\nThis file says every one of them already, outside this block.\n"
	case len(mems) == 0:
		return head + "\nNone yet: capture them with 'memmesh capture --kind convention' (or decision).\n"
	}
	return sections(in) + leftOutNote(res.LeftOut, budget, ns)
}

// leftOutNote says how many memories did not fit, and where they are.
func leftOutNote(n, budget int, ns string) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("\n%d more left out to stay within %d tokens: 'memmesh list --ns %s --tier human'.\n", n, budget, ns)
}

// kindHeads are the block's sections, in order: the kinds it holds.
var kindHeads = []struct{ kind, head string }{{"convention", "Conventions"}, {"decision", "Decisions"}}

// kindHead returns the heading of kind's section in the block.
func kindHead(kind string) string {
	for _, k := range kindHeads {
		if k.kind == kind {
			return k.head
		}
	}
	return ""
}

// entry renders a memory as a list item: its title when the content does
// not start with it and it is not the section's own heading, its content (inert, HTML escaped, continuation
// lines indented under the item) and its id.
func entry(m *api.Memory, section string) string {
	content := escapeHTML(inert.Text(m.Content))
	title := strings.TrimSuffix(m.Title, "…")
	lead := ""
	if title != "" && !strings.HasPrefix(normal(m.Content), normal(title)) && !strings.EqualFold(normal(title), section) {
		lead = "**" + escapeHTML(inert.Text(strings.ReplaceAll(m.Title, "\n", " "))) + ":** "
	}
	id := m.ID[:min(len(m.ID), idLen)]
	ls := strings.Split(content, "\n")
	var b strings.Builder
	if f := strings.TrimSpace(ls[0]); strings.HasPrefix(f, "```") || strings.HasPrefix(f, "~~~") {
		fmt.Fprintf(&b, "- %s(%s)\n", lead, id)
	} else {
		fmt.Fprintf(&b, "- %s%s (%s)\n", lead, ls[0], id)
		ls = ls[1:]
	}
	for _, l := range ls {
		if strings.TrimSpace(l) == "" {
			b.WriteString("\n")
		} else {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// escapeHTML returns Markdown s with every "<" that is not inside code
// escaped ("\<"), so that no memory's text is HTML in the file: a tag, a
// comment (a forged marker among them) or an autolink reads as text.
func escapeHTML(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	src := []byte(s)
	var code [][2]int
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.CodeSpan:
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				if t, ok := c.(*ast.Text); ok {
					code = append(code, [2]int{t.Segment.Start, t.Segment.Stop})
				}
			}
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				code = append(code, [2]int{seg.Start, seg.Stop})
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '<' && !slices.ContainsFunc(code, func(r [2]int) bool { return r[0] <= i && i < r[1] }) {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
