// Package agentfiles reads the instruction files that people write for
// coding agents (CLAUDE.md, AGENTS.md, .cursorrules and Cursor's .mdc
// rules, .github/copilot-instructions.md) into items, and keeps a block
// of such a file that memmesh writes (the managed block) apart from the
// rest, which it never changes.
//
// Parse turns a file into Items: its bullet points and paragraphs (a
// fenced example stays with the text that introduces it), each with the
// headings above it (its section), its kind and its lines. The file is
// read as CommonMark (goldmark), so plain text reads as paragraphs:
// lines that each end a sentence are items of their own, and a short
// line that introduces a list labels it as a heading would. A file is
// bounded (Limits) and must be UTF-8 text; its managed block, front
// matter and HTML comments are no items.
//
// Import and Export (sync.go, export.go) bring the items into a
// namespace as memories and write a namespace's conventions and
// decisions into a file's managed block, through the small Service
// they are given.
package agentfiles

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/extract"
)

// Format is a kind of agent instruction file.
type Format string

// The formats memmesh reads. They are all read the same way (Markdown, or
// plain text read as Markdown); the format names where the items came from.
const (
	ClaudeMD    Format = "claude-md"   // Claude Code's CLAUDE.md
	AgentsMD    Format = "agents-md"   // AGENTS.md (Codex, and the agents that follow agents.md)
	CursorRules Format = "cursorrules" // Cursor's .cursorrules, or a .cursor/rules/*.mdc rule
	Copilot     Format = "copilot"     // GitHub Copilot's .github/copilot-instructions.md
)

// Formats lists the formats, as --from names them.
var Formats = []Format{ClaudeMD, AgentsMD, CursorRules, Copilot}

// ParseFormat returns the format s names.
func ParseFormat(s string) (Format, error) {
	if f := Format(s); slices.Contains(Formats, f) {
		return f, nil
	}
	return "", fmt.Errorf("format %q: use claude-md, agents-md, cursorrules or copilot", s)
}

// Item is one unit of an instruction file: a bullet point (with what is
// nested under it) or a paragraph.
type Item struct {
	Section []string `json:"section,omitempty"` // the headings above it, outermost first
	Text    string   `json:"text"`              // its Markdown, without list marker and indentation
	Kind    string   `json:"kind"`              // convention unless the text or its section says otherwise
	Line    int      `json:"line"`              // its first line, from 1
	EndLine int      `json:"end_line"`          // its last line
}

// Title is the item's section path, "Testing › Go", cut to the memory
// title's 200 characters from the outermost end; "" outside any section.
func (it Item) Title() string {
	for i := range it.Section {
		t := strings.Join(it.Section[i:], " › ")
		if utf8.RuneCountInString(t) <= maxTitle {
			return t
		}
	}
	return ""
}

// Tags are the slugs of the item's headings ("Code style" gives
// code-style), at most three, outermost first.
func (it Item) Tags() []string {
	var tags []string
	for _, h := range it.Section {
		if s := slug(h); s != "" && !slices.Contains(tags, s) && len(tags) < maxHeadingTags {
			tags = append(tags, s)
		}
	}
	return tags
}

const (
	maxTitle       = 200 // runes of a memory's title
	maxHeadingTags = 3
	maxSlug        = 48
	// maxLabel is the longest line that labels the list under it.
	maxLabel = 80
)

// Limits bound what one file may hold.
type Limits struct {
	File  int // bytes of the file
	Items int // items in the file
	Item  int // bytes of one item's text
}

// DefaultLimits are the limits of an import: instruction files are a few
// KiB; an agent reads them whole at every session.
func DefaultLimits() Limits {
	return Limits{File: 1 << 20, Items: 1000, Item: 16 << 10}
}

// Errors of Parse, wrapped with where and how much.
var (
	ErrTooLarge     = errors.New("agentfiles: file too large")
	ErrNotText      = errors.New("agentfiles: not text")
	ErrTooManyItems = errors.New("agentfiles: too many items")
	ErrItemTooLong  = errors.New("agentfiles: item too long")
	ErrBlock        = errors.New("agentfiles: broken managed block")
)

// Parse reads an instruction file into its items, in file order. The
// managed block (see Block), YAML front matter, HTML comments and thematic
// breaks are left out.
func Parse(data []byte, lim Limits) ([]Item, error) {
	if err := checkText(data, lim.File); err != nil {
		return nil, err
	}
	src, description := withoutFrontMatter(data)
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	blk, err := findBlock(doc, src)
	if err != nil {
		return nil, err
	}
	p := parser{src: src, lines: lineStarts(src), lim: lim, soleTitle: soleTitle(doc)}
	if description != "" {
		p.headings = []heading{{level: 0, text: description}}
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if blk.found && n.Pos() >= blk.start && n.Pos() < blk.end {
			continue
		}
		if err := p.block(n); err != nil {
			return nil, err
		}
	}
	return p.items, nil
}

// soleTitle reports whether the file's first heading is its only one of
// level 1: the document's title ("# CLAUDE.md"), which would add nothing
// to the sections under it.
func soleTitle(doc ast.Node) bool {
	first, ones := 0, 0
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok {
			if first == 0 {
				first = h.Level
			}
			if h.Level == 1 {
				ones++
			}
		}
	}
	return first == 1 && ones == 1
}

// checkText refuses a file over max bytes, and one that is binary or not
// UTF-8 (api.CheckText), saying where.
func checkText(data []byte, max int) error {
	if len(data) > max {
		return fmt.Errorf("%w: %d bytes, more than the %d read from one file", ErrTooLarge, len(data), max)
	}
	if err := api.CheckText(string(data)); err != nil {
		return fmt.Errorf("%w: %v", ErrNotText, err)
	}
	return nil
}

// withoutFrontMatter returns data with its byte order mark and YAML front
// matter (a Cursor rule's description, globs, alwaysApply) blanked out,
// every offset and line kept, and the front matter's description.
func withoutFrontMatter(data []byte) ([]byte, string) {
	src := bytes.Clone(data)
	if bytes.HasPrefix(src, []byte("\ufeff")) {
		copy(src, "   ")
	}
	if !bytes.HasPrefix(src, []byte("---\n")) && !bytes.HasPrefix(src, []byte("---\r\n")) {
		return src, ""
	}
	end := -1
	description := ""
	for off := bytes.IndexByte(src, '\n') + 1; off < len(src); {
		line, next := lineAt(src, off)
		t := strings.TrimSpace(string(line))
		if t == "---" {
			end = next
			break
		}
		if v, ok := strings.CutPrefix(t, "description:"); ok {
			description = strings.Trim(strings.TrimSpace(v), `"'`)
		}
		off = next
	}
	if end < 0 {
		return src, "" // no closing line: no front matter
	}
	for i := range src[:end] {
		if src[i] != '\n' && src[i] != '\r' {
			src[i] = ' '
		}
	}
	return src, description
}

// lineAt returns the line starting at off, without its newline, and the
// offset of the next line.
func lineAt(src []byte, off int) ([]byte, int) {
	i := bytes.IndexByte(src[off:], '\n')
	if i < 0 {
		return src[off:], len(src)
	}
	return bytes.TrimSuffix(src[off:off+i], []byte("\r")), off + i + 1
}

// lineStarts returns the offset of every line's first byte.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, b := range src {
		if b == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

type heading struct {
	level int
	text  string
}

// parser walks the top-level blocks of a file.
type parser struct {
	src      []byte
	lines    []int
	lim      Limits
	headings []heading
	items    []Item
	// label is a short line that introduced the list that follows it.
	label string
	// last is the block the last item came from, so that a code block
	// right after it joins it.
	last ast.Node
	// soleTitle leaves the document's title out of the sections below it.
	soleTitle bool
}

// block reads one top-level block.
func (p *parser) block(n ast.Node) error {
	label := p.label
	p.label = ""
	switch n := n.(type) {
	case *ast.Heading:
		for len(p.headings) > 0 && p.headings[len(p.headings)-1].level >= n.Level {
			p.headings = p.headings[:len(p.headings)-1]
		}
		if t := headingText(n, p.src); t != "" {
			p.headings = append(p.headings, heading{level: n.Level, text: t})
		}
		p.last = nil
		return nil
	case *ast.List:
		for li := n.FirstChild(); li != nil; li = li.NextSibling() {
			end := p.end(li, n)
			if err := p.add(li.Pos(), end, label); err != nil {
				return err
			}
		}
	case *ast.Paragraph:
		start, end := n.Pos(), p.end(n, nil)
		if next, ok := n.NextSibling().(*ast.List); ok && next != nil {
			if l := p.labelOf(start, end); l != "" {
				p.label = l
				p.last = nil
				return nil
			}
		}
		if err := p.paragraph(start, end, label); err != nil {
			return err
		}
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		if p.last != nil && p.last.NextSibling() == n && len(p.items) > 0 {
			it := &p.items[len(p.items)-1]
			return p.extend(it, p.end(n, nil))
		}
		if err := p.add(n.Pos(), p.end(n, nil), label); err != nil {
			return err
		}
	case *ast.Blockquote:
		if err := p.add(n.Pos(), p.end(n, nil), label); err != nil {
			return err
		}
	case *ast.HTMLBlock:
		if n.HTMLBlockType == ast.HTMLBlockType2 { // a comment
			return nil
		}
		if err := p.add(n.Pos(), p.end(n, nil), label); err != nil {
			return err
		}
	default: // thematic breaks, and what else carries no statement
		p.last = nil
		return nil
	}
	p.last = n
	return nil
}

// end returns the offset where n ends: where its next sibling (or, for
// the last item of a list, the list's next sibling) starts, or the end
// of the file, less the blank lines before it.
func (p *parser) end(n, list ast.Node) int {
	end := len(p.src)
	if next := n.NextSibling(); next != nil {
		end = next.Pos()
	} else if list != nil && list.NextSibling() != nil {
		end = list.NextSibling().Pos()
	}
	for end > 0 && (p.src[end-1] == '\n' || p.src[end-1] == '\r' || p.src[end-1] == ' ' || p.src[end-1] == '\t') {
		end--
	}
	return end
}

// line returns the line (from 1) of offset off.
func (p *parser) line(off int) int {
	i, found := slices.BinarySearch(p.lines, off)
	if !found {
		i--
	}
	return i + 1
}

// span returns the text of the lines from start's line to end's, the
// first from start, the rest dedented by their common indentation.
func (p *parser) span(start, end int) string {
	if end <= start {
		return ""
	}
	lines := strings.Split(strings.ReplaceAll(string(p.src[start:end]), "\r\n", "\n"), "\n")
	indent := -1
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if w := len(l) - len(strings.TrimLeft(l, " \t")); indent < 0 || w < indent {
			indent = w
		}
	}
	for i := 1; i < len(lines); i++ {
		if len(lines[i]) >= indent && indent > 0 {
			lines[i] = lines[i][indent:]
		} else {
			lines[i] = strings.TrimLeft(lines[i], " \t")
		}
	}
	return strings.TrimRightFunc(strings.Join(lines, "\n"), unicode.IsSpace)
}

// listMarker matches a list item's marker and the space after it.
var listMarker = regexp.MustCompile(`^[ \t]*([-+*]|\d{1,9}[.)])([ \t]+|$)`)

// text returns the text of the item spanning start to end, without its
// list marker; an item over the limit is refused.
func (p *parser) text(start, end int) (string, error) {
	t := strings.TrimSpace(listMarker.ReplaceAllString(p.span(start, end), ""))
	if len(t) > p.lim.Item {
		return "", fmt.Errorf("%w: the item at line %d holds %d bytes, more than the %d of one item: split it", ErrItemTooLong, p.line(start), len(t), p.lim.Item)
	}
	return t, nil
}

// add adds the item spanning start to end.
func (p *parser) add(start, end int, label string) error {
	t, err := p.text(start, end)
	if err != nil || t == "" {
		return err
	}
	if len(p.items) == p.lim.Items {
		return fmt.Errorf("%w: more than %d items (line %d)", ErrTooManyItems, p.lim.Items, p.line(start))
	}
	hs := p.headings
	if p.soleTitle && len(hs) > 1 && hs[0].level == 1 {
		hs = hs[1:]
	}
	section := make([]string, 0, len(hs)+1)
	for _, h := range hs {
		section = append(section, h.text)
	}
	if label != "" {
		section = append(section, label)
	}
	p.items = append(p.items, Item{Section: section, Text: t, Kind: kindOf(t, section), Line: p.line(start), EndLine: p.line(max(start, end-1))})
	return nil
}

// extend makes the last item run to end (the code block that follows it).
func (p *parser) extend(it *Item, end int) error {
	start := p.lines[it.Line-1]
	t, err := p.text(start, end)
	if err != nil {
		return err
	}
	it.Text, it.EndLine = t, p.line(max(start, end-1))
	it.Kind = kindOf(t, it.Section)
	return nil
}

// paragraph adds a paragraph: one item, or one per line when each of its
// lines ends a sentence (plain text written a statement a line).
func (p *parser) paragraph(start, end int, label string) error {
	lines := strings.Split(string(p.src[start:end]), "\n")
	perLine := len(lines) > 1
	for _, l := range lines[:len(lines)-1] {
		if !endsSentence(l) {
			perLine = false
			break
		}
	}
	if !perLine {
		return p.add(start, end, label)
	}
	off := start
	for _, l := range lines {
		if err := p.add(off, off+len(strings.TrimRight(l, "\r")), label); err != nil {
			return err
		}
		off += len(l) + 1
	}
	return nil
}

// endsSentence reports whether a line ends with the end of a sentence.
func endsSentence(line string) bool {
	t := strings.TrimRight(line, " \t\r*_)\"'`")
	return strings.HasSuffix(t, ".") || strings.HasSuffix(t, "!") || strings.HasSuffix(t, "?")
}

// labelOf returns the paragraph from start to end when it is one short
// line that does not end a sentence: a label for the list under it.
func (p *parser) labelOf(start, end int) string {
	t := strings.TrimSpace(string(p.src[start:end]))
	if strings.ContainsAny(t, "\n") || utf8.RuneCountInString(t) > maxLabel || endsSentence(t) {
		return ""
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.Trim(t, "*_"), ":"))
}

// headingText returns a heading's text as written, without its marks.
func headingText(h *ast.Heading, src []byte) string {
	var b strings.Builder
	for i := 0; i < h.Lines().Len(); i++ {
		seg := h.Lines().At(i)
		b.Write(seg.Value(src))
		b.WriteByte(' ')
	}
	t := strings.TrimSpace(b.String())
	t = strings.TrimSpace(strings.TrimRight(t, "#"))
	return strings.Join(strings.Fields(t), " ")
}

// Section words that set the kind of what is under them, when the text
// itself says nothing more than a convention.
var (
	decisionSection = regexp.MustCompile(`(?i)\b(decisions?|adrs?|architecture decision)\b`)
	pitfallSection  = regexp.MustCompile(`(?i)\b(pitfalls?|gotchas?|caveats?|warnings?|traps?|footguns?)\b`)
	bugSection      = regexp.MustCompile(`(?i)\b(known (issues|bugs|problems)|bugs)\b`)
	taskSection     = regexp.MustCompile(`(?i)\b(todos?|to-dos?|tasks|backlog)\b`)
)

// kindOf returns an item's kind: what its text states (extract's rules),
// else what its innermost telling section says, else convention.
func kindOf(t string, section []string) string {
	kind, _ := extract.KindOfStatement(t)
	if kind != extract.KindConvention {
		return kind
	}
	for i := len(section) - 1; i >= 0; i-- {
		switch s := section[i]; {
		case decisionSection.MatchString(s):
			return extract.KindDecision
		case pitfallSection.MatchString(s):
			return extract.KindNote
		case bugSection.MatchString(s):
			return "bug"
		case taskSection.MatchString(s):
			return "task"
		}
	}
	return kind
}

// slug returns s as a tag: lower-case letters and digits joined by "-".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
		if b.Len() >= maxSlug {
			break
		}
	}
	return b.String()
}
