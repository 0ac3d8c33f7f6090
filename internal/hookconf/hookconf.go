// Package hookconf writes memmesh's hooks into the configuration of coding
// agents (Claude Code, Codex, Gemini CLI) and takes them out again.
//
// The three clients read hooks in one shape, under the "hooks" member of a
// JSON file:
//
//	{"hooks": {"EVENT": [{"matcher": "...", "hooks": [{"type": "command", "command": "..."}]}]}}
//
// An edit keeps everything else in the file: other members, other hooks,
// the order of keys, numbers as written and the file's indentation, so
// that a file installed to and uninstalled from is the file it was. The
// file is backed up before it changes, written atomically with its mode,
// and left alone when it is not JSON, not an object or larger than
// MaxFile. Installing twice is installing once: a memmesh hook already
// there is not added again. Uninstalling removes memmesh's hook entries
// (commands that run memmesh's hook commands) and the groups, events and
// members that only held them.
package hookconf

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/internal/safefile"
)

// MaxFile bounds a client's config file that memmesh reads: settings are
// a few KiB; a larger file is refused, never read whole.
const MaxFile = 4 << 20

// Hook is one command a client runs on one of its events.
type Hook struct {
	Event   string
	Command string
	Name    string // the handler's name where the client shows one (Gemini CLI)
}

// Client is a coding agent whose hooks memmesh installs.
type Client struct {
	Name string // as in --client
	Dir  string // its config directory, in the home or in a project
	File string // its hooks file in Dir
	// Hooks are memmesh's hooks for the client.
	Hooks []Hook
	// Feature is the TOML file in the home's Dir where hooks are turned on
	// ("" when nothing turns them on).
	Feature string
}

// The commands memmesh's hooks run.
const (
	ContextCommand = "memmesh context --hook"
	ingestCommand  = "memmesh sessions ingest --hook --client "
)

// Clients are the clients memmesh installs hooks for.
//
// Claude Code: settings in .claude/settings.json (project) and
// ~/.claude/settings.json (user); events SessionStart, UserPromptSubmit,
// PreCompact and SessionEnd (code.claude.com/docs/en/hooks).
//
// Codex: hooks.json in the config folder of each layer, .codex/ of a
// project and ~/.codex/ (openai/codex codex-rs/hooks/src/engine/discovery.rs,
// load_hooks_json), in Claude Code's shape (codex-rs/config HooksFile,
// HookEventsToml: PreToolUse, PermissionRequest, PostToolUse, PreCompact,
// PostCompact, SessionStart, UserPromptSubmit, SubagentStart, SubagentStop,
// Stop; no event at the end of a session, so Stop, at the end of each turn,
// ingests). Hooks are turned on by the feature codex_hooks (later releases
// call it hooks, on by default, and still read codex_hooks:
// codex-rs/features/src/legacy.rs).
//
// Gemini CLI: the "hooks" member of .gemini/settings.json and
// ~/.gemini/settings.json, handlers with a name; events SessionStart,
// BeforeAgent (a prompt, before planning), PreCompress and SessionEnd
// (google-gemini/gemini-cli docs/hooks/index.md and reference.md).
var Clients = []Client{
	{
		Name: "claude-code", Dir: ".claude", File: "settings.json",
		Hooks: []Hook{
			{Event: "SessionStart", Command: ContextCommand},
			{Event: "UserPromptSubmit", Command: ContextCommand},
			{Event: "PreCompact", Command: ingestCommand + "claude-code"},
			{Event: "SessionEnd", Command: ingestCommand + "claude-code"},
		},
	},
	{
		Name: "codex", Dir: ".codex", File: "hooks.json", Feature: "config.toml",
		Hooks: []Hook{
			{Event: "SessionStart", Command: ContextCommand},
			{Event: "UserPromptSubmit", Command: ContextCommand},
			{Event: "PreCompact", Command: ingestCommand + "codex"},
			{Event: "Stop", Command: ingestCommand + "codex"},
		},
	},
	{
		Name: "gemini", Dir: ".gemini", File: "settings.json",
		Hooks: []Hook{
			{Event: "SessionStart", Command: ContextCommand, Name: "memmesh-context"},
			{Event: "BeforeAgent", Command: ContextCommand, Name: "memmesh-context"},
			{Event: "PreCompress", Command: ingestCommand + "gemini", Name: "memmesh-ingest"},
			{Event: "SessionEnd", Command: ingestCommand + "gemini", Name: "memmesh-ingest"},
		},
	},
}

// Lookup returns the client named name.
func Lookup(name string) (Client, error) {
	for _, c := range Clients {
		if c.Name == name {
			return c, nil
		}
	}
	names := make([]string, len(Clients))
	for i, c := range Clients {
		names[i] = c.Name
	}
	return Client{}, fmt.Errorf("no client %q: use %s", name, strings.Join(names, ", "))
}

// Path is the client's hooks file under root (a home or a project).
func (c Client) Path(root string) string {
	return filepath.Join(root, c.Dir, c.File)
}

// Result says what an edit did to a file.
type Result struct {
	Path    string   `json:"path"`
	Changed bool     `json:"changed"`
	Removed bool     `json:"removed,omitempty"` // the file, left empty
	Backup  string   `json:"backup,omitempty"`
	Events  []string `json:"events,omitempty"` // the events edited
}

// Install adds hooks to the JSON file at path (created when missing);
// a hook whose event already runs the same memmesh command is kept as it
// is.
func Install(path string, hooks []Hook, now time.Time) (Result, error) {
	return edit(path, now, func(root *object) ([]string, error) {
		return install(root, hooks)
	})
}

// Uninstall removes memmesh's hooks from the JSON file at path, and the
// groups, events and "hooks" member left empty by it; a file left as an
// empty object is removed (backed up first).
func Uninstall(path string, now time.Time) (Result, error) {
	return edit(path, now, uninstall)
}

// Installed returns the events of the JSON file at path that run a
// memmesh hook, nil when the file is missing.
func Installed(path string) ([]string, error) {
	f, err := safefile.Read(path, MaxFile)
	if err != nil || !f.Exists {
		return nil, err
	}
	root, err := parseSettings(f)
	if err != nil {
		return nil, err
	}
	hooks, err := hooksMember(root, false)
	if err != nil || hooks == nil {
		return nil, err
	}
	var events []string
	for _, m := range hooks.members {
		groups, _ := m.val.([]any)
		if slices.ContainsFunc(groups, func(g any) bool { return len(memmeshHandlers(g)) > 0 }) {
			events = append(events, m.key)
		}
	}
	return events, nil
}

// edit applies change to the settings at path and writes them back when
// it edited an event.
func edit(path string, now time.Time, change func(*object) ([]string, error)) (Result, error) {
	res := Result{Path: path}
	f, err := safefile.Read(path, MaxFile)
	if err != nil {
		return res, err
	}
	root := &object{}
	if f.Exists {
		if root, err = parseSettings(f); err != nil {
			return res, err
		}
	}
	res.Events, err = change(root)
	if err != nil || len(res.Events) == 0 {
		return res, err
	}
	res.Changed = true
	if len(root.members) == 0 && f.Exists {
		res.Removed = true
		res.Backup, err = f.Remove(now)
		return res, err
	}
	l := defaultLayout
	if len(strings.TrimSpace(string(f.Data))) > 0 {
		l = layoutOf(f.Data)
	}
	data, err := encodeJSON(root, l)
	if err != nil {
		return res, err
	}
	res.Backup, err = f.Replace(data, "", now)
	return res, err
}

// parseSettings decodes a settings file: a JSON object, or nothing at all.
func parseSettings(f safefile.File) (*object, error) {
	if strings.TrimSpace(string(f.Data)) == "" {
		return &object{}, nil
	}
	v, err := parseJSON(f.Data)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%w): left alone", f.Path, err)
	}
	root, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%s holds no JSON object: left alone", f.Path)
	}
	return root, nil
}

// hooksMember returns the root's "hooks" object, created when missing if
// create is set.
func hooksMember(root *object, create bool) (*object, error) {
	v, ok := root.get("hooks")
	if !ok {
		if !create {
			return nil, nil
		}
		hooks := &object{}
		root.set("hooks", hooks)
		return hooks, nil
	}
	hooks, ok := v.(*object)
	if !ok {
		return nil, errors.New(`"hooks" is not an object: left alone`)
	}
	return hooks, nil
}

func install(root *object, hooks []Hook) ([]string, error) {
	if len(hooks) == 0 {
		return nil, nil
	}
	_, had := root.get("hooks")
	members, err := hooksMember(root, true)
	if err != nil {
		return nil, err
	}
	var added []string
	for _, h := range hooks {
		v, ok := members.get(h.Event)
		if !ok {
			v = []any{}
		}
		groups, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("hooks.%s is not a list: left alone", h.Event)
		}
		if hasCommand(groups, h.Command) {
			continue
		}
		members.set(h.Event, append(groups, group(h)))
		added = append(added, h.Event)
	}
	if len(added) == 0 && !had {
		root.remove("hooks")
	}
	return added, nil
}

// group is a matcher group running h: no matcher, every occurrence of the
// event.
func group(h Hook) *object {
	handler := &object{}
	if h.Name != "" {
		handler.set("name", h.Name)
	}
	handler.set("type", "command")
	handler.set("command", h.Command)
	g := &object{}
	g.set("hooks", []any{handler})
	return g
}

// hasCommand reports whether a group already runs the memmesh command
// of command (whatever its flags or path).
func hasCommand(groups []any, command string) bool {
	want := memmeshCommand(command)
	for _, g := range groups {
		for _, cmd := range memmeshHandlers(g) {
			if memmeshCommand(cmd) == want {
				return true
			}
		}
	}
	return false
}

// memmeshHandlers returns the commands of the group's handlers that run
// memmesh's hooks.
func memmeshHandlers(g any) []string {
	o, _ := g.(*object)
	if o == nil {
		return nil
	}
	v, _ := o.get("hooks")
	handlers, _ := v.([]any)
	var found []string
	for _, h := range handlers {
		ho, _ := h.(*object)
		if ho == nil {
			continue
		}
		if cmd, _ := ho.get("command"); memmeshCommand(str(cmd)) != "" {
			found = append(found, str(cmd))
		}
	}
	return found
}

func uninstall(root *object) ([]string, error) {
	hooks, err := hooksMember(root, false)
	if err != nil || hooks == nil {
		return nil, err
	}
	var events []string
	kept := hooks.members[:0]
	for _, m := range hooks.members {
		groups, ok := m.val.([]any)
		if ok {
			var removed bool
			if groups, removed = withoutMemmesh(groups); removed {
				events = append(events, m.key)
				if len(groups) == 0 {
					continue
				}
				m.val = groups
			}
		}
		kept = append(kept, m)
	}
	hooks.members = kept
	if len(events) > 0 && len(hooks.members) == 0 {
		root.remove("hooks")
	}
	return events, nil
}

// withoutMemmesh removes memmesh's handlers from groups, and the groups
// that only held them.
func withoutMemmesh(groups []any) ([]any, bool) {
	var kept []any
	removed := false
	for _, g := range groups {
		if len(memmeshHandlers(g)) == 0 {
			kept = append(kept, g)
			continue
		}
		removed = true
		o := g.(*object)
		v, _ := o.get("hooks")
		var handlers []any
		for _, h := range v.([]any) {
			ho, _ := h.(*object)
			if ho != nil {
				if cmd, _ := ho.get("command"); memmeshCommand(str(cmd)) != "" {
					continue
				}
			}
			handlers = append(handlers, h)
		}
		if len(handlers) > 0 {
			o.set("hooks", handlers)
			kept = append(kept, o)
		}
	}
	if kept == nil {
		kept = []any{}
	}
	return kept, removed
}

// memmeshCommand names the memmesh hook command that a shell command
// line runs ("context" or "ingest"), or "" when it runs none: the program
// is memmesh (by any path), its command is context or sessions ingest,
// and --hook is set.
func memmeshCommand(line string) string {
	fields := strings.Fields(line)
	if len(fields) == 0 || filepath.Base(strings.Trim(fields[0], `"'`)) != "memmesh" {
		return ""
	}
	var words []string
	hook := false
	for i := 1; i < len(fields); i++ {
		switch f := fields[i]; {
		case f == "--hook" || f == "--hook=true":
			hook = true
		case f == "--home" || f == "--format":
			i++ // their value
		case !strings.HasPrefix(f, "-"):
			words = append(words, f)
		}
	}
	switch {
	case !hook || len(words) == 0:
		return ""
	case words[0] == "context":
		return "context"
	case len(words) > 1 && words[0] == "sessions" && words[1] == "ingest":
		return "ingest"
	}
	return ""
}
