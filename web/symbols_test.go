package web

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/memmesh/memmesh/api"
)

func TestSymbolsOverTheAPI(t *testing.T) {
	ctx := context.Background()
	c, _, _ := testAPI(t)
	dir := t.TempDir()
	for name, text := range map[string]string{"a.go": "package a\n\nfunc Alpha() {}\n", "b.py": "def beta():\n    pass\n", "c.rs": "fn gamma() {}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var seen []api.SymbolsProgress
	rep, err := c.IndexSymbols(ctx, api.SymbolsIndexRequest{Dir: dir, Namespace: "app"}, func(p api.SymbolsProgress) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Root != dir || rep.Files != 3 || rep.Symbols != 3 || rep.Namespace != "app" {
		t.Errorf("report %+v", rep)
	}
	if len(seen) == 0 || seen[len(seen)-1] != (api.SymbolsProgress{Done: 3, Total: 3, Parsed: 3}) {
		t.Errorf("progress %+v, want it to end at 3 of 3", seen)
	}
	got, err := c.Symbols(ctx, api.SymbolsRequest{Query: "alp"})
	if err != nil || len(got) != 1 || got[0].File != "a.go" || got[0].Line != 3 {
		t.Errorf("Symbols(alp) = %+v, %v", got, err)
	}
	trees, err := c.SymbolTrees(ctx)
	if err != nil || len(trees) != 1 || trees[0].Files != 3 {
		t.Errorf("SymbolTrees = %+v, %v", trees, err)
	}
	// Refused before any progress: an ordinary error answer.
	if _, err := c.IndexSymbols(ctx, api.SymbolsIndexRequest{Dir: filepath.Join(dir, "missing")}, nil); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("index of a missing directory: %v, want ErrInvalid", err)
	}
	if _, err := c.Symbols(ctx, api.SymbolsRequest{Query: ""}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("empty query: %v, want ErrInvalid", err)
	}
}
