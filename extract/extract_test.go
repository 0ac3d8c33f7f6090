package extract

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/internal/secrets/secretstest"
	"github.com/memmesh/memmesh/transcript"
)

// builder writes sessions for the tests, turn by turn.
type builder struct{ s transcript.Session }

func newBuilder() *builder {
	return &builder{s: transcript.Session{Client: "claude-code", ID: "s-test", Project: "/home/dev/src/app"}}
}

func (b *builder) turn(t transcript.Turn) *builder {
	t.Index = len(b.s.Turns)
	b.s.Turns = append(b.s.Turns, t)
	return b
}

func (b *builder) user(text string) *builder {
	return b.turn(transcript.Turn{Role: transcript.RoleUser, Text: text})
}

func (b *builder) agent(text string) *builder {
	return b.turn(transcript.Turn{Role: transcript.RoleAssistant, Text: text})
}

func (b *builder) run(cmd, out string, code int) *builder {
	b.turn(transcript.Turn{Role: transcript.RoleAssistant, Tool: "Bash", Command: cmd})
	return b.turn(transcript.Turn{Role: transcript.RoleTool, Tool: "Bash", Text: out, ExitCode: &code, Failed: code != 0})
}

func (b *builder) edit(files ...string) *builder {
	b.turn(transcript.Turn{Role: transcript.RoleAssistant, Tool: "Edit", Files: files, Changed: true})
	return b.turn(transcript.Turn{Role: transcript.RoleTool, Tool: "Edit", Text: "updated"})
}

func kinds(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind+"/"+string(c.Rule))
	}
	return out
}

// TestUserSpeech holds what the rules read in a user's prompt, and what
// they leave: greetings, questions, one-off requests.
func TestUserSpeech(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"standing instruction", "Always run the linter first.", []string{"convention/user-instruction"}},
		{"instruction after a request", "Fix the test, and never commit generated files.", []string{"convention/user-instruction"}},
		{"we use", "thanks! we use tabs here.", []string{"convention/user-instruction"}},
		{"use X not Y", "use vitest, not jest", []string{"convention/user-instruction"}},
		{"preference", "I'd prefer early returns over nested ifs.", []string{"preference/user-preference"}},
		{"decision", "Let's go with SQLite because it needs no server.", []string{"decision/decision"}},
		{"decided", "Decided: the API stays on v1 until March.", []string{"decision/decision"}},
		{"pitfall", "Caching the client doesn't work because the token expires hourly.", []string{"note/pitfall"}},
		{"greeting", "Hi! Thanks a lot, that's great.", nil},
		{"question", "Should we always use pnpm?", nil},
		{"one-off", "Don't worry about the flaky test for now.", nil},
		{"request", "Add a retry to the upload and fix the typo in the README.", nil},
		{"pasted log", "It fails:\n    always: true\nERROR: never run as root\n", nil},
		{"code block", "Here:\n```\n// always use the pool\n```\nwhat does it do", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := kinds(Candidates(newBuilder().user(tt.text).s))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Candidates(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

// TestCorrectionNamesWhatItCorrects: "no, use pnpm" says what the agent
// did before.
func TestCorrectionNamesWhatItCorrects(t *testing.T) {
	s := newBuilder().run("npm install", "npm error code EUNSUPPORTEDPROTOCOL", 1).user("no, use pnpm").s
	got := Candidates(s)
	if len(got) != 1 || got[0].Rule != RuleCorrection || !strings.Contains(got[0].Content, "Use pnpm") ||
		!strings.Contains(got[0].Content, "`npm install`") {
		t.Fatalf("got %+v, want one correction to pnpm naming npm install", got)
	}
}

// TestAgentPlansAndToolOutputAreNotSpeech: the agent's plans and what a
// tool printed never become instructions or decisions.
func TestAgentPlansAndToolOutputAreNotSpeech(t *testing.T) {
	s := newBuilder().
		agent("Let me go with the simplest fix. I'll always check the cache first.").
		run("cat CONTRIBUTING.md", "Always run make lint. We decided to use Postgres because of JSONB.", 0).
		s
	if got := Candidates(s); len(got) != 0 {
		t.Fatalf("got %v, want nothing", kinds(got))
	}
}

// TestBugFix: a test failed, a file changed, the same test passed.
func TestBugFix(t *testing.T) {
	s := newBuilder().
		run("go test ./...", "--- FAIL: TestSum\n    sum_test.go:9: got 3, want 4\nFAIL", 1).
		agent("The loop stops one element early because the bound is len-1.").
		edit("sum.go").
		run("go test ./... 2>&1 | tail -5", "ok  \tapp\t0.01s", 0).
		s
	got := Candidates(s)
	if len(got) != 2 || got[0].Kind != KindBug || got[1].Kind != KindFact {
		t.Fatalf("got %v, want a bug and the commands", kinds(got))
	}
	bug := got[0]
	for _, want := range []string{"sum_test.go:9: got 3, want 4", "because the bound is len-1", "sum.go", "`go test ./...` passed"} {
		if !strings.Contains(bug.Content, want) {
			t.Errorf("bug content %q lacks %q", bug.Content, want)
		}
	}
	if !slices.Equal(bug.Touches, []string{"sum.go"}) || !slices.Equal(bug.Evidence.Turns, []int{0, 1, 3, 5}) {
		t.Errorf("touches %v, evidence %v", bug.Touches, bug.Evidence.Turns)
	}
}

// TestNoBugWithout: no candidate for a failure that nothing fixed, one
// that passed with no change, one caused by the agent's own earlier edit,
// or a failure of a command that is not a check.
func TestNoBugWithout(t *testing.T) {
	fail := func(b *builder) *builder { return b.run("go build ./...", "main.go:3:2: undefined: x", 1) }
	pass := func(b *builder) *builder { return b.run("go build ./...", "", 0) }
	tests := map[string]transcript.Session{
		"never passed":   fail(newBuilder()).edit("main.go").s,
		"no change":      pass(fail(newBuilder())).s,
		"its own slip":   pass(fail(newBuilder().edit("main.go")).edit("main.go")).s,
		"not a check":    newBuilder().run("git push", "rejected", 1).edit("main.go").run("git push", "ok", 0).s,
		"an install":     newBuilder().run("npm install", "ERESOLVE", 1).edit("package.json").run("npm install", "ok", 0).s,
		"other commands": newBuilder().run("make test", "FAIL", 1).edit("a.c").run("make docs", "ok", 0).s,
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			for _, c := range Candidates(s) {
				if c.Kind == KindBug {
					t.Errorf("got a bug: %q", c.Content)
				}
			}
		})
	}
}

// TestProjectCommands lists checks that passed, the shortest form of
// each, and leaves out what changes or shows things.
func TestProjectCommands(t *testing.T) {
	s := newBuilder().
		run("cd /home/dev/src/app && go test -run TestX -v ./storage", "ok", 0).
		run("go test ./...", "ok", 0).
		run("git status", "clean", 0).
		run("pnpm install", "done", 0).
		run("npm run lint", "bad", 1).
		run("GOFLAGS=-mod=mod go vet ./...", "", 0).
		s
	got := Candidates(s)
	if len(got) != 1 || got[0].Content != "Commands that built, tested or checked app and passed: `go test ./...`, `go vet ./...`." {
		t.Fatalf("got %+v", got)
	}
}

// TestErrorLine picks the line that says what went wrong.
func TestErrorLine(t *testing.T) {
	tests := []struct{ out, want string }{
		{"ok a\n--- FAIL: TestX\n    x_test.go:4: want 1\nFAIL", "x_test.go:4: want 1"},
		{"E   ImportError: cannot import name 'x'\nERROR tests/a.py", "ImportError: cannot import name 'x'"},
		{"thread 'main' panicked at src/a.rs:3:1:\nindex out of bounds\n", "thread 'main' panicked at src/a.rs:3:1: index out of bounds"},
		{"FAILURE: Build failed with an exception.\nExecution failed for task ':app:compile'.", "Execution failed for task ':app:compile'."},
		{"nothing useful here", ""},
	}
	for _, tt := range tests {
		if got := errorLine(tt.out); got != tt.want {
			t.Errorf("errorLine(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}

// TestCandidatesScrubSecrets: a key in a tool's output and one in a user's
// prompt leave the package redacted.
func TestCandidatesScrubSecrets(t *testing.T) {
	var keys []string
	for _, c := range secretstest.Cases(t) {
		if (c.Kind == "openai-key" || c.Kind == "github-token") && len(c.Secrets) > 0 && !strings.ContainsAny(c.Secrets[0], " \n") {
			keys = append(keys, c.Secrets[0])
		}
	}
	if len(keys) < 2 {
		t.Fatalf("want two keys from the corpus, have %d", len(keys))
	}
	inOutput, inPrompt := keys[0], keys[len(keys)-1]
	s := newBuilder().
		user("Always call the staging API with the key "+inPrompt+" and never the prod one.").
		run("go test ./...", "--- FAIL: TestAuth\n    auth_test.go:12: error: 401 for key "+inOutput+"\nFAIL", 1).
		edit("auth.go").
		run("go test ./...", "ok", 0).
		s
	got := Candidates(s)
	if len(got) != 3 {
		t.Fatalf("got %v, want an instruction, a bug and the commands", kinds(got))
	}
	redacted := 0
	for _, c := range got {
		all := c.Title + c.Content + strings.Join(c.Touches, "")
		for _, k := range keys {
			if strings.Contains(all, k) {
				t.Errorf("%s candidate holds a key: %q", c.Kind, all)
			}
		}
		redacted += strings.Count(c.Content, "[REDACTED:")
	}
	if redacted < 2 {
		t.Errorf("want both keys redacted in the contents, found %d markers", redacted)
	}
}

// TestBounds: a session of 10,000 tool outputs and huge turns stays within
// the limits; what lies past them is not read.
func TestBounds(t *testing.T) {
	b := newBuilder()
	huge := strings.Repeat("Always use the pool. ", 1<<16)
	b.user(huge)
	for i := range 5000 {
		b.run(fmt.Sprintf("make test%d", i), strings.Repeat("x", 1000), i%2)
		if i%3 == 0 {
			b.edit(fmt.Sprintf("f%d.c", i))
		}
	}
	b.user("Never push to main.")
	got := Candidates(b.s)
	lim := DefaultLimits()
	if len(got) > lim.Candidates {
		t.Fatalf("%d candidates, want at most %d", len(got), lim.Candidates)
	}
	for _, c := range got {
		if len(c.Content) > lim.Content || len([]rune(c.Title)) > lim.Title {
			t.Errorf("candidate of %d bytes, title of %d runes", len(c.Content), len([]rune(c.Title)))
		}
		if strings.Contains(c.Content, "push to main") {
			t.Errorf("read turn %d, past the %d turns read", len(b.s.Turns)-1, lim.Turns)
		}
	}
}

// FuzzCandidates: any text in any turn yields bounded candidates whose
// evidence points into the session.
func FuzzCandidates(f *testing.F) {
	f.Add("no, use pnpm. Always run make.", "error: x.go:1: undefined", "go test ./...", 1)
	f.Add("Let's go with X because Y", "panicked at a.rs:1:\n", "cargo test", 101)
	f.Fuzz(func(t *testing.T, prompt, out, cmd string, code int) {
		s := newBuilder().user(prompt).run(cmd, out, code).edit(prompt).run(cmd, out, 0).agent(out).user(out).s
		for _, c := range Candidates(s) {
			for _, i := range c.Evidence.Turns {
				if i < 0 || i >= len(s.Turns) {
					t.Fatalf("evidence turn %d of %d", i, len(s.Turns))
				}
			}
			if c.Kind == "" || c.Content == "" || c.Rule == "" || len(c.Content) > DefaultLimits().Content {
				t.Fatalf("bad candidate %+v", c)
			}
		}
	})
}
