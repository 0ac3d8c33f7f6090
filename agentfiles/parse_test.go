package agentfiles

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := readFixtureFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readFixtureFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", name))
}

func parse(t *testing.T, data string) []Item {
	t.Helper()
	items, err := Parse([]byte(data), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// TestParseFixtures reads a hand-written file of each format: every
// bullet point and paragraph is an item, under its headings, with its
// lines and kind.
func TestParseFixtures(t *testing.T) {
	type want struct {
		line, end int
		title     string
		kind      string
		text      string
	}
	for _, tc := range []struct {
		file  string
		items int
		some  []want
	}{
		{"CLAUDE.md", 16, []want{
			{3, 3, "CLAUDE.md", "convention", "This file gives Claude Code guidance for working in this repository."},
			{8, 8, "Commands", "convention", "Build: `make build` (needs Go 1.22 and a C compiler)."},
			// A fenced example stays with the paragraph that introduces it.
			{12, 17, "Commands", "convention", "Run the integration tests against a local database:\n\n```sh\ndocker compose up -d postgres\ngo test -tags integration ./...\n```"},
			// A bullet's continuation lines are the bullet's, dedented.
			{23, 24, "Code style", "convention", "Never use `panic` in library code.\nReturn an error instead, even for \"impossible\" states."},
			{30, 30, "Code style › Naming", "convention", "Interfaces are defined where they are consumed, not where they are implemented."},
			{34, 34, "Architecture decisions", "decision", "Postgres access goes through pgx v5, not database/sql."},
			{39, 39, "Gotchas", "note", "The `internal/legacy` importer doesn't work because it assumes UTF-16 input."},
		}},
		{"AGENTS.md", 12, []want{
			{5, 5, "Setup commands", "convention", "Install deps: `pnpm install`"},
			{24, 24, "PR instructions", "convention", "Title format: [<project_name>] <Title>"},
		}},
		{".cursorrules", 10, []want{
			{1, 1, "", "convention", "You are an expert in TypeScript, Node.js, Next.js App Router, React, Shadcn UI and Tailwind."},
			// A short line over a list labels it.
			{4, 4, "Code Style and Structure", "convention", "Write concise, technical TypeScript code with accurate examples."},
			{11, 11, "Naming Conventions", "convention", "Favor named exports for components."},
			// Lines that each end a sentence are statements of their own.
			{14, 14, "", "convention", "Avoid unnecessary curly braces in conditionals."},
		}},
		{".github/copilot-instructions.md", 8, []want{
			{3, 3, "Copilot instructions", "convention", "This is a Python 3.12 service built with FastAPI and SQLAlchemy 2."},
			{14, 14, "Testing", "convention", "Do not mock the database: use the `db_session` fixture, which rolls back after each test."},
		}},
		{"react.mdc", 3, []want{
			// The front matter's description is the section of what has no heading.
			{7, 7, "React component conventions", "convention", "Components are function components with props typed by an interface named after the component."},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			items, err := Parse(readFixture(t, tc.file), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != tc.items {
				for _, it := range items {
					t.Logf("%d-%d %q %q", it.Line, it.EndLine, it.Title(), it.Text)
				}
				t.Fatalf("%d items, want %d", len(items), tc.items)
			}
			for _, w := range tc.some {
				i := slices.IndexFunc(items, func(it Item) bool { return it.Line == w.line })
				if i < 0 {
					t.Errorf("no item at line %d", w.line)
					continue
				}
				got := items[i]
				if got.EndLine != w.end || got.Title() != w.title || got.Kind != w.kind || got.Text != w.text {
					t.Errorf("line %d: got %d-%d %q %s %q\nwant %d-%d %q %s %q", w.line, got.Line, got.EndLine, got.Title(), got.Kind, got.Text, w.line, w.end, w.title, w.kind, w.text)
				}
			}
		})
	}
}

// TestParseLayout: wrapped prose is one item; comments, thematic breaks,
// front matter and the managed block are none; headings give tags; CRLF
// and a byte order mark read as plain lines.
func TestParseLayout(t *testing.T) {
	t.Run("wrapped prose", func(t *testing.T) {
		items := parse(t, "The service talks to Postgres through a pool that is sized\nfrom the number of cores, and the pool is shared by every\nhandler.\n")
		if len(items) != 1 || items[0].Line != 1 || items[0].EndLine != 3 {
			t.Fatalf("items %+v: want one of lines 1-3", items)
		}
	})
	t.Run("left out", func(t *testing.T) {
		items := parse(t, "<!-- a note to myself -->\n\n---\n\n- Keep it\n\n"+
			"<!-- memmesh:begin sha256=0123456789abcdef -->\n## From memmesh\n\n- Not mine\n<!-- memmesh:end -->\n\n- Mine too\n")
		var texts []string
		for _, it := range items {
			texts = append(texts, it.Text)
		}
		if !slices.Equal(texts, []string{"Keep it", "Mine too"}) || items[1].Title() != "" {
			t.Fatalf("items %q (%+v): want the two outside the block, with no section", texts, items)
		}
	})
	t.Run("tags", func(t *testing.T) {
		items := parse(t, "## Code Style & Naming!\n\n### Go\n\n#### Errors\n\n##### Wrapping\n\n- Wrap with %w\n")
		if got := items[0].Tags(); !slices.Equal(got, []string{"code-style-naming", "go", "errors"}) {
			t.Fatalf("tags %q", got)
		}
		if got := items[0].Title(); got != "Code Style & Naming! › Go › Errors › Wrapping" {
			t.Fatalf("title %q", got)
		}
	})
	t.Run("crlf and bom", func(t *testing.T) {
		items := parse(t, "\ufeff# Rules\r\n\r\n## Style\r\n\r\n- One\r\n- Two\r\n  continued\r\n")
		if len(items) != 2 || items[1].Text != "Two\ncontinued" || items[1].Line != 6 || items[1].EndLine != 7 || items[0].Title() != "Style" {
			t.Fatalf("items %+v", items)
		}
	})
	t.Run("long section path", func(t *testing.T) {
		long := strings.Repeat("word ", 30)
		items := parse(t, "# "+long+"\n\n## "+long+"\n\n### Short\n\n- x\n")
		if got := items[0].Title(); got != "Short" && !strings.HasSuffix(got, "Short") {
			t.Fatalf("title %q", got)
		}
		if len([]rune(items[0].Title())) > 200 {
			t.Fatalf("title of %d runes", len([]rune(items[0].Title())))
		}
	})
}

// TestParseRefuses: a file too large, binary, not UTF-8, with too many or
// too long items, or a broken managed block, is refused with an error
// that says where.
func TestParseRefuses(t *testing.T) {
	lim := Limits{File: 1000, Items: 3, Item: 100}
	for _, tc := range []struct {
		name, data string
		want       error
		says       string
	}{
		{"too large", strings.Repeat("x", 1001), ErrTooLarge, "1001 bytes"},
		{"binary", "- ok\n- \x00\x01\x02", ErrNotText, "binary, not text: a NUL byte at offset 7 (line 2)"},
		{"latin-1", "# Caf\xe9\n\n- ok\n", ErrNotText, "not UTF-8 text: invalid byte 0xe9 at offset 5 (line 1)"},
		{"too many items", "- a\n- b\n- c\n- d\n", ErrTooManyItems, "line 4"},
		{"item too long", "- a\n\n" + strings.Repeat("y", 101) + "\n", ErrItemTooLong, "line 3"},
		{"unterminated block", "- a\n\n<!-- memmesh:begin sha256=0123456789abcdef -->\n- b\n", ErrBlock, "line 3"},
		{"stray end", "- a\n<!-- memmesh:end -->\n", ErrBlock, "line 2"},
		{"two blocks", "<!-- memmesh:begin -->\n<!-- memmesh:end -->\n\n<!-- memmesh:begin -->\n<!-- memmesh:end -->\n", ErrBlock, "line 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data), lim)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v: want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
	// A marker quoted in a code block is no marker.
	items := parse(t, "- Our block starts with:\n\n```\n<!-- memmesh:begin -->\n```\n")
	if len(items) != 1 {
		t.Fatalf("items %+v", items)
	}
}
