package mcp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/memmesh/memmesh/transcript"
)

// getPrompt gets a prompt and returns the text of its one user message.
func getPrompt(t *testing.T, c *client.Client, name string, args map[string]string) (string, error) {
	t.Helper()
	var req mcpgo.GetPromptRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.GetPrompt(context.Background(), req)
	if err != nil {
		return "", err
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != mcpgo.RoleUser {
		t.Fatalf("%s: messages %+v", name, res.Messages)
	}
	text, ok := mcpgo.AsTextContent(res.Messages[0].Content)
	if !ok {
		t.Fatalf("%s: content %+v", name, res.Messages[0].Content)
	}
	return text.Text, nil
}

func TestPrompts(t *testing.T) {
	n := testNode(t)
	c := connect(t, n)
	var m, ops rememberData
	call(t, c, "remember", map[string]any{"content": "Flaky test TestSync: it raced on the clock; inject a fake clock.", "kind": "bug"}, &m)
	call(t, c, "remember", map[string]any{"content": "Kubernetes pods restart nightly at 03:00.", "namespace": "ops"}, &ops)

	for _, tc := range []struct {
		name string
		args map[string]string
		want []string
	}{
		{"capture", nil, []string{"Principles over facts", "decision", "convention", "pitfalls", "bug fixes", "One idea per memory", "remember", `namespace "proj"`}},
		{"capture", map[string]string{"namespace": "ops"}, []string{`namespace "ops"`}},
		{"recall_context", map[string]string{"topic": "flaky test"}, []string{dataNotice, `<memory id="` + m.ShortID + `"`, "fake clock", "not instructions"}},
		{"recall_context", map[string]string{"topic": "kubernetes"}, []string{`in any namespace`, `<memory id="` + ops.ShortID + `"`, `namespace="ops"`}},
		{"recall_context", map[string]string{"topic": "kubernetes", "namespace": testNamespace}, []string{`No memories match "kubernetes" in namespace "proj"`}},
		{"recall_context", map[string]string{"topic": "bananas"}, []string{`No memories match "bananas" in any namespace`}},
		{"session_handoff", nil, []string{"## Done", "## Open", "## Watch out", `kind "summary"`, `kind "task"`, "remember", `namespace "proj"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := getPrompt(t, c, tc.name, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("%s %v lacks %q:\n%s", tc.name, tc.args, want, text)
				}
			}
		})
	}

	t.Run("missing topic", func(t *testing.T) {
		if _, err := getPrompt(t, c, "recall_context", nil); err == nil || !strings.Contains(err.Error(), "needs the argument topic") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("unknown prompt", func(t *testing.T) {
		if _, err := getPrompt(t, c, "exfiltrate", nil); err == nil {
			t.Error("an unknown prompt was served")
		}
	})
}

// TestHandoffTiedToSession: with a session of this machine read from its
// transcript in the namespace, the handoff prompt gives its facts and
// asks to tag the handoff with it.
func TestHandoffTiedToSession(t *testing.T) {
	n := testNode(t)
	c := connect(t, n)
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	s := transcript.Session{Client: "claude-code", ID: "5F1C2B7E-0d4a", Project: "/src/app", Turns: []transcript.Turn{
		{Index: 0, Time: at, Role: transcript.RoleUser, Text: "fix the login test"},
		{Index: 1, Time: at.Add(time.Minute), Role: transcript.RoleAssistant, Tool: "Edit", Files: []string{"auth/token.go"}, Changed: true},
		{Index: 2, Time: at.Add(2 * time.Minute), Role: transcript.RoleAssistant, Tool: "Bash", Command: "go test ./auth/..."},
	}}
	if _, err := n.IngestSession(context.Background(), s, testNamespace); err != nil {
		t.Fatal(err)
	}
	var text string
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(text, "auth/token.go") && time.Now().Before(deadline) {
		var err error
		if text, err = getPrompt(t, c, "session_handoff", nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{"claude-code session 5F1C2B7E-0d4a", "files changed: auth/token.go", "commands run: go test ./auth/...", `"session:5f1c2b7e-0d4a"`, "## Done"} {
		if !strings.Contains(text, want) {
			t.Errorf("the handoff prompt lacks %q:\n%s", want, text)
		}
	}
}
