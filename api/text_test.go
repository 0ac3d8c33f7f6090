package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	elf := "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00>\x00"
	tests := []struct {
		name string
		in   string
		want string // "" for text
	}{
		{"empty", "", ""},
		{"ascii", "Use pgx, not lib/pq.\n", ""},
		{"unicode and controls", "Schlüssel — 注意 ✓\t\r\n\x1b[1mbold\x1b[0m", ""},
		{"elf executable", elf, "binary, not text (an ELF executable): a NUL byte at offset 7 (line 1)"},
		{"nul in text", "line one\nline two\x00", "binary, not text: a NUL byte at offset 17 (line 2)"},
		{"latin-1", "# Caf\xe9\n", "not UTF-8 text: invalid byte 0xe9 at offset 5 (line 1)"},
		{"invalid after valid runes", "ok ✓\n\nthen \xff", "not UTF-8 text: invalid byte 0xff at offset 13 (line 3)"},
		{"truncated rune at end", "abc\xe2\x9c", "not UTF-8 text: invalid byte 0xe2 at offset 3 (line 1)"},
		{"png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text (a PNG image): invalid byte 0x89 at offset 0 (line 1)"},
		{"utf-16", "\xff\xfeh\x00i\x00", "not UTF-8 text (UTF-16 text: save it as UTF-8): invalid byte 0xff at offset 0 (line 1)"},
		{"first problem wins", "a\x00b\xff", "binary, not text: a NUL byte at offset 1 (line 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckText(tt.in)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckText(%q) = %v, want nil", tt.in, err)
				}
				return
			}
			var nt *NotTextError
			if !errors.As(err, &nt) || err.Error() != tt.want {
				t.Fatalf("CheckText(%q) = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestCheckJSONText(t *testing.T) {
	tests := []struct {
		name, in, want string // want: part of the error, "" for none
	}{
		{"plain", `{"content":"Use pgx"}`, ""},
		{"escaped pair", `{"content":"\ud83d\ude00 and \u00e9"}`, ""},
		{"raw unicode", `{"content":"😀 é"}`, ""},
		{"escaped backslash before u", `{"content":"C:\\ud800 is a path"}`, ""},
		{"raw invalid byte", "{\"content\":\"caf\xe9\"}", "invalid byte 0xe9 at offset 15"},
		{"lone high surrogate", `{"content":"x\ud800y"}`, `the escape \ud800 at offset 13`},
		{"lone low surrogate", `{"content":"\udc00"}`, `the escape \udc00 at offset 12`},
		{"high at the end", `{"content":"\ud83d"}`, `the escape \ud83d`},
		{"two highs", `{"content":"\ud83d\ud83d\ude00"}`, `the escape \ud83d at offset 12`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckJSONText([]byte(tt.in))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckJSONText(%s) = %v", tt.in, err)
				}
				var v map[string]string
				if err := json.Unmarshal([]byte(tt.in), &v); err != nil || strings.ContainsRune(v["content"], '\uFFFD') {
					t.Fatalf("accepted JSON decodes to %q, %v", v, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckJSONText(%s) = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}
