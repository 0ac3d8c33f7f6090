package web

import (
	"context"

	"github.com/memmesh/memmesh/api"
)

// BriefText is a brief as an agent receives it: the text of its format
// (Markdown or JSON) as the CLI, the hook and the MCP tool print it, and
// the tokens of that text, by which the budget was held.
type BriefText struct {
	Namespace string `json:"namespace"`
	Format    string `json:"format"`
	Budget    int    `json:"budget"`
	Tokens    int    `json:"tokens"`
	Text      string `json:"text"`
}

// briefText adapts Context to a call that answers the brief's text.
func briefText(brief func(context.Context, api.ContextRequest) (api.Brief, error)) func(context.Context, api.ContextRequest) (BriefText, error) {
	return func(ctx context.Context, req api.ContextRequest) (BriefText, error) {
		b, err := brief(ctx, req)
		if err != nil {
			return BriefText{}, err
		}
		return BriefText{Namespace: b.Namespace, Format: b.Format, Budget: b.Budget, Tokens: b.Tokens, Text: b.Text()}, nil
	}
}
