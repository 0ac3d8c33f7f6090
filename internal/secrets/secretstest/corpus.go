// Package secretstest holds the corpus of fake secrets and of benign
// text that the tests of the scrubber, and of every place that must store
// no secret, share.
package secretstest

import (
	"embed"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

//go:embed testdata
var corpus embed.FS

// Secret corpus format: testdata/secrets/<kind>.txt holds cases separated by
// lines of "%%"; every secret in a case is written between ⟪ and ⟫. The
// scrubbed case must equal the case with each ⟪secret⟫ replaced by
// "[REDACTED:<kind>]", and report exactly that kind. Every value there is
// fake: correctly shaped, never issued.
const (
	caseSeparator = "\n%%\n"
	secretOpen    = "⟪"
	secretClose   = "⟫"
)

// Case is one sample of the secret corpus.
type Case struct {
	Name    string
	Kind    string
	Input   string
	Want    string // Input with each secret replaced by "[REDACTED:<kind>]"
	Secrets []string
}

// Cases returns every sample of the secret corpus.
func Cases(tb testing.TB) []Case {
	tb.Helper()
	files, err := fs.Glob(corpus, "testdata/secrets/*.txt")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no secret corpus: %v", err)
	}
	var cases []Case
	for _, file := range files {
		data, err := corpus.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		kind := strings.TrimSuffix(filepath.Base(file), ".txt")
		for i, text := range strings.Split(strings.TrimSuffix(string(data), "\n"), caseSeparator) {
			c := Case{Name: fmt.Sprintf("%s/%d", kind, i+1), Kind: kind}
			var in, want strings.Builder
			for {
				before, rest, found := strings.Cut(text, secretOpen)
				in.WriteString(before)
				want.WriteString(before)
				if !found {
					break
				}
				secret, after, ok := strings.Cut(rest, secretClose)
				if !ok {
					tb.Fatalf("%s: unclosed %s", c.Name, secretOpen)
				}
				in.WriteString(secret)
				want.WriteString("[REDACTED:" + kind + "]")
				c.Secrets = append(c.Secrets, secret)
				text = after
			}
			if len(c.Secrets) == 0 {
				tb.Fatalf("%s: no secret marked", c.Name)
			}
			c.Input, c.Want = in.String(), want.String()
			cases = append(cases, c)
		}
	}
	return cases
}

// Benign returns the texts of the benign corpus by file name: text that
// holds no secret, though parts of it look like one.
func Benign(tb testing.TB) map[string]string {
	tb.Helper()
	files, err := fs.Glob(corpus, "testdata/benign/*.md")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no benign corpus: %v", err)
	}
	texts := make(map[string]string)
	for _, file := range files {
		data, err := corpus.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		texts[filepath.Base(file)] = string(data)
	}
	return texts
}
