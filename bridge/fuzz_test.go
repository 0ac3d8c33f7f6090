package bridge

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: any text parses without a panic into entries within its
// lines, and any entry's text written into a managed part reads back as
// one entry with its id.
func FuzzParse(f *testing.F) {
	f.Add(fixture)
	f.Add(beginLine + "\n- a <!-- mm:m-abc -->\n" + endMark + "\n")
	f.Add("---\nname: x\n---\n# h\npara\n- item\n  more\n")
	f.Add("```\nunclosed fence\n- not an item")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		file := parse(text)
		for _, e := range file.entries {
			if e.start < 0 || e.end > len(file.lines) || e.start >= e.end {
				t.Fatalf("entry %+v outside the %d lines", e, len(file.lines))
			}
			lines := renderEntry("- ", e.Text, "m-abc", nil)
			back := parse(beginLine + "\n" + strings.Join(lines, "\n") + "\n" + endMark + "\n")
			if len(back.entries) != 1 || back.entries[0].ID != "m-abc" {
				t.Fatalf("entry %q written as %q reads back as %+v", e.Text, lines, back.entries)
			}
		}
	})
}
