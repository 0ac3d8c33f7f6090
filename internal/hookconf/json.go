package hookconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// object is a JSON object that keeps its members in the order of the file
// (and duplicate keys): a settings file is written back with its keys
// where they were. Of duplicate keys the last counts, as for the clients
// (JSON.parse, serde_json's maps).
type object struct {
	members []member
}

type member struct {
	key string
	val any // *object, []any, string, json.Number, bool or nil
}

// get returns the value of the last member named key.
func (o *object) get(key string) (any, bool) {
	if i := o.index(key); i >= 0 {
		return o.members[i].val, true
	}
	return nil, false
}

// set replaces the value of the last member named key, or appends one.
func (o *object) set(key string, val any) {
	if i := o.index(key); i >= 0 {
		o.members[i].val = val
		return
	}
	o.members = append(o.members, member{key, val})
}

// index is the position of the last member named key, or -1.
func (o *object) index(key string) int {
	for i := len(o.members) - 1; i >= 0; i-- {
		if o.members[i].key == key {
			return i
		}
	}
	return -1
}

// remove removes the last member named key.
func (o *object) remove(key string) {
	if i := o.index(key); i >= 0 {
		o.members = append(o.members[:i], o.members[i+1:]...)
	}
}

// maxDepth bounds the nesting of a settings file read: a file of a few
// MiB of '[' must not exhaust the stack.
const maxDepth = 200

// parseJSON decodes one JSON value, keeping the order of object members
// and numbers as written.
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			o := &object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.members = append(o.members, member{k.(string), v})
			}
			_, err := dec.Token() // '}'
			return o, err
		}
		a := []any{}
		for dec.More() {
			v, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ']'
		return a, err
	default:
		return t, nil
	}
}

// layout is how a file writes its JSON: the indent of one level ("" for
// one line), whether it ends with a newline and whether its lines end
// with CR LF.
type layout struct {
	indent  string
	newline bool
	crlf    bool
}

// defaultLayout is the one of a new file: two spaces, as the clients write
// their settings.
var defaultLayout = layout{indent: "  ", newline: true}

// layoutOf guesses a file's layout from its first indented line.
func layoutOf(data []byte) layout {
	l := layout{newline: bytes.HasSuffix(data, []byte("\n")), crlf: bytes.Contains(data, []byte("\r\n"))}
	trimmed := bytes.TrimSpace(data)
	i := bytes.IndexByte(trimmed, '\n')
	if i < 0 {
		return l // one line
	}
	line := trimmed[i+1:]
	n := 0
	for n < len(line) && (line[n] == ' ' || line[n] == '\t') {
		n++
	}
	l.indent = string(line[:n])
	if l.indent == "" {
		l.indent = defaultLayout.indent
	}
	return l
}

// encodeJSON writes v in the layout, HTML characters unescaped as the
// clients write them.
func encodeJSON(v any, l layout) ([]byte, error) {
	var compact bytes.Buffer
	if err := writeCompact(&compact, v); err != nil {
		return nil, err
	}
	out := compact.Bytes()
	if l.indent != "" {
		var b bytes.Buffer
		if err := json.Indent(&b, out, "", l.indent); err != nil {
			return nil, err
		}
		out = b.Bytes()
	}
	if l.newline {
		out = append(out, '\n')
	}
	if l.crlf { // JSON holds no raw newline but between tokens
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	return out, nil
}

func writeCompact(b *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, m := range t.members {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, m.key)
			b.WriteByte(':')
			if err := writeCompact(b, m.val); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCompact(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case string:
		writeString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case bool:
		b.WriteString(fmt.Sprint(t))
	case nil:
		b.WriteString("null")
	default:
		return fmt.Errorf("no JSON for %T", v)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// str returns v as a string, if it is one.
func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}
