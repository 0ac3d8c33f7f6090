package transcript

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parseTime reads the timestamps the clients write (RFC 3339, or Unix
// milliseconds); what it cannot read is the zero time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// millis reads a time in Unix milliseconds; 0 is the zero time.
func millis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// text is content that is a string or a list of parts of which the text
// ones count ({"type":"text","text":...}, and the input_text and
// output_text of the OpenAI formats), joined by line breaks. Content of
// another shape is no text.
type text string

func (t *text) UnmarshalJSON(data []byte) error {
	*t = ""
	switch {
	case len(data) > 0 && data[0] == '"':
		return json.Unmarshal(data, (*string)(t))
	case len(data) > 0 && data[0] == '[':
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(data, &parts) != nil {
			return nil
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Text == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
		*t = text(b.String())
	}
	return nil
}

// textOf reads raw content as text.
func textOf(raw []byte) string {
	var t text
	_ = t.UnmarshalJSON(raw) // content of another shape is no text
	return string(t)
}

// commandOf reads a shell command given as a string or as an argv; an
// argv that runs a shell with -c (bash -lc "...") gives the script.
func commandOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) != nil {
		return ""
	}
	if n := len(argv); n == 3 && strings.HasPrefix(argv[1], "-") && strings.HasSuffix(argv[1], "c") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// exitLine finds the exit status that clients print at the head of a
// command's output: "Exit code 1" (Claude Code), "Exit code: 1" (Codex's
// shell_command), "Process exited with code 1" (Codex's exec_command),
// "Exit Code: 1" (Gemini CLI).
var exitLine = regexp.MustCompile(`(?m)^(?:Exit [Cc]ode:?|Process exited with code) (-?\d+)`)

// exitCodeIn returns the exit status printed in the first lines of a
// command's output, or nil.
func exitCodeIn(out string) *int {
	m := exitLine.FindStringSubmatch(out[:min(len(out), 4096)])
	if m == nil {
		return nil
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return nil
	}
	return &n
}

// patchFiles lists the files of an apply_patch patch ("*** Update File:
// path" and its Add and Delete siblings).
func patchFiles(patch string) []string {
	var files []string
	for line := range strings.Lines(patch) {
		for _, p := range []string{"*** Update File: ", "*** Add File: ", "*** Delete File: ", "*** Move to: "} {
			if rest, ok := strings.CutPrefix(line, p); ok {
				files = append(files, strings.TrimSpace(rest))
			}
		}
	}
	return files
}
