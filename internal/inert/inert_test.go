package inert

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"plain", "Use pgx, not lib/pq.\n\tIndented line", "Use pgx, not lib/pq.\n\tIndented line"},
		{"unicode", "Schlüssel für Grafana — 注意 👩‍💻 ✓", "Schlüssel für Grafana — 注意 👩‍💻 ✓"},
		{"right-to-left text", "שלום עולם and مرحبا", "שלום עולם and مرحبا"},
		{"clear screen", "a\x1b[2Jb", "a␛[2Jb"},
		{"osc title", "\x1b]0;pwned\x07", "␛]0;pwned␇"},
		{"osc hyperlink", "\x1b]8;;https://evil\x1b\\click\x1b]8;;\x1b\\", "␛]8;;https://evil␛\\click␛]8;;␛\\"},
		{"nul", "a\x00b", "a␀b"},
		{"carriage return overwrite", "safe\rrm -rf /", "safe␍rm -rf /"},
		{"windows line breaks", "one\r\ntwo\r\n", "one\ntwo\n"},
		{"backspace", "ok\b\bno", "ok␈␈no"},
		{"del", "a\x7fb", "a␡b"},
		{"8-bit csi", "\u009b2J", `\u009b2J`},
		{"8-bit osc", "\u009d0;x\u009c", `\u009d0;x\u009c`},
		{"right-to-left override", "txt.\u202egpj.exe", `txt.\u202egpj.exe`},
		{"isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`},
		{"embeddings and pop", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"invalid utf-8", "a\xffb\x9b2J", "a\ufffdb\ufffd2J"},
		{"truncated rune", "caf\xc3", "caf\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Text(tt.in)
			if got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if msg := active(got); msg != "" {
				t.Errorf("Text(%q) = %q: %s", tt.in, got, msg)
			}
		})
	}
}

func TestTextKeepsCleanTextAsItIs(t *testing.T) {
	s := strings.Repeat("plain text, ünïcode and tabs\t\n", 100)
	if allocs := testing.AllocsPerRun(100, func() { Text(s) }); allocs != 0 {
		t.Errorf("Text of clean text allocates %v times", allocs)
	}
}

// hostile is a value holding every kind of active character.
type hostile struct {
	Title   string            `json:"title"`
	Content string            `json:"content"`
	Tags    []string          `json:"tags"`
	Notes   map[string]string `json:"notes"`
}

var hostileValue = hostile{
	Title:   "\x1b]0;pwned\x07 title \u202eevil",
	Content: "\x1b[2J\x00\r\x7f\u009b2J\u2066x\u2069 and café",
	Tags:    []string{"\u009dtag", "ok"},
	Notes:   map[string]string{"\u202akey": "\x1b[31mred\x1b[0m"},
}

func TestJSON(t *testing.T) {
	data, err := json.MarshalIndent(hostileValue, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out := JSON(data)
	if !json.Valid(out) {
		t.Fatalf("not valid JSON: %s", out)
	}
	var back hostile
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, hostileValue) {
		t.Fatalf("the value changed:\n got %+q\nwant %+q", back, hostileValue)
	}
	if msg := active(string(out)); msg != "" {
		t.Fatalf("%s in %s", msg, out)
	}
	clean := []byte(`{"a": "plain ünïcode"}`)
	if got := JSON(clean); &got[0] != &clean[0] {
		t.Error("JSON copied clean text")
	}
}

// active describes the first character of s that could act on a terminal
// or reorder text, or returns "". It checks Text's output, and Index with it.
func active(s string) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	for i, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || isC1(r) || isBidi(r) {
			if Index(s) != i {
				return fmt.Sprintf("Index = %d, but %U is at byte %d", Index(s), r, i)
			}
			return fmt.Sprintf("active character %U at byte %d", r, i)
		}
	}
	if Index(s) >= 0 {
		return fmt.Sprintf("Index = %d in inert text", Index(s))
	}
	return ""
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "\r\n\r", "\u009b\u202e\xff", "a\x00\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if msg := active(got); msg != "" {
			t.Fatalf("Text(%q) = %q: %s", s, got, msg)
		}
		if Index(s) < 0 && got != s {
			t.Fatalf("Text(%q) changed clean text to %q", s, got)
		}
		data, _ := json.Marshal(s)
		out := JSON(data)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("JSON(%s) = %s: %v", data, out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("JSON(%s) = %s decodes to %q, not %q", data, out, back, s)
		}
		if msg := active(string(out)); msg != "" {
			t.Fatalf("JSON(%s) = %s: %s", data, out, msg)
		}
	})
}
