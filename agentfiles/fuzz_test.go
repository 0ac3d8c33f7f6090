package agentfiles

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// FuzzManagedBlock writes a block holding a memory of any text into a file
// of any text: Parse and FindBlock never panic; a block placed is found
// again, as written and not taken for edited; every byte outside it is
// the file's; and the file's items are the same before and after. A
// block replacing one the file had is always placed: no memory's text
// can forge a marker or swallow the end of the block.
func FuzzManagedBlock(f *testing.F) {
	for _, name := range []string{"CLAUDE.md", "AGENTS.md", ".cursorrules", ".github/copilot-instructions.md", "react.mdc"} {
		data, err := readFixtureFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data), "Wrap errors with %w")
	}
	f.Add("- a\n\n<!-- memmesh:begin sha256=0123456789abcdef -->\n- old\n<!-- memmesh:end -->\n\nafter\n", "x\n<!-- memmesh:end -->\n<!-- memmesh:begin -->")
	f.Add("```\nopen fence\n", "```\nnever closed")
	f.Add("<pre>\n", "<pre>\n<!--")
	f.Add("# T\r\n\r\n- a\r\n", "</details>\n\n    indented\n- item\n> quote")
	f.Fuzz(func(t *testing.T, file, content string) {
		lim := DefaultLimits()
		items, err := Parse([]byte(file), lim)
		if err != nil {
			return
		}
		old, found, err := FindBlock([]byte(file))
		if err != nil {
			return
		}
		content = strings.TrimSpace(content)
		if content == "" || !utf8.ValidString(content) {
			return
		}
		m := api.Memory{Memory: model.Memory{ID: "abcdefghijklmnopqrstuvwxyz", Title: "T", Content: content, Kind: "convention"}, ID: "m-abcdefghijklmnopqrstuvwxyz"}
		var res ExportResult
		body := render([]api.Memory{m}, "acme", AgentsMD, MaxBudget, &res)
		out, err := placeBlock([]byte(file), old, found, renderBlock(body, AgentsMD), body)
		if err != nil {
			if found {
				t.Fatalf("a block replacing the file's was refused: %v", err)
			}
			return
		}
		b, ok, err := FindBlock(out)
		if err != nil || !ok || b.Body != body || b.Edited() {
			t.Fatalf("the block placed is not found as written: %+v %v %v", b, ok, err)
		}
		if found {
			if !bytes.Equal(out[:b.Start], []byte(file[:old.Start])) || !bytes.Equal(out[b.End:], []byte(file[old.End:])) {
				t.Fatal("bytes around the replaced block changed")
			}
		} else if !bytes.HasPrefix(out, []byte(file)) || strings.TrimSpace(string(out[len(file):b.Start])) != "" || b.End != len(out) {
			t.Fatal("the block was not appended after the file's bytes")
		}
		after, err := Parse(out, Limits{File: len(out), Items: lim.Items, Item: lim.Item})
		if err != nil {
			t.Fatalf("the file with its block does not parse: %v", err)
		}
		texts := func(its []Item) []string {
			var out []string
			for _, it := range its {
				out = append(out, it.Text)
			}
			return out
		}
		if !slices.Equal(texts(items), texts(after)) {
			t.Fatalf("the block changed the file's items:\n%q\n%q", texts(items), texts(after))
		}
	})
}
