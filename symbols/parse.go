// Package symbols finds the definitions in source files (functions, types,
// classes, structs, traits, interfaces and methods, each with its line)
// and keeps an incremental index of a working tree's definitions.
//
// Go files are read by go/parser, the language's own parser. Python,
// JavaScript, TypeScript (and TSX) and Rust files are read by tree-sitter
// with the queries in queries/, written in the style of the tags queries
// the grammars ship: each pattern captures a definition as
// @definition.KIND and its name as @name. Tree-sitter recovers from syntax
// errors, so a file that does not parse whole still gives the definitions
// it holds.
//
// The index (index.go) stores what it found as local data of the node
// that runs it (never replicated): one entry per file with its content
// hash and its symbols, and one key per symbol name, so that a lookup by
// name or prefix is one ordered scan.
package symbols

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/python"
	"github.com/smacker/go-tree-sitter/rust"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"

	"github.com/memmesh/memmesh/api"
)

// Kinds of symbol.
const (
	KindFunction  = "function"
	KindMethod    = "method"
	KindClass     = "class"
	KindStruct    = "struct"
	KindInterface = "interface"
	KindTrait     = "trait"
	KindEnum      = "enum"
	KindType      = "type"
)

// MaxNameLen caps a symbol's name (and its qualified name) in bytes;
// longer ones are skipped.
const MaxNameLen = 256

// ParseTimeout bounds the parse of one file.
const ParseTimeout = 5 * time.Second

// Symbol is one definition in a file.
type Symbol = api.Symbol

// Language returns the language of a file by its name ("go", "python",
// "javascript", "typescript", "tsx", "rust"), or "" when it is none of
// those.
func Language(name string) string {
	switch path.Ext(name) {
	case ".go":
		return "go"
	case ".py", ".pyi":
		return "python"
	case ".js", ".mjs", ".cjs", ".jsx":
		return "javascript"
	case ".ts", ".mts", ".cts":
		return "typescript"
	case ".tsx":
		return "tsx"
	case ".rs":
		return "rust"
	}
	return ""
}

// ErrLanguage means a file is in no language Parse reads.
var ErrLanguage = errors.New("symbols: not a Go, Python, JavaScript, TypeScript or Rust file")

// Parser reads files' symbols. It holds one tree-sitter parser per
// language, so it is for one goroutine at a time; Close releases them.
type Parser struct {
	trees map[string]*sitter.Parser
	// Parses counts the files parsed, for tests and progress.
	Parses int
}

// NewParser returns a Parser.
func NewParser() *Parser { return &Parser{trees: map[string]*sitter.Parser{}} }

// Close releases the parser's tree-sitter parsers.
func (p *Parser) Close() {
	for _, tp := range p.trees {
		tp.Close()
	}
	p.trees = map[string]*sitter.Parser{}
}

// Parse returns the symbols defined in src, a file called name, in the
// order of their lines. A file with syntax errors gives what parses.
func (p *Parser) Parse(ctx context.Context, name string, src []byte) ([]Symbol, error) {
	lang := Language(name)
	if lang == "" {
		return nil, fmt.Errorf("%s: %w", name, ErrLanguage)
	}
	p.Parses++
	if lang == "go" {
		out := parseGo(name, src)
		sortSymbols(out)
		return out, nil
	}
	g, err := grammarOf(lang)
	if err != nil {
		return nil, err
	}
	tp := p.trees[lang]
	if tp == nil {
		tp = sitter.NewParser()
		tp.SetLanguage(g.lang)
		// The parse is bounded by tree-sitter's own clock, not by a
		// context: the binding watches a context from a goroutine that
		// can set the parser's cancellation flag after the parse ended,
		// and every later parse then fails at once.
		tp.SetOperationLimit(int(ParseTimeout.Microseconds()))
		p.trees[lang] = tp
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tree, err := tp.ParseCtx(context.Background(), nil, src)
	if err != nil {
		tp.Reset()
		return nil, fmt.Errorf("%s: parse: %w (it took over %v)", name, err, ParseTimeout)
	}
	defer tree.Close()
	out := g.symbols(tree.RootNode(), src)
	sortSymbols(out)
	return out, nil
}

// sortSymbols orders symbols by line, then by qualified name.
func sortSymbols(s []Symbol) {
	slices.SortFunc(s, func(a, b Symbol) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Qualified(), b.Qualified()), cmp.Compare(a.Kind, b.Kind))
	})
}

// parseGo reads a Go file's functions, methods and types with go/parser.
// A file with syntax errors gives the declarations before the error.
func parseGo(name string, src []byte) []Symbol {
	fset := token.NewFileSet()
	f, _ := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if f == nil {
		return nil
	}
	var out []Symbol
	add := func(s Symbol, pos token.Pos) {
		s.Line = fset.Position(pos).Line
		if valid(s) {
			out = append(out, s)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			s := Symbol{Name: d.Name.Name, Kind: KindFunction}
			if d.Recv != nil && len(d.Recv.List) == 1 {
				if recv := receiverType(d.Recv.List[0].Type); recv != "" {
					s.Kind, s.Qual = KindMethod, recv+"."+s.Name
				}
			}
			add(s, d.Name.Pos())
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				continue
			}
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				kind := KindType
				switch ts.Type.(type) {
				case *ast.StructType:
					kind = KindStruct
				case *ast.InterfaceType:
					kind = KindInterface
				}
				add(Symbol{Name: ts.Name.Name, Kind: kind}, ts.Name.Pos())
			}
		}
	}
	return out
}

// receiverType is the type name of a method's receiver: T, *T, T[K], *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// valid holds a symbol's names to one line of bounded length.
func valid(s Symbol) bool {
	for _, n := range []string{s.Name, s.Qual} {
		if len(n) > MaxNameLen || strings.ContainsAny(n, "\x00\n\r") {
			return false
		}
	}
	return s.Name != ""
}

//go:embed queries/*.scm
var queryFiles embed.FS

// grammar is a tree-sitter language with its compiled definitions query.
type grammar struct {
	lang  *sitter.Language
	query *sitter.Query
	// containers are the node types whose name qualifies the functions
	// defined directly in them (as methods), with the field that holds
	// their name.
	containers map[string]string
	// scopes are the node types that end the search for a container: a
	// function defined in a function is no method.
	scopes map[string]bool
}

var (
	grammarsOnce sync.Once
	grammars     map[string]*grammar
	grammarsErr  error
)

// grammarOf returns the grammar of a language, compiling every query the
// first time.
func grammarOf(lang string) (*grammar, error) {
	grammarsOnce.Do(func() {
		jsScopes := map[string]bool{"function_declaration": true, "function_expression": true, "function": true,
			"arrow_function": true, "method_definition": true, "generator_function_declaration": true}
		classes := map[string]string{"class_declaration": "name", "class": "name", "abstract_class_declaration": "name",
			"interface_declaration": "name"}
		defs := map[string]struct {
			lang       *sitter.Language
			query      string
			containers map[string]string
			scopes     map[string]bool
		}{
			"python":     {python.GetLanguage(), "python.scm", map[string]string{"class_definition": "name"}, map[string]bool{"function_definition": true, "lambda": true}},
			"javascript": {javascript.GetLanguage(), "javascript.scm", classes, jsScopes},
			"typescript": {typescript.GetLanguage(), "typescript.scm", classes, jsScopes},
			"tsx":        {tsx.GetLanguage(), "typescript.scm", classes, jsScopes},
			"rust":       {rust.GetLanguage(), "rust.scm", map[string]string{"impl_item": "type", "trait_item": "name"}, map[string]bool{"function_item": true, "closure_expression": true}},
		}
		grammars = map[string]*grammar{}
		for name, d := range defs {
			src, err := queryFiles.ReadFile("queries/" + d.query)
			if err != nil {
				grammarsErr = err
				return
			}
			q, err := sitter.NewQuery(src, d.lang)
			if err != nil {
				grammarsErr = fmt.Errorf("symbols: query of %s: %w", name, err)
				return
			}
			grammars[name] = &grammar{lang: d.lang, query: q, containers: d.containers, scopes: d.scopes}
		}
	})
	if grammarsErr != nil {
		return nil, grammarsErr
	}
	return grammars[lang], nil
}

// symbols runs the grammar's query over a parsed file.
func (g *grammar) symbols(root *sitter.Node, src []byte) []Symbol {
	qc := sitter.NewQueryCursor()
	defer qc.Close()
	qc.Exec(g.query, root)
	var out []Symbol
	for {
		m, ok := qc.NextMatch()
		if !ok {
			break
		}
		var name, def *sitter.Node
		kind := ""
		for _, c := range m.Captures {
			capture := g.query.CaptureNameForId(c.Index)
			if capture == "name" {
				name = c.Node
			} else if k, ok := strings.CutPrefix(capture, "definition."); ok {
				def, kind = c.Node, k
			}
		}
		if name == nil || def == nil {
			continue
		}
		s := Symbol{Name: name.Content(src), Kind: kind, Line: int(name.StartPoint().Row) + 1}
		if s.Kind == KindFunction || s.Kind == KindMethod {
			if owner := g.owner(def, src); owner != "" {
				s.Kind, s.Qual = KindMethod, owner+"."+s.Name
			}
		}
		if valid(s) {
			out = append(out, s)
		}
	}
	return out
}

// owner returns the name of the class, impl or trait a function is
// defined in directly, or "".
func (g *grammar) owner(def *sitter.Node, src []byte) string {
	for n := def.Parent(); n != nil; n = n.Parent() {
		if field, ok := g.containers[n.Type()]; ok {
			name := n.ChildByFieldName(field)
			if name == nil {
				return ""
			}
			return typeName(name, src)
		}
		if g.scopes[n.Type()] {
			return ""
		}
	}
	return ""
}

// typeName is the bare name of a type node: Vec for Vec<T>, Store for
// crate::store::Store, &Store and *const Store, Handler for dyn Handler.
func typeName(n *sitter.Node, src []byte) string {
	switch n.Type() {
	case "generic_type", "reference_type", "pointer_type":
		if t := n.ChildByFieldName("type"); t != nil {
			return typeName(t, src)
		}
	case "dynamic_type":
		if t := n.ChildByFieldName("trait"); t != nil {
			return typeName(t, src)
		}
	case "scoped_type_identifier":
		if t := n.ChildByFieldName("name"); t != nil {
			return typeName(t, src)
		}
	}
	return n.Content(src)
}
