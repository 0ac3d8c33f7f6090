package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// exampleID finds what looks like a memory id in documentation.
var exampleID = regexp.MustCompile(`\bm-[0-9a-z]{4,}\b`)

// validID is the form of a memory id: base32 letters a-z and digits 2-7.
var validID = regexp.MustCompile(`^m-[a-z2-7]{4,26}$`)

// TestExampleIDsAreValid checks every memory id that the README and the
// help texts show: an example that the id syntax refuses teaches nothing.
func TestExampleIDsAreValid(t *testing.T) {
	var texts []string
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, string(readme))
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		texts = append(texts, c.Short, c.Long, c.Example)
		c.Flags().VisitAll(func(f *pflag.Flag) { texts = append(texts, f.Usage) })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).rootCommand())
	seen := 0
	for _, text := range texts {
		for _, id := range exampleID.FindAllString(text, -1) {
			seen++
			if !validID.MatchString(id) {
				t.Errorf("example id %s is not a valid memory id (ids use a-z and 2-7): in %q", id, firstLine(text, id))
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found only %d example ids: the test reads the wrong texts", seen)
	}
}

func firstLine(text, part string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, part) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// TestMCPHelpListsEveryTool: `memmesh mcp --help` names every tool of
// both profiles with a summary.
func TestMCPHelpListsEveryTool(t *testing.T) {
	root := (&app{}).rootCommand()
	var help strings.Builder
	root.SetOut(&help)
	root.SetArgs([]string{"mcp", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{
		"remember", "recall", "get", "update", "forget", "context", "link", "traverse", "review", "compact_apply", "status",
		"create_entities", "create_relations", "add_observations", "delete_entities", "delete_observations",
		"delete_relations", "read_graph", "search_nodes", "open_nodes",
	} {
		line := regexp.MustCompile(`(?m)^  ` + tool + ` +\S.*$`)
		if !line.MatchString(help.String()) {
			t.Errorf("mcp --help lists no %s with a summary:\n%s", tool, help.String())
		}
	}
}
