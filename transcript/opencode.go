package transcript

// The OpenCode format, read from sst/opencode packages/opencode/src/
// storage/storage.ts (the JSON files), session/index.ts (Session.Info),
// session/message-v2.ts (MessageV2.Info and its parts: TextPart,
// ToolPart with ToolStateCompleted and ToolStateError) and tool/bash.ts,
// edit.ts, write.ts (the tools' input and metadata). It matches OpenCode
// 0.6 to 0.15, whose storage is JSON files:
//
//	~/.local/share/opencode/storage/session/<project id>/<session id>.json
//	~/.local/share/opencode/storage/message/<session id>/<message id>.json
//	~/.local/share/opencode/storage/part/<message id>/<part id>.json
//
// A session is {id, projectID, directory, title, time {created,
// updated}}; a message {id, sessionID, role, time {created, completed?}};
// a part {id, messageID, type: text|reasoning|tool|step-start|
// step-finish|patch|file|snapshot|agent|compaction|subtask|retry, text,
// synthetic?, tool, callID, state {status: pending|running|completed|
// error, input, output, error, metadata, time {start, end}}}. Ids sort in
// the order they were made. bash takes {command} and records {exit} in
// its metadata; edit, write and read take {filePath}. The transcript path
// is the session's file; its messages and parts are read beside it. An
// assistant message without time.completed, or with a tool still pending
// or running, is being written.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// OpenCode reads OpenCode's stored sessions.
type OpenCode struct {
	// Data is OpenCode's data directory; empty is
	// ~/.local/share/opencode (XDG_DATA_HOME/opencode where set).
	Data string
}

var _ Adapter = OpenCode{}

// Client is "opencode".
func (OpenCode) Client() string { return "opencode" }

// Discover lists the sessions' files, storage/session/*/*.json.
func (o OpenCode) Discover(home string) ([]string, error) {
	data := o.Data
	if data == "" {
		data = filepath.Join(home, ".local", "share", "opencode")
	}
	return glob(filepath.Join(data, "storage", "session", "*", "*.json"))
}

// Read reads the session whose file is path, and its messages after cur.
func (OpenCode) Read(path string, cur Cursor, lim Limits) (Batch, error) {
	r := newReading("opencode", path, cur, lim)
	storage := filepath.Dir(filepath.Dir(filepath.Dir(path)))
	var info struct {
		ID        string `json:"id"`
		Directory string `json:"directory"`
		Title     string `json:"title"`
		Time      struct {
			Created int64 `json:"created"`
		} `json:"time"`
	}
	if err := r.readJSON(path, &info); err != nil {
		return Batch{}, err
	}
	if info.ID == "" {
		r.warn("not an OpenCode session")
		return r.finish(), nil
	}
	dir := filepath.Join(storage, "message", filepath.Base(info.ID))
	names, err := jsonNames(dir)
	if err != nil {
		return Batch{}, err
	}
	if n := r.cur.Records; n > 0 && (len(names) < n || names[n-1] != r.cur.LastID) {
		r.restart()
	}
	// The messages read before are named, not read again; those past
	// the most this read may return wait for the next.
	end := min(len(names), r.cur.Records+r.lim.Turns)
	doc := document{meta: Meta{ID: info.ID, Project: info.Directory, Title: info.Title, Start: millis(info.Time.Created)}}
	doc.records = make([]record, end)
	for i, name := range names[:end] {
		doc.records[i].id = name
		if i >= r.cur.Records {
			doc.records[i] = r.opencodeMessage(storage, filepath.Join(dir, name+".json"), name)
		}
	}
	r.records(doc)
	if r.cur.Records == end && end < len(names) {
		r.batch.More = true
	}
	return r.finish(), nil
}

type opencodePart struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Tool      string `json:"tool"`
	State     struct {
		Status string `json:"status"`
		Input  struct {
			Command  string `json:"command"`
			FilePath string `json:"filePath"`
		} `json:"input"`
		Output   string `json:"output"`
		Error    string `json:"error"`
		Metadata struct {
			Exit *int `json:"exit"`
		} `json:"metadata"`
		Time struct {
			Start int64 `json:"start"`
		} `json:"time"`
	} `json:"state"`
}

// opencodeChanges are the tools that change the files they name.
var opencodeChanges = map[string]bool{"edit": true, "write": true, "patch": true, "multiedit": true}

// opencodeQuiet are the parts that carry no conversation.
var opencodeQuiet = map[string]bool{"reasoning": true, "step-start": true, "step-finish": true, "patch": true,
	"file": true, "snapshot": true, "agent": true, "compaction": true, "subtask": true, "retry": true}

// opencodeMessage reads one message and its parts.
func (r *reading) opencodeMessage(storage, path, id string) record {
	rec := record{id: id}
	var msg struct {
		Role string `json:"role"`
		Time struct {
			Created   int64 `json:"created"`
			Completed int64 `json:"completed"`
		} `json:"time"`
	}
	if err := r.readJSON(path, &msg); err != nil {
		rec.warnings = []string{"message " + quote(id) + " unreadable"}
		return rec
	}
	rec.pending = msg.Role == "assistant" && msg.Time.Completed == 0
	at := millis(msg.Time.Created)
	role := RoleUser
	if msg.Role == "assistant" {
		role = RoleAssistant
	}
	dir := filepath.Join(storage, "part", id)
	names, err := jsonNames(dir)
	if err != nil {
		rec.warnings = []string{"parts of message " + quote(id) + " unreadable"}
		return rec
	}
	for _, name := range names {
		var p opencodePart
		if err := r.readJSON(filepath.Join(dir, name+".json"), &p); err != nil {
			rec.warnings = append(rec.warnings, "part "+quote(name)+" unreadable")
			continue
		}
		switch {
		case p.Type == "text" && !p.Synthetic:
			rec.turns = append(rec.turns, Turn{Time: at, Role: role, Text: p.Text})
		case p.Type == "tool":
			rec.pending = rec.pending || p.State.Status == "pending" || p.State.Status == "running"
			rec.turns = append(rec.turns, opencodeTool(at, p)...)
		case p.Type == "text" || opencodeQuiet[p.Type]:
		default:
			rec.warnings = append(rec.warnings, "unknown part type "+quote(p.Type))
		}
	}
	return rec
}

// opencodeTool is a tool part's call and result.
func opencodeTool(at time.Time, p opencodePart) []Turn {
	s := p.State
	at = cmp.Or(millis(s.Time.Start), at)
	call := Turn{Time: at, Role: RoleAssistant, Tool: p.Tool, Command: s.Input.Command, Changed: opencodeChanges[p.Tool]}
	if s.Input.FilePath != "" {
		call.Files = []string{s.Input.FilePath}
	}
	res := Turn{Time: at, Role: RoleTool, Tool: p.Tool, Command: s.Input.Command, Text: cmp.Or(s.Output, s.Error), ExitCode: s.Metadata.Exit}
	res.Failed = s.Status == "error" || (res.ExitCode != nil && *res.ExitCode != 0)
	return []Turn{call, res}
}

// readJSON reads the JSON file at path into v, within Limits.Document; a
// file that is not JSON is a warning (and v stays as it was), one that
// cannot be opened an error.
func (r *reading) readJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, r.lim.Document+1))
	if err != nil {
		return fmt.Errorf("transcript: read %s: %w", path, err)
	}
	if int64(len(data)) > r.lim.Document {
		r.warn("%s: over the limit of %d bytes: skipped", filepath.Base(path), r.lim.Document)
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		r.warn("%s: not JSON: %v", filepath.Base(path), shortErr(err))
	}
	return nil
}

// jsonNames lists the names (without .json) of the JSON files in dir,
// sorted; a directory that does not exist holds none.
func jsonNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && e.Type().IsRegular() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}
