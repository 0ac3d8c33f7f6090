package symbols

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// sym is a symbol in a test's expectations.
func sym(kind, name, qual string, line int) Symbol {
	return Symbol{Name: name, Qual: qual, Kind: kind, Line: line}
}

func TestParseFixtures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []Symbol
	}{
		{"go/auth.go", []Symbol{
			sym(KindStruct, "Token", "", 6),
			sym(KindInterface, "Validator", "", 11),
			sym(KindType, "Claims", "", 15),
			sym(KindStruct, "Store", "", 17),
			sym(KindFunction, "ValidateToken", "", 20),
			sym(KindMethod, "Refresh", "Token.Refresh", 27),
			sym(KindMethod, "Get", "Store.Get", 29),
		}},
		{"python/auth.py", []Symbol{
			sym(KindClass, "TokenStore", "", 4),
			sym(KindMethod, "__init__", "TokenStore.__init__", 7),
			sym(KindMethod, "lookup", "TokenStore.lookup", 11),
			sym(KindFunction, "helper", "", 12),
			sym(KindFunction, "validate_token", "", 17),
			sym(KindFunction, "refresh", "", 21),
		}},
		{"python/broken.py", []Symbol{
			sym(KindFunction, "before_the_error", "", 1),
			sym(KindFunction, "broken", "", 4), // the header is broken, the name is there
			sym(KindClass, "AfterTheError", "", 7),
			sym(KindMethod, "still_found", "AfterTheError.still_found", 8),
		}},
		{"typescript/auth.ts", []Symbol{
			sym(KindInterface, "Validator", "", 1),
			sym(KindMethod, "validate", "Validator.validate", 2),
			sym(KindType, "Claims", "", 5),
			sym(KindEnum, "Scope", "", 7),
			sym(KindClass, "TokenService", "", 12),
			sym(KindMethod, "validate", "TokenService.validate", 15),
			sym(KindMethod, "refresh", "TokenService.refresh", 19),
			sym(KindClass, "Base", "", 22),
			sym(KindMethod, "check", "Base.check", 23),
			sym(KindFunction, "validateToken", "", 26),
			sym(KindFunction, "parseClaims", "", 30),
		}},
		{"typescript/view.tsx", []Symbol{
			sym(KindFunction, "TokenBadge", "", 1),
			sym(KindClass, "Panel", "", 5),
			sym(KindMethod, "render", "Panel.render", 6),
		}},
		{"javascript/auth.js", []Symbol{
			sym(KindClass, "Session", "", 1),
			sym(KindMethod, "constructor", "Session.constructor", 2),
			sym(KindMethod, "expire", "Session.expire", 6),
			sym(KindFunction, "inner", "", 7),
			sym(KindFunction, "validateToken", "", 12),
			sym(KindFunction, "tokens", "", 16),
			sym(KindFunction, "hashToken", "", 20),
		}},
		{"rust/lib.rs", []Symbol{
			sym(KindStruct, "Token", "", 1),
			sym(KindEnum, "Scope", "", 5),
			sym(KindTrait, "Validator", "", 10),
			sym(KindMethod, "validate", "Validator.validate", 11),
			sym(KindType, "Claims", "", 14),
			sym(KindMethod, "new", "Token.new", 17),
			sym(KindMethod, "validate", "Token.validate", 23),
			sym(KindMethod, "unwrap_it", "Wrapper.unwrap_it", 29),
			sym(KindStruct, "Wrapper", "", 34),
			sym(KindFunction, "validate_token", "", 36),
			sym(KindFunction, "helper", "", 37),
			sym(KindMethod, "validate", "Wrapper.validate", 44),
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			p := NewParser()
			defer p.Close()
			got, err := p.Parse(context.Background(), tc.file, src)
			if err != nil {
				t.Fatal(err)
			}
			sortSymbols(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("symbols of %s:\n got %v\nwant %v", tc.file, got, tc.want)
			}
		})
	}
}

// TestParseGoSyntaxError: a Go file cut short keeps the declarations
// before the error, and the one it breaks in.
func TestParseGoSyntaxError(t *testing.T) {
	p := NewParser()
	defer p.Close()
	got, err := p.Parse(context.Background(), "broken.go", []byte("package auth\n\nfunc BeforeTheError() {}\n\nfunc broken( {\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Symbol{sym(KindFunction, "BeforeTheError", "", 3), sym(KindFunction, "broken", "", 5)}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseOtherLanguage(t *testing.T) {
	p := NewParser()
	defer p.Close()
	if _, err := p.Parse(context.Background(), "README.md", []byte("# hi")); !errors.Is(err, ErrLanguage) {
		t.Errorf("Parse of a Markdown file: %v, want ErrLanguage", err)
	}
}

// TestParserReuse: one parser reads file after file. (A parse bounded by a
// context whose end reached the parser after the parse left its
// cancellation flag set, so that later parses failed at once.)
func TestParserReuse(t *testing.T) {
	dir := t.TempDir()
	if _, err := generateTree(dir, 20_000, 1); err != nil {
		t.Fatal(err)
	}
	p := NewParser()
	defer p.Close()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		got, err := p.Parse(context.Background(), path, src)
		if err != nil || len(got) == 0 {
			t.Errorf("parse %s: %d symbols, %v", path, len(got), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
