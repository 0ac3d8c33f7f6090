package bridge

import (
	"regexp"
	"slices"
	"strings"
)

// The managed part of a file: what the bridge writes from the namespace,
// between two marker lines. An entry in it ends its first line with its
// memory's id marker; an index line (a link to a topic file) with
// indexMark.
const (
	beginMark = "<!-- memmesh:begin"
	endMark   = "<!-- memmesh:end -->"
	beginLine = beginMark + ": this project's memories from its other machines, kept in sync by memmesh; edit or delete entries as your own -->"
	indexMark = "<!-- mm:index -->"
	// conflictMark starts a line that shows another version of an entry
	// edited on two machines at once. Such lines are no part of the
	// entry's text: editing the entry resolves the conflict.
	conflictMark = "⟂ "
)

// idMark finds an entry's memory id marker.
var idMark = regexp.MustCompile(`\s*<!-- mm:(m-[a-z0-9]{1,40}) -->`)

// bulletRe finds a list item's marker: "- ", "* ", "+ ", "1. ", "1) ".
var bulletRe = regexp.MustCompile(`^( {0,1})([-*+]|[0-9]{1,9}[.)])( +|$)`)

// entry is one unit of a memory file that becomes one memory: a list item
// with its continuation lines (nested items included) or a paragraph.
type entry struct {
	Text    string // the entry's text, its list marker and indentation taken off
	Section string // the heading it is under
	ID      string // its memory's id marker, in the managed part
	Managed bool   // in the managed part
	start   int    // its first line
	end     int    // one past its last line
	prefix  string // its list marker with the space after, "" for a paragraph
}

// mdFile is a memory file split into lines and entries.
type mdFile struct {
	lines   []string
	entries []entry // in file order, user's first, then the managed part's
	// begin and end are the managed part's marker lines, -1 without one.
	begin, end int
}

// parse splits text into entries. Headings start sections and are no
// entries; a leading front matter (--- ... ---) and fenced code are kept
// within the entry they are in, or as an entry of their own.
func parse(text string) *mdFile {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	f := &mdFile{lines: strings.Split(strings.TrimSuffix(text, "\n"), "\n"), begin: -1, end: -1}
	if text == "" {
		f.lines = nil
	}
	section := ""
	cur := -1 // index in f.entries of the open entry
	inManaged, fence := false, ""
	start := 0
	if len(f.lines) > 0 && f.lines[0] == "---" { // front matter
		for i := 1; i < len(f.lines); i++ {
			if f.lines[i] == "---" {
				start = i + 1
				break
			}
		}
	}
	closeEntry := func(i int) {
		if cur >= 0 {
			f.entries[cur].end = i
			cur = -1
		}
	}
	for i := start; i < len(f.lines); i++ {
		line := f.lines[i]
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, beginMark) && !inManaged && f.begin < 0:
			closeEntry(i)
			inManaged, f.begin = true, i
			continue
		case trimmed == endMark && inManaged:
			closeEntry(i)
			inManaged, f.end = false, i
			continue
		case trimmed == "":
			closeEntry(i)
			continue
		case strings.HasPrefix(line, "#"):
			closeEntry(i)
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		case inManaged && strings.HasSuffix(trimmed, indexMark):
			closeEntry(i)
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
		}
		if m := bulletRe.FindStringSubmatch(line); m != nil {
			closeEntry(i)
			f.entries = append(f.entries, entry{Section: section, Managed: inManaged, start: i, prefix: m[0]})
			cur = len(f.entries) - 1
			continue
		}
		if cur < 0 {
			f.entries = append(f.entries, entry{Section: section, Managed: inManaged, start: i})
			cur = len(f.entries) - 1
		}
	}
	closeEntry(len(f.lines))
	if inManaged { // a begin marker without its end: the managed part runs to the end
		f.end = len(f.lines)
	}
	for i := range f.entries {
		f.entries[i].Text, f.entries[i].ID = f.entryText(&f.entries[i])
	}
	return f
}

// entryText is the text of e with its marker, indentation, id marker and
// conflict lines taken off, and its id.
func (f *mdFile) entryText(e *entry) (string, string) {
	var out []string
	id := ""
	indent := len(e.prefix)
	for i := e.start; i < e.end; i++ {
		line := f.lines[i]
		if i == e.start {
			line = line[len(e.prefix):]
		} else {
			n := len(line) - len(strings.TrimLeft(line, " "))
			line = line[min(n, indent):]
		}
		if m := idMark.FindStringSubmatch(line); m != nil {
			id = m[1]
			line = idMark.ReplaceAllString(line, "")
		}
		if strings.HasPrefix(strings.TrimSpace(line), strings.TrimSpace(conflictMark)) {
			continue
		}
		out = append(out, strings.TrimRight(line, " \t"))
	}
	return strings.TrimSpace(strings.Join(out, "\n")), id
}

// renderEntry writes text as an entry with prefix (a list marker, or ""
// for a paragraph), the id marker when id is set, and a line for each
// other version of a conflict.
func renderEntry(prefix, text, id string, others []string) []string {
	text = safeText(text)
	lines := strings.Split(text, "\n")
	pad := strings.Repeat(" ", len(prefix))
	if prefix == "" && len(lines) > 0 {
		pad = ""
	}
	out := make([]string, 0, len(lines)+len(others))
	for i, l := range lines {
		if prefix == "" && (bulletRe.MatchString(l) || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "---")) {
			l = "\\" + l // a paragraph's line that would start a list or a heading
		}
		if i == 0 {
			l = prefix + l
			if id != "" {
				l += " <!-- mm:" + id + " -->"
			}
		} else if l != "" {
			l = pad + l
		}
		out = append(out, l)
	}
	if prefix == "" {
		pad = "  "
	}
	for _, o := range others {
		out = append(out, pad+conflictMark+"other version (edited on another machine at the same time): "+strings.Join(strings.Fields(safeText(o)), " "))
	}
	return out
}

// safeText keeps text from changing the shape of the file it is written
// into: no blank lines (they would end the entry), no markers of ours, no
// line that reads as a heading or a list item of its own.
func safeText(text string) string {
	text = strings.ReplaceAll(text, "<!--", "<!\u2010\u2010")
	var out []string
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			continue
		}
		if i > 0 && (strings.HasPrefix(l, "#") || strings.HasPrefix(l, "---")) {
			l = "\\" + l
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// userLines are the lines of the file outside its managed part.
func (f *mdFile) userLines() []string {
	if f.begin < 0 {
		return f.lines
	}
	return append(slices.Clone(f.lines[:f.begin]), f.lines[min(f.end+1, len(f.lines)):]...)
}
