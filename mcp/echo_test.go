package mcp

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/memmesh/memmesh/api"
)

// maxErrorText bounds the text of an error result: what a tool says of
// its arguments quotes each as a short excerpt.
const maxErrorText = 2048

// TestErrorsQuoteExcerpts calls every tool with each of its string
// arguments (and each string of its array arguments) 60 KB long, and with
// an unknown argument of a 60 KB name: every error quotes an excerpt, not
// the whole argument, and no secret.
func TestErrorsQuoteExcerpts(t *testing.T) {
	n := testNode(t)
	ctx := context.Background()
	kept, err := n.Remember(ctx, api.RememberRequest{Namespace: testNamespace, Content: "a memory to point at"})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, n)
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"
	huge := secret + " " + strings.Repeat("!x", 30<<10)
	errors := 0
	check := func(tool, arg string, args map[string]any) {
		t.Helper()
		res := callTool(t, c, tool, args)
		text := resultText(res)
		if !res.IsError {
			return
		}
		errors++
		if len(text) > maxErrorText || strings.Contains(text, strings.Repeat("!x", 200)) || strings.Contains(text, secret) {
			t.Errorf("%s with a 60 KB %s: an error of %d bytes: %.300q", tool, arg, len(text), text)
		}
	}
	for _, tool := range tools.Tools {
		for _, name := range slices.Sorted(maps.Keys(tool.InputSchema.Properties)) {
			prop, _ := tool.InputSchema.Properties[name].(map[string]any)
			args := map[string]any{}
			for _, req := range tool.InputSchema.Required {
				args[req] = kept.ID
			}
			switch prop["type"] {
			case "string":
				args[name] = huge
			case "array":
				args[name] = []any{huge}
			default:
				continue
			}
			check(tool.Name, name, args)
		}
		check(tool.Name, "argument name", map[string]any{huge: 1})
		many := map[string]any{}
		for i := range 2000 {
			many[strings.Repeat("y", i%40+1)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = 1
		}
		check(tool.Name, "set of 2000 argument names", many)
	}
	if errors < 20 {
		t.Fatalf("only %d calls failed: the arguments are not hostile enough", errors)
	}

	// Prompts and resources.
	var prompt mcpgo.GetPromptRequest
	prompt.Params.Name, prompt.Params.Arguments = "recall_context", map[string]string{"topic": huge}
	_, perr := c.GetPrompt(ctx, prompt)
	var resource mcpgo.ReadResourceRequest
	// (A URI that matches no template is mcp-go's to answer.)
	resource.Params.URI = memoryURIPrefix + "m-" + strings.Repeat("a", 60<<10)
	_, rerr := c.ReadResource(ctx, resource)
	for what, err := range map[string]error{"prompt recall_context": perr, "resource memory": rerr} {
		if err == nil || len(err.Error()) > maxErrorText || strings.Contains(err.Error(), secret) {
			t.Errorf("%s with a 60 KB argument: %.300v (%d bytes)", what, err, len(fmt.Sprint(err)))
		}
	}
}
