// Package inert makes text that memories, agents and peers wrote safe to
// show: on a terminal, in the Markdown an agent reads, and in JSON. It
// imports nothing of memmesh, so that both the CLI and the MCP server use
// it.
//
// Text replaces what would act instead of being read, visibly rather than
// silently, so that a reader sees that something was there:
//
//	C0 controls but \n and \t   Unicode control pictures: ESC ␛, NUL ␀, BEL ␇, CR ␍
//	                            ("\r\n" is a line break and stays "\n")
//	DEL                         ␡
//	C1 controls U+0080-U+009F   \u0080 ... \u009f (8-bit CSI and OSC included)
//	bidi embeddings, overrides  \u202a ... \u202e, \u2066 ... \u2069: they
//	  and isolates              reorder the text shown around them
//	invalid UTF-8               U+FFFD (�), one per byte
//
// The control pictures take one column, as the character they stand for
// was counted in, so tables stay aligned.
//
// JSON escapes the same characters as \uXXXX where encoding/json leaves
// them raw (DEL, C1 controls, bidi formatting): the JSON decodes to the
// exact stored value and stays valid.
package inert

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text returns s with every character that could act on a terminal or
// reorder displayed text replaced by a visible stand-in (see the package
// documentation). Text that needs no change is returned as it is.
func Text(s string) string {
	i := Index(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			// a line break written the Windows way: the \n follows
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r < 0x20 && r != '\n' && r != '\t':
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('\u2421')
		case isC1(r) || isBidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// JSON returns the JSON text data with DEL, the C1 controls and the bidi
// formatting characters escaped as \uXXXX. encoding/json escapes the C0
// controls and writes invalid UTF-8 as U+FFFD but leaves these raw; they
// can only stand inside strings, where the escape is the same value.
func JSON(data []byte) []byte {
	i := Index(string(data))
	if i < 0 {
		return data
	}
	out := make([]byte, 0, len(data)+32)
	out = append(out, data[:i]...)
	for i < len(data) {
		r, size := utf8.DecodeRune(data[i:])
		if r == 0x7f || isC1(r) || isBidi(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	return out
}

// Index returns the offset of the first byte of s that Text would change,
// or -1 when s is inert.
func Index(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || isC1(r) || isBidi(r) {
			return i
		}
		i += size
	}
	return -1
}

// isC1 reports whether r is a C1 control character.
func isC1(r rune) bool { return 0x80 <= r && r <= 0x9f }

// isBidi reports whether r is a bidi embedding, override or isolate (or
// their pop), which reorders the text displayed after it.
func isBidi(r rune) bool {
	return 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069
}
