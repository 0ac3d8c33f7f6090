package api

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// NotTextError reports content that is not text, where it shows first.
// Text, as memmesh stores it, is UTF-8 without a NUL byte: a NUL byte
// never occurs in text files and is in nearly every binary one (the rule
// git and grep use), and bytes that are not UTF-8 would be stored as
// U+FFFD, losing what they were. Such content is refused, never repaired.
type NotTextError struct {
	Offset int    // of the first byte that breaks the rule
	Line   int    // of that byte, from 1; 0 in a JSON message, which is one line
	Byte   byte   // that byte
	Format string // what the content's first bytes say it is ("an ELF executable"), if known
}

func (e *NotTextError) Error() string {
	what, found := "not UTF-8 text", fmt.Sprintf("invalid byte 0x%02x", e.Byte)
	if e.Byte == 0 {
		what, found = "binary, not text", "a NUL byte"
	}
	if e.Format != "" {
		what = fmt.Sprintf("%s (%s)", what, e.Format)
	}
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s at offset %d", what, found, e.Offset)
	}
	return fmt.Sprintf("%s: %s at offset %d (line %d)", what, found, e.Offset, e.Line)
}

// CheckText returns a *NotTextError when s is not text (see NotTextError),
// else nil.
func CheckText(s string) error {
	at := strings.IndexByte(s, 0)
	if at < 0 && utf8.ValidString(s) {
		return nil
	}
	for i := 0; i < len(s) && i != at; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			at = i
			break
		}
		i += size
	}
	return &NotTextError{
		Offset: at,
		Line:   strings.Count(s[:at], "\n") + 1,
		Byte:   s[at],
		Format: binaryFormat(s),
	}
}

// fileMagics name the binary formats most often given as a file by
// mistake, by their first bytes.
var fileMagics = []struct {
	magic, name string
}{
	{"\x7fELF", "an ELF executable"},
	{"\xcf\xfa\xed\xfe", "a Mach-O executable"},
	{"\xce\xfa\xed\xfe", "a Mach-O executable"},
	{"\xca\xfe\xba\xbe", "a Mach-O or Java class file"},
	{"MZ", "a Windows executable"},
	{"\x00asm", "a WebAssembly module"},
	{"%PDF-", "a PDF document"},
	{"PK\x03\x04", "a ZIP archive (or an Office document, a jar)"},
	{"\x1f\x8b", "a gzip file"},
	{"\x28\xb5\x2f\xfd", "a zstd file"},
	{"\xfd7zXZ\x00", "an xz file"},
	{"BZh", "a bzip2 file"},
	{"\x89PNG", "a PNG image"},
	{"\xff\xd8\xff", "a JPEG image"},
	{"GIF8", "a GIF image"},
	{"SQLite format 3\x00", "an SQLite database"},
	{"\xff\xfe", "UTF-16 text: save it as UTF-8"},
	{"\xfe\xff", "UTF-16 text: save it as UTF-8"},
}

// binaryFormat names the format of content s, by its first bytes, or
// returns "".
func binaryFormat(s string) string {
	for _, m := range fileMagics {
		if strings.HasPrefix(s, m.magic) {
			return m.name
		}
	}
	return ""
}

// CheckJSONText returns an error when a JSON message is no Unicode text:
// bytes that are not UTF-8 (JSON must be UTF-8), or an escape of half a
// UTF-16 surrogate pair ("\ud800" alone). Go's decoder turns either into
// U+FFFD, silently; an API checks its messages with CheckJSONText first.
func CheckJSONText(msg []byte) error {
	if !utf8.Valid(msg) {
		for i := 0; i < len(msg); {
			r, size := utf8.DecodeRune(msg[i:])
			if r == utf8.RuneError && size == 1 {
				return &NotTextError{Offset: i, Byte: msg[i]}
			}
			i += size
		}
	}
	// A backslash occurs only in a string of valid JSON, so escapes can be
	// read without following the strings; a message that is no JSON fails
	// to decode anyway.
	for i := 0; i < len(msg)-1; i++ {
		if msg[i] != '\\' {
			continue
		}
		if msg[i+1] != 'u' {
			i++ // an escaped character, perhaps a backslash
			continue
		}
		switch r := hexRune(msg[i+2:]); {
		case r >= 0xd800 && r < 0xdc00:
			if i+12 <= len(msg) && msg[i+6] == '\\' && msg[i+7] == 'u' {
				if low := hexRune(msg[i+8:]); low >= 0xdc00 && low < 0xe000 {
					i += 11
					continue
				}
			}
			fallthrough
		case r >= 0xdc00 && r < 0xe000:
			return fmt.Errorf("not Unicode text: the escape %s at offset %d is half of a UTF-16 surrogate pair", msg[i:i+6], i)
		}
		i++
	}
	return nil
}

// hexRune returns the value of the four hex digits b starts with, or -1.
func hexRune(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}
