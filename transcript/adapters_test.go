package transcript

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// wantTurn is what a test checks of a turn: its role, line, tool, command,
// files, failure and exit status, and the start of its text.
type wantTurn struct {
	role    Role
	line    int
	tool    string
	command string
	files   []string
	changed bool
	failed  bool
	exit    *int
	text    string // a prefix of the turn's text
}

// wantSession is what a test checks of a read session.
type wantSession struct {
	id, project, title string
	start, end         string // RFC 3339
	turns              []wantTurn
	warnings           []int // the lines (or records) of the warnings
}

// The fixtures, one a client, laid out as in a home directory.
const (
	home            = "testdata/home"
	claudeFixture   = home + "/.claude/projects/-home-dev-src-fetchkit/7f3c9a2e-5b1d-4e8a-9c47-2d6f0b8e1a53.jsonl"
	codexFixture    = home + "/.codex/sessions/2026/11/21/rollout-2026-11-21T16-02-11-019a8c3e-77d2-7b41-9f3a-5e1c2d4b6a80.jsonl"
	geminiFixture   = home + "/.gemini/tmp/326d90a056d51a045cce062efd2040e25b4457ccf8a55023715ba7c9d69cecb9/chats/session-2026-11-22T08-40-5d2e7c1a.json"
	clineFixture    = home + "/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1795436000000/ui_messages.json"
	continueFixture = home + "/.continue/sessions/b81f3c2a-6d4e-4a7b-9e15-0c2d3f4a5b6c.json"
	opencodeFixture = home + "/.local/share/opencode/storage/session/8f2e4c6a0b1d3e5f7a9c1e3b5d7f9a1c3e5b7d9f/ses_5a1b2c3d4ffeAbCdEfGhIjKlMn.json"
	aiderFixture    = home + "/src/pyparse/.aider.chat.history.md"
)

func exit(n int) *int { return &n }

func checkSession(t *testing.T, b Batch, want wantSession) {
	t.Helper()
	s := b.Session
	if s.ID != want.id || s.Project != want.project || s.Title != want.title {
		t.Errorf("session id %q project %q title %q, want %q %q %q", s.ID, s.Project, s.Title, want.id, want.project, want.title)
	}
	if want.start != "" {
		ws, _ := time.Parse(time.RFC3339Nano, want.start)
		we, _ := time.Parse(time.RFC3339Nano, want.end)
		if !s.Start.Equal(ws) || !s.End.Equal(we) {
			t.Errorf("session from %v to %v, want %v to %v", s.Start, s.End, ws, we)
		}
	}
	for i, w := range want.turns {
		if i >= len(s.Turns) {
			t.Errorf("turn %d missing (%d turns)", i, len(s.Turns))
			continue
		}
		g := s.Turns[i]
		if g.Index != b.Cursor.Turns-len(s.Turns)+i {
			t.Errorf("turn %d has index %d", i, g.Index)
		}
		if g.Role != w.role || (w.line != 0 && g.Line != w.line) || g.Tool != w.tool || g.Command != w.command ||
			!slices.Equal(g.Files, w.files) || g.Changed != w.changed || g.Failed != w.failed {
			t.Errorf("turn %d = {%s line %d tool %q command %q files %q changed %v failed %v}\nwant {%s line %d tool %q command %q files %q changed %v failed %v}",
				i, g.Role, g.Line, g.Tool, g.Command, g.Files, g.Changed, g.Failed,
				w.role, w.line, w.tool, w.command, w.files, w.changed, w.failed)
		}
		if (g.ExitCode == nil) != (w.exit == nil) || (g.ExitCode != nil && *g.ExitCode != *w.exit) {
			t.Errorf("turn %d exit code %v, want %v", i, deref(g.ExitCode), deref(w.exit))
		}
		if !strings.HasPrefix(g.Text, w.text) {
			t.Errorf("turn %d text %q, want it to start %q", i, g.Text, w.text)
		}
	}
	if len(s.Turns) > len(want.turns) {
		t.Errorf("%d turns, want %d; extra: %+v", len(s.Turns), len(want.turns), s.Turns[len(want.turns)])
	}
	var at []int
	for _, w := range b.Warnings {
		at = append(at, max(w.Line, w.Record))
		if w.Path != s.Path || w.Reason == "" {
			t.Errorf("warning %+v names no file or reason", w)
		}
	}
	if !slices.Equal(at, want.warnings) {
		t.Errorf("warnings at %v, want %v: %+v", at, want.warnings, b.Warnings)
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func readAll(t *testing.T, a Adapter, path string) Batch {
	t.Helper()
	b, err := a.Read(path, Cursor{}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if b.More || b.Restarted {
		t.Errorf("first read: more %v restarted %v", b.More, b.Restarted)
	}
	return b
}

func TestClaudeCodeFixture(t *testing.T) {
	b := readAll(t, ClaudeCode{}, claudeFixture)
	const bash = "go test ./client -run TestRetryBackoff -count=20"
	checkSession(t, b, wantSession{
		id: "7f3c9a2e-5b1d-4e8a-9c47-2d6f0b8e1a53", project: "/home/dev/src/fetchkit",
		title: "Fix flaky retry test in the http client",
		start: "2026-11-20T09:14:05.001Z", end: "2026-11-20T09:15:03.5Z",
		turns: []wantTurn{
			{role: RoleUser, line: 3, text: "TestRetryBackoff fails"},
			{role: RoleAssistant, line: 5, text: "I'll run the test"},
			{role: RoleAssistant, line: 6, tool: "Bash", command: bash},
			{role: RoleTool, line: 7, tool: "Bash", command: bash, failed: true, exit: exit(1), text: "Exit code 1\n--- FAIL"},
			{role: RoleAssistant, line: 10, text: "The jitter is subtracted"},
			{role: RoleUser, line: 11, text: "no, don't add a fake clock"},
			{role: RoleAssistant, line: 12, tool: "Edit", files: []string{"/home/dev/src/fetchkit/client/retry.go"}, changed: true},
			{role: RoleTool, line: 13, tool: "Edit", text: "The file /home/dev/src/fetchkit/client/retry.go has been updated"},
			{role: RoleAssistant, line: 14, tool: "Bash", command: bash},
			{role: RoleTool, line: 15, tool: "Bash", command: bash, text: "ok  \tgithub.com/dev/fetchkit/client"},
			{role: RoleAssistant, line: 16, tool: "Write", files: []string{"/home/dev/src/fetchkit/notes/retry.md"}, changed: true},
			{role: RoleTool, line: 17, tool: "Write", failed: true, text: "<tool_use_error>"},
			{role: RoleAssistant, line: 21, text: "Fixed: the jitter is clamped"},
		},
		warnings: []int{20, 22},
	})
}

func TestCodexFixture(t *testing.T) {
	b := readAll(t, Codex{}, codexFixture)
	const both = "cargo build && cargo test -q"
	const clippy = "cargo clippy -- -D warnings"
	checkSession(t, b, wantSession{
		id: "019a8c3e-77d2-7b41-9f3a-5e1c2d4b6a80", project: "/home/dev/src/ledger",
		start: "2026-11-21T16:02:19.730Z", end: "2026-11-21T16:03:16.870Z",
		turns: []wantTurn{
			{role: RoleUser, line: 3, text: "cargo build fails after the serde upgrade"},
			{role: RoleAssistant, line: 8, tool: "shell", command: "cargo build"},
			{role: RoleTool, line: 9, tool: "shell", command: "cargo build", failed: true, exit: exit(101), text: "error[E0433]"},
			{role: RoleAssistant, line: 11, text: "serde 1.0.220 removed"},
			{role: RoleAssistant, line: 13, tool: "apply_patch", files: []string{"src/money.rs"}, changed: true},
			{role: RoleTool, line: 14, tool: "apply_patch", exit: exit(0), text: "Success. Updated"},
			{role: RoleAssistant, line: 15, tool: "shell_command", command: both},
			{role: RoleTool, line: 16, tool: "shell_command", command: both, exit: exit(0), text: "Exit code: 0"},
			{role: RoleUser, line: 17, text: "also always run cargo clippy"},
			{role: RoleAssistant, line: 18, tool: "shell", command: clippy},
			{role: RoleTool, line: 19, tool: "shell", command: clippy, exit: exit(0), text: "    Checking ledger"},
			{role: RoleAssistant, line: 20, tool: "exec_command", command: "git diff --stat"},
			{role: RoleTool, line: 21, tool: "exec_command", command: "git diff --stat", exit: exit(0), text: "Chunk ID"},
			{role: RoleAssistant, line: 24, text: "Build, tests and clippy pass"},
		},
		warnings: []int{22, 23, 25},
	})
}

func TestGeminiFixture(t *testing.T) {
	b := readAll(t, Gemini{Roots: []string{"/home/dev/src/other", "/home/dev/src/weatherbot"}}, geminiFixture)
	const repro = "python -m weatherbot forecast --city Oslo"
	const pytest = "python -m pytest -q tests/test_forecast.py"
	checkSession(t, b, wantSession{
		id: "5d2e7c1a-9b3f-4e61-a8d2-0c7b6e5f4a39", project: "/home/dev/src/weatherbot",
		start: "2026-11-22T08:40:12.511Z", end: "2026-11-22T08:44:03.020Z",
		turns: []wantTurn{
			{role: RoleUser, text: "The forecast command crashes"},
			{role: RoleAssistant, text: "Let me reproduce it first."},
			{role: RoleAssistant, tool: "run_shell_command", command: repro},
			{role: RoleTool, tool: "run_shell_command", command: repro, failed: true, exit: exit(1), text: "Command: python -m weatherbot"},
			{role: RoleAssistant, text: "The API returns 'hourly'"},
			{role: RoleAssistant, tool: "read_file", files: []string{"/home/dev/src/weatherbot/weatherbot/client.py"}},
			{role: RoleTool, tool: "read_file", failed: true, text: "File not found"},
			{role: RoleUser, text: "it's in weatherbot/api.py"},
			{role: RoleAssistant, tool: "replace", files: []string{"/home/dev/src/weatherbot/weatherbot/forecast.py"}, changed: true},
			{role: RoleTool, tool: "replace", text: "Successfully modified file"},
			{role: RoleAssistant, tool: "run_shell_command", command: pytest},
			{role: RoleTool, tool: "run_shell_command", command: pytest, exit: exit(0), text: "Command: python -m pytest"},
			{role: RoleAssistant, text: "Fixed: forecast.py"},
		},
		warnings: []int{7},
	})
	if b.Cursor.Records != 8 {
		t.Errorf("read %d records, want 8", b.Cursor.Records)
	}
	other := readAll(t, Gemini{}, geminiFixture)
	if other.Session.Project != "" {
		t.Errorf("project %q without the root configured", other.Session.Project)
	}
}

func TestClineFixture(t *testing.T) {
	b := readAll(t, Cline{}, clineFixture)
	const dry = "bash scripts/deploy.sh --dry-run"
	checkSession(t, b, wantSession{
		id: "1795436000000", project: "/home/dev/src/shipyard",
		start: "2026-11-23T12:13:20Z", end: "2026-11-23T12:14:02.3Z",
		turns: []wantTurn{
			{role: RoleUser, text: "Add a --dry-run flag"},
			{role: RoleAssistant, text: "I'll read the deploy script first."},
			{role: RoleAssistant, tool: "readFile", files: []string{"scripts/deploy.sh"}},
			{role: RoleAssistant, tool: "editedExistingFile", files: []string{"scripts/deploy.sh"}, changed: true},
			{role: RoleAssistant, tool: "execute_command", command: dry},
			{role: RoleTool, tool: "execute_command", command: dry, text: "scripts/deploy.sh: line 14: rsync"},
			{role: RoleTool, tool: "error", failed: true, text: "Command failed"},
			{role: RoleUser, text: "rsync is not needed in dry-run mode"},
			{role: RoleAssistant, tool: "editedExistingFile", files: []string{"scripts/deploy.sh"}, changed: true},
			{role: RoleAssistant, tool: "execute_command", command: dry},
			{role: RoleTool, tool: "execute_command", command: dry, text: "dist/index.html"},
			{role: RoleAssistant, text: "deploy.sh takes --dry-run"},
		},
		warnings: []int{14},
	})
	if b.Cursor.Records != 16 {
		t.Errorf("read %d records, want 16: the partial message is left for later", b.Cursor.Records)
	}
}

func TestContinueFixture(t *testing.T) {
	b := readAll(t, Continue{}, continueFixture)
	checkSession(t, b, wantSession{
		id: "b81f3c2a-6d4e-4a7b-9e15-0c2d3f4a5b6c", project: "/home/dev/src/inkwell", title: "Rename config loader",
		turns: []wantTurn{
			{role: RoleUser, text: "rename loadCfg to loadConfig"},
			{role: RoleAssistant, text: "I'll find the uses first."},
			{role: RoleAssistant, tool: "grep_search", text: `{"query":"loadCfg"}`},
			{role: RoleTool, tool: "grep_search", text: "src/config.ts:12"},
			{role: RoleAssistant, tool: "edit_existing_file", files: []string{"src/config.ts"}, changed: true},
			{role: RoleTool, tool: "edit_existing_file", text: "Edit applied"},
			{role: RoleAssistant, tool: "run_terminal_command", command: "npm run build"},
			{role: RoleTool, tool: "run_terminal_command", command: "npm run build", failed: true, text: "src/main.ts(3,10)"},
			{role: RoleUser, text: "use the IDE rename next time"},
			{role: RoleAssistant, text: "Understood."},
		},
		warnings: []int{9},
	})
}

func TestOpenCodeFixture(t *testing.T) {
	b := readAll(t, OpenCode{}, opencodeFixture)
	const test = "npm test -- tilecache"
	checkSession(t, b, wantSession{
		id: "ses_5a1b2c3d4ffeAbCdEfGhIjKlMn", project: "/home/dev/src/trailmap", title: "Fix tile cache eviction",
		start: "2026-11-24T16:00:00Z", end: "2026-11-24T16:01:02Z",
		turns: []wantTurn{
			{role: RoleUser, text: "The tile cache never evicts"},
			{role: RoleAssistant, text: "I'll run the cache tests"},
			{role: RoleAssistant, tool: "bash", command: test},
			{role: RoleTool, tool: "bash", command: test, failed: true, exit: exit(1), text: "FAIL src/tilecache.test.ts"},
			{role: RoleAssistant, text: "size is never decremented"},
			{role: RoleAssistant, tool: "edit", files: []string{"/home/dev/src/trailmap/src/tilecache.ts"}, changed: true},
			{role: RoleTool, tool: "edit"},
			{role: RoleAssistant, tool: "read", files: []string{"/home/dev/src/trailmap/src/tilecache.spec.ts"}},
			{role: RoleTool, tool: "read", failed: true, text: "Error: File not found"},
			{role: RoleAssistant, tool: "bash", command: test},
			{role: RoleTool, tool: "bash", command: test, exit: exit(0), text: "PASS"},
			{role: RoleUser, text: "good. from now on use pnpm"},
			{role: RoleAssistant, text: "Noted: pnpm from now on."},
		},
		warnings: []int{3},
	})
	if b.Cursor.Records != 5 {
		t.Errorf("read %d messages, want 5: the one being written is left for later", b.Cursor.Records)
	}
}

func TestAiderFixture(t *testing.T) {
	b := readAll(t, Aider{}, aiderFixture)
	first, _ := time.ParseInLocation(time.DateTime, "2026-11-23 14:05:31", time.Local)
	second, _ := time.ParseInLocation(time.DateTime, "2026-11-24 09:12:02", time.Local)
	checkSession(t, b, wantSession{
		id: aiderFixture, project: home + "/src/pyparse",
		start: first.Format(time.RFC3339Nano), end: second.Format(time.RFC3339Nano),
		turns: []wantTurn{
			{role: RoleTool, line: 4, text: "/home/dev/.local/bin/aider --model sonnet\nAider v0.82.1"},
			{role: RoleUser, line: 10, text: "/add pyparse/lexer.py"},
			{role: RoleTool, line: 11, text: "Added pyparse/lexer.py"},
			{role: RoleUser, line: 13, text: "the lexer drops the last token"},
			{role: RoleAssistant, line: 15, text: "The loop in `tokenize`"},
			{role: RoleTool, line: 28, tool: "edit", files: []string{"pyparse/lexer.py"}, changed: true, text: "Tokens: 3.1k sent"},
			{role: RoleUser, line: 32, tool: "/run", command: "pytest -q tests/test_lexer.py"},
			{role: RoleTool, line: 33, text: "F.....\nFAILED tests/test_lexer.py::test_empty"},
			{role: RoleUser, line: 39, text: "no, don't touch the tests"},
			{role: RoleAssistant, line: 41, text: "An empty input"},
			{role: RoleTool, line: 52, tool: "edit", files: []string{"pyparse/lexer.py"}, changed: true},
			{role: RoleUser, line: 58, tool: "!", command: "make lint"},
			{role: RoleTool, line: 59, text: "ruff check pyparse"},
		},
	})
	if reply := b.Session.Turns[4].Text; !strings.Contains(reply, ">>>>>>> REPLACE\n```") {
		t.Errorf("the reply lost its edit block: %q", reply)
	}
	if got := b.Session.Turns[11].Time; !got.Equal(second) {
		t.Errorf("a turn of the second run at %v, want %v", got, second)
	}
}

func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		a    Adapter
		want string
	}{
		{ClaudeCode{}, claudeFixture},
		{Codex{}, codexFixture},
		{Gemini{}, geminiFixture},
		{Cline{}, clineFixture},
		{Continue{}, continueFixture},
		{OpenCode{}, opencodeFixture},
		{Aider{Roots: []string{home + "/src"}}, aiderFixture},
	} {
		t.Run(tc.a.Client(), func(t *testing.T) {
			found, err := tc.a.Discover(home)
			if err != nil || !slices.Equal(found, []string{tc.want}) {
				t.Errorf("discovered %q, %v; want %q", found, err, tc.want)
			}
		})
	}
	for _, a := range Adapters(Config{}) {
		if found, err := a.Discover(t.TempDir()); err != nil || len(found) != 0 {
			t.Errorf("%s in an empty home: %q, %v", a.Client(), found, err)
		}
	}
	if n := len(Adapters(Config{})); n != 7 {
		t.Errorf("%d adapters, want 7", n)
	}
}

func TestExitCodeIn(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want *int
	}{
		{"Exit code 2\nerror: no such file", exit(2)},
		{"Exit code: 0\nWall time: 1.2 seconds\nOutput:\nok", exit(0)},
		{"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 127\nOutput:\n", exit(127)},
		{"Command: make\nStdout: (empty)\nExit Code: -1\nSignal: 9", exit(-1)},
		{"the test printed: Exit code 3 somewhere", nil},
		{"all good", nil},
	} {
		if got := exitCodeIn(tc.out); deref(got) != deref(tc.want) {
			t.Errorf("exitCodeIn(%q) = %v, want %v", tc.out, deref(got), deref(tc.want))
		}
	}
}

func TestCodexOlderRollouts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollout-2025-06-02T10-11-12-5e6f.jsonl")
	lines := []string{
		`{"id":"5e6f7a8b-0000-4000-8000-0123456789ab","timestamp":"2025-06-02T10:11:12.000Z","instructions":null}`,
		`{"record_type":"state"}`,
		`{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"why does make fail?"}]}`,
		`{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"make\"]}","call_id":"call_1"}`,
		`{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"make: *** No rule to make target 'all'.\",\"metadata\":{\"exit_code\":2,\"duration_seconds\":0.1}}"}`,
		`{"record_type":"state"}`,
		`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"The Makefile has no all target."}]}`,
		`{"mystery":true}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := readAll(t, Codex{}, path)
	checkSession(t, b, wantSession{
		id: "5e6f7a8b-0000-4000-8000-0123456789ab",
		turns: []wantTurn{
			{role: RoleUser, line: 3, text: "why does make fail?"},
			{role: RoleAssistant, line: 4, tool: "shell", command: "make"},
			{role: RoleTool, line: 5, tool: "shell", command: "make", failed: true, exit: exit(2), text: "make: *** No rule"},
			{role: RoleAssistant, line: 7, text: "The Makefile has no all target."},
		},
		warnings: []int{8},
	})
	if want := time.Date(2025, 6, 2, 10, 11, 12, 0, time.UTC); !b.Session.Start.Equal(want) {
		t.Errorf("start %v, want %v", b.Session.Start, want)
	}
}
