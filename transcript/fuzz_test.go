package transcript

import (
	"bytes"
	"os"
	"testing"

	"github.com/memmesh/memmesh/internal/mutate"
)

// fixtureLines returns the lines of a fixture, as seeds.
func fixtureLines(f *testing.F, path string) [][]byte {
	f.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return bytes.SplitAfter(data, []byte("\n"))
}

// checkRead holds what every read must give, whatever it read: turns of a
// known role with text within the limit, warnings that name the file.
func checkRead(t *testing.T, r *reading) {
	t.Helper()
	b := r.finish()
	for _, turn := range b.Session.Turns {
		switch turn.Role {
		case RoleUser, RoleAssistant, RoleTool:
		default:
			t.Errorf("turn of role %q", turn.Role)
		}
		if len(turn.Text) > r.lim.TurnText || len(turn.Command) > r.lim.TurnText {
			t.Errorf("turn of %d bytes", len(turn.Text))
		}
	}
	for _, w := range b.Warnings {
		if w.Path != r.path || w.Reason == "" {
			t.Errorf("warning %+v", w)
		}
	}
}

func fuzzLines(f *testing.F, seeds [][]byte, parse lineParser) {
	for _, s := range seeds {
		f.Add(s)
	}
	mutate.Seeds(f, 300, seeds...)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newReading("fuzz", "f.jsonl", Cursor{}, Limits{TurnText: 256})
		for n, line := range bytes.Split(data, []byte("\n")) {
			r.line = n + 1
			parse(r, line)
		}
		r.flush()
		checkRead(t, r)
	})
}

func FuzzClaudeCodeLine(f *testing.F) {
	fuzzLines(f, fixtureLines(f, claudeFixture), claudeLine)
}

func FuzzCodexLine(f *testing.F) {
	fuzzLines(f, fixtureLines(f, codexFixture), codexLine)
}

func FuzzAiderLines(f *testing.F) {
	data, err := os.ReadFile(aiderFixture)
	if err != nil {
		f.Fatal(err)
	}
	fuzzLines(f, [][]byte{data}, aiderLine)
}

func FuzzDocuments(f *testing.F) {
	var seeds [][]byte
	for _, p := range []string{geminiFixture, clineFixture, continueFixture} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	mutate.Seeds(f, 300, seeds...)
	parsers := []docParser{Gemini{}.parse, continueParse, func(r *reading, data []byte) (document, bool) {
		return clineParse(r, "task", data)
	}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range parsers {
			r := newReading("fuzz", "f.json", Cursor{}, Limits{TurnText: 256, Turns: 5})
			if doc, ok := parse(r, data); ok {
				r.records(doc)
			}
			checkRead(t, r)
		}
	})
}
