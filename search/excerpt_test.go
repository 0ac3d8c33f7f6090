package search

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memmesh/memmesh/internal/mutate"
)

func TestExcerpt(t *testing.T) {
	t.Parallel()
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 200) // 5400 bytes
	tests := []struct {
		name    string
		text    string
		needles []string
		want    string // part of the excerpt
		cut     bool
	}{
		{"short text whole", "a short note", []string{"note"}, "a short note", false},
		{"match in the middle", filler + "the POSTGRES driver is pgx " + filler, []string{"postgres"}, "the POSTGRES driver is pgx", true},
		{"identifier part", filler + "call parseConfig first " + filler, []string{"config"}, "parseConfig", true},
		{"stem", filler + "connections are pooled " + filler, []string{"connect"}, "connections are pooled", true},
		{"match at the end", filler + "final word: zebra", []string{"zebra"}, "final word: zebra", true},
		{"no match: the start", "first words here " + filler, []string{"absent"}, "first words here", true},
		{"non-ASCII", filler + "un café à Paris " + filler, []string{"café"}, "un café à Paris", true},
		{"upper case", filler + "Use PGX v5 " + filler, []string{"pgx"}, "Use PGX v5", true},
		{"first of several", filler + "beta then alpha " + filler + "alpha", []string{"alpha", "beta"}, "beta then alpha", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Excerpt(tt.text, tt.needles, 300)
			if cut != tt.cut || !strings.Contains(got, tt.want) {
				t.Fatalf("Excerpt = %q, %v; want it to hold %q, cut %v", got, cut, tt.want, tt.cut)
			}
			if cut && len(got) > 300+2*len("…") {
				t.Errorf("excerpt of %d bytes, want at most 300 and the marks", len(got))
			}
		})
	}
	got, _ := Excerpt(filler+"the POSTGRES driver "+filler, []string{"postgres"}, 300)
	if !strings.HasPrefix(got, "…lorem") && !strings.HasPrefix(got, "…ipsum") && !strings.HasPrefix(got, "…dolor") &&
		!strings.HasPrefix(got, "…sit") && !strings.HasPrefix(got, "…amet") {
		t.Errorf("a cut excerpt starts on a word with a mark: %q", got)
	}
	if !strings.HasSuffix(got, "…") {
		t.Errorf("a cut excerpt ends with a mark: %q", got)
	}
}

func TestNeedles(t *testing.T) {
	t.Parallel()
	ix := openTest(t)
	got := ix.Needles(`Running "connection pools" of parseConfig a`)
	for _, want := range []string{"run", "running", "connect", "connection", "pool", "parseconfig", "config", "pars", "parse"} {
		if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+want+" ") {
			t.Errorf("Needles = %v, lacks %q", got, want)
		}
	}
}

// FuzzExcerpt: for any text and needle (the input's first line), the
// excerpt is valid UTF-8 when the text is, of a bounded size, the whole
// text when that is short, and holds the needle (in one of the case forms
// looked for) when the text does.
func FuzzExcerpt(f *testing.F) {
	seeds := [][]byte{
		[]byte("needle\n" + strings.Repeat("word ", 100) + "needle " + strings.Repeat("x", 200)),
		[]byte("needle\nshort needle"),
		[]byte("needle\n" + strings.Repeat("é日本", 100) + "NEEDLE"),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	mutate.Seeds(f, 100, seeds...)
	f.Fuzz(func(t *testing.T, data []byte) {
		needle, text, _ := strings.Cut(string(data), "\n")
		got, cut := Excerpt(text, []string{needle}, 64)
		if !cut {
			if got != text || len(text) > 64 {
				t.Fatalf("uncut excerpt %q of %q", got, text)
			}
			return
		}
		if len(got) > 64+2*len("…") {
			t.Fatalf("excerpt of %d bytes", len(got))
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("excerpt %q of valid text is not UTF-8", got)
		}
		// The needle in one of the forms that are looked for is found.
		forms := caseForms(needle)
		holds := func(s string) bool {
			return slices.ContainsFunc(forms, func(f string) bool { return strings.Contains(s, f) })
		}
		if len(needle) <= 16 && strings.TrimSpace(needle) == needle && holds(text) && !holds(got) {
			t.Fatalf("excerpt %q of %q misses %q", got, text, needle)
		}
	})
}
