package mcp

import (
	"context"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/memmesh/memmesh/internal/inert"
)

// inertOptions make every text the server gives an agent inert (see
// package inert), at the one place each kind of answer passes: tool
// results' text, resources' text (JSON escaped, so it stays the same
// value), prompt messages, and the errors of all three. Structured content
// is left exact: it is JSON, whose encoder escapes control characters.
func inertOptions() []server.ServerOption {
	return []server.ServerOption{
		server.WithToolHandlerMiddleware(inertTool),
		server.WithResourceHandlerMiddleware(inertResource),
		server.WithPromptHandlerMiddleware(inertPrompt),
	}
}

func inertTool(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := next(ctx, req)
		if res != nil {
			for i, c := range res.Content {
				res.Content[i] = inertContent(c)
			}
		}
		return res, inertError(err)
	}
}

func inertResource(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
		contents, err := next(ctx, req)
		for i, c := range contents {
			if text, ok := c.(mcpgo.TextResourceContents); ok {
				if text.MIMEType == jsonMIME {
					text.Text = string(inert.JSON([]byte(text.Text)))
				} else {
					text.Text = inert.Text(text.Text)
				}
				contents[i] = text
			}
		}
		return contents, inertError(err)
	}
}

func inertPrompt(next server.PromptHandlerFunc) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
		res, err := next(ctx, req)
		if res != nil {
			res.Description = inert.Text(res.Description)
			for i := range res.Messages {
				res.Messages[i].Content = inertContent(res.Messages[i].Content)
			}
		}
		return res, inertError(err)
	}
}

// inertContent makes text content inert; other content is not text.
func inertContent(c mcpgo.Content) mcpgo.Content {
	if text, ok := c.(mcpgo.TextContent); ok {
		text.Text = inert.Text(text.Text)
		return text
	}
	return c
}

// inertErr is an error whose message is inert; it unwraps to the error it
// stands for, so that errors.Is still finds what it wraps.
type inertErr struct{ err error }

func (e inertErr) Error() string { return inert.Text(e.err.Error()) }
func (e inertErr) Unwrap() error { return e.err }

func inertError(err error) error {
	if err == nil {
		return nil
	}
	return inertErr{err}
}
