package node

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/homescan"
	"github.com/memmesh/memmesh/internal/secrets/secretstest"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/rules"
)

// canaryCase is a sample of the secret corpus made fit for every field: line
// is one line holding the case's first secret, and secrets are the case's
// secrets as they stand in the input and in line.
type canaryCase struct {
	secretstest.Case
	line    string
	secrets []string
}

// canaryCases returns every sample of the secret corpus with the line
// that the one-line fields (title, tags, names, endpoints) receive: the
// input's line that holds the first secret, or the whole input on one
// line when the secret spans lines.
func canaryCases(tb testing.TB) []canaryCase {
	tb.Helper()
	var out []canaryCase
	for _, c := range secretstest.Cases(tb) {
		cc := canaryCase{Case: c, secrets: c.Secrets}
		if strings.Contains(c.Secrets[0], "\n") {
			cc.line = strings.Join(strings.Fields(c.Input), " ")
			for _, s := range c.Secrets {
				cc.secrets = append(cc.secrets, strings.Join(strings.Fields(s), " "))
			}
		} else {
			for _, l := range strings.Split(c.Input, "\n") {
				if strings.Contains(l, c.Secrets[0]) {
					cc.line = strings.TrimSpace(l)
					break
				}
			}
		}
		out = append(out, cc)
	}
	return out
}

// leaked returns the first of secrets that occurs in s, or "".
func leaked(s string, secrets []string) string {
	for _, secret := range secrets {
		if strings.Contains(s, secret) {
			return secret
		}
	}
	return ""
}

// stringsIn returns every string that v holds, however deep.
func stringsIn(v any) []string {
	var out []string
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			out = append(out, v.String())
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Key())
				walk(it.Value())
			}
		}
	}
	walk(reflect.ValueOf(v))
	return out
}

// canary checks the outcome of one call that was given secrets: either it
// was refused with ErrInvalid (or ErrNotFound) in an error that names none
// of them, or it succeeded and what it returned holds none of them. It
// reports whether the call succeeded.
func canary(t *testing.T, c canaryCase, what string, v any, err error) bool {
	t.Helper()
	if err != nil {
		if !errors.Is(err, api.ErrInvalid) && !errors.Is(err, api.ErrNotFound) {
			t.Errorf("%s: %s: %v, want a refusal (ErrInvalid)", c.Name, what, err)
		}
		if s := leaked(err.Error(), c.secrets); s != "" {
			t.Errorf("%s: %s: the error carries the secret %q: %v", c.Name, what, s, err)
		}
		return false
	}
	for _, got := range stringsIn(v) {
		if s := leaked(got, c.secrets); s != "" {
			t.Errorf("%s: %s: the result carries the secret %q in %q", c.Name, what, s, got)
		}
	}
	return true
}

// TestSecretCanary gives every sample of the secret corpus to every field
// a person or agent fills through the real node (content, title, tags,
// namespace, kind, agent, session, update, edge endpoints, notes, relation
// and origin, namespace settings, compaction summary, references), checks
// that nothing returned holds a secret, then closes the node and looks for
// every secret's bytes in every file of the home: Pebble's WAL and tables,
// the search index and the log.
func TestSecretCanary(t *testing.T) {
	t.Parallel()
	cases := canaryCases(t)
	if len(cases) < 40 {
		t.Fatalf("%d secret forms, want at least 40", len(cases))
	}
	if testing.Short() {
		const every = 5
		var some []canaryCase
		for i := 0; i < len(cases); i += every {
			some = append(some, cases[i])
		}
		t.Logf("-short: %d of the %d secret forms (every %dth); ./test tries them all", len(some), len(cases), every)
		cases = some
	}
	home := t.TempDir()
	logFile, err := os.Create(filepath.Join(home, "memmesh.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	n, err := New(Config{Home: home, Logger: slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	all := model.SyncAll
	for _, c := range cases {
		line := c.line
		// The fields that keep text keep it without its secrets.
		res, err := n.Remember(ctx, api.RememberRequest{Namespace: "canary", Content: c.Input})
		if !canary(t, c, "capture content", res, err) {
			t.Fatalf("%s: the content was refused", c.Name)
		}
		m, err := n.Get(ctx, res.ID)
		canary(t, c, "stored memory", m, err)
		short := utf8.RuneCountInString(line) <= api.MaxTitleRunes
		r, err := n.Remember(ctx, api.RememberRequest{Namespace: "canary", Content: "provenance of " + c.Name, Title: line, Agent: line, Session: line})
		if !canary(t, c, "capture title, agent and session", r, err) && short {
			t.Errorf("%s: a one-line title of %d characters was refused: %v", c.Name, len(line), err)
		}
		updated := "Updated: " + c.Input
		u, err := n.Update(ctx, res.ID, api.UpdateRequest{Content: &updated})
		if !canary(t, c, "update content", u, err) {
			t.Errorf("%s: the update was refused", c.Name)
		}
		if short {
			u, err = n.Update(ctx, res.ID, api.UpdateRequest{Title: &line})
			canary(t, c, "update title", u, err)
		}
		if len(line) <= rules.MaxLabelLen {
			again := "Again: " + c.Input
			u, err = n.Update(ctx, res.ID, api.UpdateRequest{Content: &again, Agent: line})
			canary(t, c, "update content as an agent", u, err)
		}
		e, err := n.Link(ctx, api.LinkRequest{From: res.ID, Rel: "touches", To: "url:" + line, Notes: c.Input})
		if !canary(t, c, "link to a url with notes", e, err) {
			t.Errorf("%s: the link was refused", c.Name)
		}
		e, err = n.Link(ctx, api.LinkRequest{From: "file:" + line, Rel: "related_to", To: res.ID})
		canary(t, c, "link from a file", e, err)
		g, err := n.Traverse(ctx, api.TraverseRequest{Start: "url:" + line})
		canary(t, c, "traverse from the url", g, err)
		a := remember(t, n, api.RememberRequest{Namespace: "canary", Content: "first member of " + c.Name})
		b := remember(t, n, api.RememberRequest{Namespace: "canary", Content: "second member of " + c.Name})
		label := line
		if len(label) > rules.MaxLabelLen {
			label = "" // refused, as the capture above was
		}
		sum, err := n.CompactApply(ctx, api.CompactApplyRequest{Members: []string{a.ID, b.ID}, Summary: c.Input, Agent: label, Session: label})
		if !canary(t, c, "compaction summary", sum, err) {
			t.Errorf("%s: the compaction was refused", c.Name)
		}
		if short {
			a = remember(t, n, api.RememberRequest{Namespace: "canary", Content: "third member of " + c.Name})
			b = remember(t, n, api.RememberRequest{Namespace: "canary", Content: "fourth member of " + c.Name})
			sum, err = n.CompactApply(ctx, api.CompactApplyRequest{Members: []string{a.ID, b.ID}, Title: line, Summary: "summary of " + c.Name})
			canary(t, c, "compaction title", sum, err)
		}
		// Names with a strict syntax are refused, without echoing the secret.
		for what, call := range map[string]func() (any, error){
			"tag": func() (any, error) {
				return n.Remember(ctx, api.RememberRequest{Content: "tagged " + c.Name, Tags: []string{line}})
			},
			"added tag": func() (any, error) { return n.Update(ctx, res.ID, api.UpdateRequest{AddTags: []string{line}}) },
			"namespace": func() (any, error) {
				return n.Remember(ctx, api.RememberRequest{Namespace: line, Content: "in " + c.Name})
			},
			"kind": func() (any, error) {
				return n.Remember(ctx, api.RememberRequest{Kind: line, Content: "kind " + c.Name})
			},
			"relation": func() (any, error) { return n.Link(ctx, api.LinkRequest{From: res.ID, Rel: line, To: "file:rel.go"}) },
			"origin": func() (any, error) {
				return n.Link(ctx, api.LinkRequest{From: res.ID, Rel: "related_to", To: "file:origin.go", Origin: line})
			},
			"ns settings":  func() (any, error) { return n.SetNamespace(ctx, line, api.NamespaceChange{Sync: &all}) },
			"reference":    func() (any, error) { return n.Get(ctx, line) },
			"endpoint ref": func() (any, error) { return n.Link(ctx, api.LinkRequest{From: line, Rel: "related_to", To: res.ID}) },
			"search tag":   func() (any, error) { return n.Search(ctx, api.SearchRequest{Query: "member", Tags: []string{line}}) },
		} {
			v, err := call()
			if canary(t, c, what, v, err) {
				t.Errorf("%s: the %s %q was accepted", c.Name, what, line)
			}
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	logFile.Close()
	checkHomeHoldsNoSecret(t, home, cases)
}

// secretNeedles returns what a file holding secret holds: the secret, in
// lower case (the index's terms) and, for a long secret, its last 12 bytes
// when they are random (letters and digits): a compressed block may keep
// only the end of a secret whose start it had already seen literally.
func secretNeedles(secret string) []string {
	out := []string{secret, strings.ToLower(secret)}
	if tail := secret[max(0, len(secret)-12):]; len(secret) >= 24 && strings.ContainsAny(tail, "0123456789") &&
		strings.ContainsAny(tail, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		out = append(out, tail)
	}
	return out
}

// checkHomeHoldsNoSecret reads every file under home and fails for each
// secret found there (see secretNeedles).
func checkHomeHoldsNoSecret(t *testing.T, home string, cases []canaryCase) {
	t.Helper()
	files, err := homescan.Files(home, func(path string, data []byte) {
		for _, c := range cases {
			for _, s := range c.secrets {
				for _, needle := range secretNeedles(s) {
					if bytes.Contains(data, []byte(needle)) {
						t.Errorf("%s: %s holds %q of the secret %q", c.Name, strings.TrimPrefix(path, home), needle, s)
						break
					}
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("looked for %d secrets in %d files", len(cases), files)
}

// TestDeviceNameHoldsNoSecret starts a node with the mesh under device
// names that hold each secret form (--name, MEMMESH_NAME, name in
// config.toml): every one is refused before anything listens, in an error
// that does not echo it.
func TestDeviceNameHoldsNoSecret(t *testing.T) {
	t.Parallel()
	for _, c := range canaryCases(t) {
		n, err := New(Config{Home: t.TempDir(), Mesh: &mesh.Config{Listen: "127.0.0.1:0", Name: c.line}})
		if err == nil {
			err = n.Start(context.Background())
			n.Close()
		}
		if !errors.Is(err, api.ErrInvalid) {
			t.Errorf("%s: device name %q: %v, want ErrInvalid", c.Name, c.line, err)
		} else if s := leaked(err.Error(), c.secrets); s != "" {
			t.Errorf("%s: the error carries the secret %q: %v", c.Name, s, err)
		}
	}
}

// TestEndpointSecretsScrubbedBeforeEdgeID links to an artefact whose URL
// holds a token on two machines: each stores the endpoint without the
// token, both edges have the same id (so they merge into one), and the
// endpoint as given still finds the edge.
func TestEndpointSecretsScrubbedBeforeEdgeID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw := "url:https://git.example.com/acme/api?token=" + logToken
	want := "url:https://git.example.com/acme/api?token=[REDACTED:github-token]"
	var ids []string
	for range 2 {
		n := testNode(t, "")
		e, err := n.Link(ctx, api.LinkRequest{From: "file:internal/api/client.go", Rel: "touches", To: raw, Notes: "mirror " + logToken})
		if err != nil {
			t.Fatal(err)
		}
		if e.To != want || strings.Contains(e.Notes, logToken) {
			t.Fatalf("stored edge %+v, want the endpoint %q and notes without the token", e.Edge, want)
		}
		if e.ID != crdt.EdgeID("file:internal/api/client.go", "touches", want) {
			t.Fatalf("edge id %s is not the hash of the scrubbed endpoints", e.ID)
		}
		found, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{raw}})
		if err != nil || len(found) != 1 || found[0].ID != e.ID {
			t.Fatalf("edges at the endpoint as given: %v, %v", found, err)
		}
		ids = append(ids, e.ID)
	}
	if ids[0] != ids[1] {
		t.Fatalf("the same edge has ids %s and %s on two machines", ids[0], ids[1])
	}
}
