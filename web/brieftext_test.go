package web

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/tokens"
)

// The brief's text is what an agent reads: the text the CLI prints from
// the same brief, with the tokens counted on it, in either format.
func TestBriefTextIsWhatAnAgentReads(t *testing.T) {
	c, _, sock := testAPI(t)
	ctx := context.Background()
	for _, content := range []string{"the pool holds 20 connections", "deploys go through the staging cluster first"} {
		if _, err := c.Remember(ctx, api.RememberRequest{Namespace: "proj", Content: content, Kind: "decision"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, format := range []string{api.FormatMarkdown, api.FormatJSON} {
		req := api.ContextRequest{Namespace: "proj", Budget: 500, Format: format}
		want, err := c.Context(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(req)
		status, out := raw(t, sock, http.MethodPost, "/v1/context/text", string(body))
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", format, status, out)
		}
		var got BriefText
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		// The brief's LoadedAt differs between the two calls: compare the
		// texts without it.
		if stripLoaded(got.Text) != stripLoaded(want.Text()) {
			t.Errorf("%s: text\n%s\nwant\n%s", format, got.Text, want.Text())
		}
		if !strings.Contains(got.Text, "staging cluster") {
			t.Errorf("%s: the brief lacks a memory:\n%s", format, got.Text)
		}
		if got.Tokens != tokens.Count(got.Text) || got.Tokens == 0 {
			t.Errorf("%s: tokens %d, the text has %d", format, got.Tokens, tokens.Count(got.Text))
		}
		if got.Format != format || got.Namespace != "proj" || got.Budget != 500 {
			t.Errorf("%s: %+v", format, got)
		}
	}
	if status, _ := raw(t, sock, http.MethodPost, "/v1/context/text", `{"budget":"many"}`); status != http.StatusBadRequest {
		t.Errorf("a bad request: status %d", status)
	}
}

// loadedAt matches when a brief was loaded, in either format.
var loadedAt = regexp.MustCompile(`Loaded [^;]*;|"loaded_at":"[^"]*"`)

func stripLoaded(s string) string { return loadedAt.ReplaceAllString(s, "LOADED") }
