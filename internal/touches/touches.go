// Package touches finds what a memory's text touches: the files, URLs,
// packages and symbols it names, as entity strings that link memories to
// code (pure, no I/O).
package touches

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

const (
	// maxTouches caps the entities Extract returns for one text.
	maxTouches = 64
	// maxTouchLen caps the length of one entity in bytes.
	maxTouchLen = 256
)

// touchKinds are the entity prefixes, in the order Extract keeps
// entities when a text names more than maxTouches.
var touchKinds = []string{"file:", "pkg:", "code:", "url:"}

// Patterns and word lists Extract recognises entities by.
var (
	// touchURLPattern matches an http(s) URL; addURL drops trailing
	// punctuation.
	touchURLPattern = regexp.MustCompile("https?://[^\\s<>\"'`]+")
	// fencePattern matches a fenced code block; submatch 1 is the code.
	fencePattern = regexp.MustCompile("(?s)```[^\\n]*\\n(.*?)(?:```|$)")
	// inlineCodePattern matches an `inline code` span; submatch 1 is the code.
	inlineCodePattern = regexp.MustCompile("`([^`\\n]+)`")
	// goImportPattern matches import "path" and import name "path".
	goImportPattern = regexp.MustCompile(`import[ \t]+(?:[A-Za-z_.][A-Za-z0-9_]*[ \t]+)?"([^"\s]+)"`)
	// goImportBlockPattern matches import ( ... ); submatch 1 is the body,
	// whose quoted strings are the paths.
	goImportBlockPattern = regexp.MustCompile(`import[ \t]*\(([^)]*)\)`)
	// quotedPattern matches a "quoted" word; submatch 1 is the word.
	quotedPattern = regexp.MustCompile(`"([^"\s]+)"`)
	// importPathPattern is the shape of a Go import path.
	importPathPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.~+-]*(?:/[A-Za-z0-9_.~+-]+)*$`)
	// lineSuffixPattern matches the line (and column or range) or anchor
	// after a path: main.go:42, main.go:42:7, app.ts#L10-L20, README.md#usage.
	lineSuffixPattern = regexp.MustCompile(`(?::\d+(?:[:-]\d+)?|#[A-Za-z0-9_-]*)$`)
	// pathPattern is the shape of a relative or absolute file path.
	pathPattern = regexp.MustCompile(`^(?:~/|/|\.\./)?[A-Za-z0-9_.@+-]+(?:/[A-Za-z0-9_.@+-]+)*/?$`)
	// symbolPattern matches identifiers, qualified names and calls:
	// parseConfig(), Store.Commit, http.Handler, Vec::new(), (*Node).Close.
	// Submatch 1 is a method's receiver type, 2 the name, 3 the call.
	symbolPattern = regexp.MustCompile(`^(?:\(\*?([A-Za-z_]\w*)\)\.)?([A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*)(\(.*\))?$`)
	// npmNamePattern is an npm package argument: name or @scope/name, with
	// an optional @version (submatch 1 is the name).
	npmNamePattern = regexp.MustCompile(`^((?:@[a-z0-9~-][a-z0-9._~-]*/)?[a-z0-9~-][a-z0-9._~-]*)(?:@[^@/]*)?$`)
	// pipNamePattern is a pip requirement: name, optional [extras] and
	// version specifier (submatch 1 is the name).
	pipNamePattern = regexp.MustCompile(`^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:\[[^\]]*\])?(?:[=<>!~;@].*)?$`)
	// cargoNamePattern is a crate argument with an optional @version.
	cargoNamePattern = regexp.MustCompile(`^([A-Za-z0-9_-]+)(?:@\S+)?$`)
	// pipSeparators are the runs PEP 503 folds into one '-'.
	pipSeparators = regexp.MustCompile(`[-_.]+`)

	// fileExts are the extensions that make a word a file name.
	fileExts = stringSet(`go rs py pyi ipynb rb js mjs cjs jsx ts mts cts tsx java kt kts scala swift
		c h cc cpp cxx hpp hh cs php lua dart exs erl hrl hs ml mli clj cljs jl zig nim
		sh bash zsh fish ps1 bat sql graphql gql proto thrift md mdx markdown rst adoc txt
		json jsonc json5 ndjson yaml yml toml ini conf xml xsd html htm css scss sass less
		vue svelte astro tf tfvars hcl nix gradle cmake mk csv tsv parquet svg png jpg jpeg
		gif webp ico pdf wasm tmpl tpl gohtml j2 jinja erb pem crt sqlite zip gz tgz tar
		whl vim sol elm hbs ejs pug csproj sln plist dockerfile`)
	// dirExts are extensions that make a file name only in a path with a
	// directory: console.log, process.env and mu.lock are code.
	dirExts = stringSet(`log env lock cfg db properties patch diff`)
	// fileNames are file names without (or beyond) a known extension.
	fileNames = stringSet(`Makefile makefile GNUmakefile Dockerfile Containerfile Jenkinsfile
		Procfile Gemfile Rakefile Vagrantfile Brewfile Justfile justfile Tiltfile Caddyfile
		CODEOWNERS go.mod go.sum go.work yarn.lock Cargo.lock poetry.lock Gemfile.lock
		flake.lock composer.lock Pipfile.lock uv.lock .env .gitignore .gitattributes
		.gitmodules .dockerignore .editorconfig .npmrc .nvmrc .yarnrc .bashrc .zshrc
		.profile .prettierrc .eslintrc .babelrc`)
	// notFileNames are names (lower case) written like files that name a
	// project or site: Node.js, docs.rs.
	notFileNames = stringSet(`node.js vue.js react.js next.js nuxt.js express.js angular.js
		ember.js backbone.js alpine.js three.js chart.js d3.js moment.js day.js p5.js
		knockout.js preact.js meteor.js docs.rs rustup.rs brew.sh bun.sh`)
	// moduleHosts are the hosts of Go module paths; gitHosts also serve
	// owner/repo web pages below the module path.
	moduleHosts = stringSet(`github.com gitlab.com bitbucket.org codeberg.org git.sr.ht
		golang.org google.golang.org gopkg.in go.uber.org go.etcd.io go.opentelemetry.io
		go.mongodb.org k8s.io sigs.k8s.io cloud.google.com honnef.co modernc.org mvdan.cc
		filippo.io gioui.org rsc.io gotest.tools gorm.io entgo.io connectrpc.com buf.build
		tailscale.com nhooyr.io gocloud.dev`)
	gitHosts = stringSet(`github.com gitlab.com bitbucket.org codeberg.org`)
	// repoPages are the path elements after owner/repo that name a web page
	// rather than a package: github.com/o/r/issues/1 is github.com/o/r.
	repoPages = stringSet(`blob tree raw issues pull pulls commit commits compare releases
		actions wiki -`)
	// domainEnds are top-level domains, so that `example.com` is no symbol.
	domainEnds = stringSet(`com org net io dev app ai co sh me cc info edu gov`)
)

// installCommand is a package manager command whose arguments are packages.
type installCommand struct {
	words []string
	name  func(arg string) string // the package an argument names, or ""
}

// installCommands are the commands Extract reads packages from in
// code (fenced blocks and inline code).
var installCommands = []installCommand{
	{[]string{"npm", "install"}, npmName}, {[]string{"npm", "i"}, npmName}, {[]string{"npm", "add"}, npmName},
	{[]string{"pnpm", "add"}, npmName}, {[]string{"pnpm", "install"}, npmName}, {[]string{"pnpm", "i"}, npmName},
	{[]string{"yarn", "add"}, npmName}, {[]string{"yarn", "global", "add"}, npmName},
	{[]string{"bun", "add"}, npmName}, {[]string{"bun", "install"}, npmName}, {[]string{"bun", "i"}, npmName},
	{[]string{"pip", "install"}, pipName}, {[]string{"pip3", "install"}, pipName}, {[]string{"pipx", "install"}, pipName},
	{[]string{"uv", "add"}, pipName}, {[]string{"uv", "pip", "install"}, pipName}, {[]string{"poetry", "add"}, pipName},
	{[]string{"cargo", "add"}, cargoName}, {[]string{"cargo", "install"}, cargoName},
}

// valueFlags are install command options whose value is the next argument.
var valueFlags = stringSet(`-r --requirement -c --constraint -e --editable -i --index-url
	--extra-index-url -f --find-links -t --target --registry --prefix -w --workspace
	-F --features --git --path --branch --tag --rev --version --vers --rename -p --package
	-G --group -E --extras --source --index --extra`)

// Extract returns the files, URLs, packages and symbols a memory's
// text mentions, as normalised entity strings, sorted and deduplicated:
//
//	"file:<path>"   file paths with a known extension or name (main.go,
//	                package.json, Makefile, .env), without a :line suffix or
//	                leading ./; in backticks also directories (`internal/auth/`)
//	"url:<url>"     http(s) URLs, trailing punctuation trimmed
//	"pkg:<name>"    Go module paths (github.com/x/y, golang.org/x/...), Go
//	                imports, npm scoped names (@scope/pkg), and the arguments
//	                of npm/pnpm/yarn/bun, pip/uv/poetry and cargo install
//	                commands in code
//	"code:<symbol>" identifiers and calls in backticks that are clearly code:
//	                `parseConfig()`, `Store.Commit`, `http.Handler`,
//	                `snake_case_fn`, `(*Node).Close` (as Node.Close)
//
// The result holds at most maxTouches entries (files first, then packages,
// symbols and URLs) of at most maxTouchLen bytes each; it is nil if the
// text mentions nothing.
func Extract(text string) []string {
	t := make(touchSet)
	// URLs first, then blank them so their paths are not read as files.
	rest := []byte(text)
	for _, m := range touchURLPattern.FindAllStringIndex(text, -1) {
		t.addURL(text[m[0]:m[1]])
		blank(rest, m[0], m[1])
	}
	noURLs := string(rest)
	t.addWords(noURLs)
	if strings.Contains(noURLs, "import") {
		for _, m := range goImportPattern.FindAllStringSubmatch(noURLs, -1) {
			t.addImport(m[1])
		}
		for _, m := range goImportBlockPattern.FindAllStringSubmatch(noURLs, -1) {
			for _, q := range quotedPattern.FindAllStringSubmatch(m[1], -1) {
				t.addImport(q[1])
			}
		}
	}
	if !strings.Contains(noURLs, "`") {
		return t.sorted()
	}
	for _, m := range fencePattern.FindAllStringSubmatchIndex(noURLs, -1) {
		t.addCommands(noURLs[m[2]:m[3]])
		blank(rest, m[0], m[1])
	}
	for _, m := range inlineCodePattern.FindAllStringSubmatch(string(rest), -1) {
		t.addInlineCode(strings.TrimSpace(m[1]))
		t.addCommands(m[1])
	}
	return t.sorted()
}

// touchSet collects entities.
type touchSet map[string]bool

// add adds the entity kind+value, cut to maxTouchLen bytes.
func (t touchSet) add(kind, value string) {
	if value == "" {
		return
	}
	e := kind + value
	if len(e) > maxTouchLen {
		n := maxTouchLen
		for n > 0 && !utf8.RuneStart(e[n]) {
			n--
		}
		e = e[:n]
	}
	t[e] = true
}

// sorted returns the entities in order, keeping the first maxTouches by
// kind (touchKinds) and name.
func (t touchSet) sorted() []string {
	if len(t) == 0 {
		return nil
	}
	out := make([]string, 0, len(t))
	for e := range t {
		out = append(out, e)
	}
	if len(out) > maxTouches {
		slices.SortFunc(out, func(a, b string) int {
			return cmp.Or(cmp.Compare(touchKindRank(a), touchKindRank(b)), strings.Compare(a, b))
		})
		out = out[:maxTouches]
	}
	slices.Sort(out)
	return out
}

// touchKindRank returns the index in touchKinds of e's kind.
func touchKindRank(e string) int {
	return slices.IndexFunc(touchKinds, func(k string) bool { return strings.HasPrefix(e, k) })
}

// addURL adds a URL, without the punctuation that ends the sentence or
// markup around it.
func (t touchSet) addURL(url string) {
	for url != "" {
		last := url[len(url)-1]
		unbalanced := last == ')' && strings.Count(url, "(") < strings.Count(url, ")") ||
			last == ']' && strings.Count(url, "[") < strings.Count(url, "]")
		if !unbalanced && !strings.ContainsRune(".,;:!?*", rune(last)) {
			break
		}
		url = url[:len(url)-1]
	}
	if _, host, _ := strings.Cut(url, "://"); host != "" {
		t.add("url:", url)
	}
}

// addWords adds the files and packages named by the words of text. Words
// are split at blanks, brackets, quotes and punctuation that cannot be part
// of a path; a word followed by '(' is a call (res.json()), not a file.
func (t touchSet) addWords(text string) {
	for i := 0; i < len(text); {
		for i < len(text) && touchDelimiters[text[i]] {
			i++
		}
		j := i
		for j < len(text) && !touchDelimiters[text[j]] {
			j++
		}
		if j > i && (j == len(text) || text[j] != '(') {
			t.addWord(text[i:j])
		}
		i = j
	}
}

// touchDelimiters holds the bytes that end a word for addWords: control
// characters, blanks, brackets, quotes and ,;=|*.
var touchDelimiters = func() (set [256]bool) {
	for c := 0; c <= ' '; c++ {
		set[c] = true
	}
	for _, c := range []byte("()[]{}<>\"'`,;=|*") {
		set[c] = true
	}
	return set
}()

// addWord adds the file or package one word names, if any.
func (t touchSet) addWord(word string) {
	word = strings.TrimRight(word, ".,:;!?")
	if !strings.ContainsAny(word, "./") && !fileNames[word] {
		return
	}
	if word[0] == '@' {
		if name := npmName(word); strings.Contains(name, "/") {
			t.add("pkg:", name)
		}
	} else if p := modulePath(word); p != "" {
		t.add("pkg:", p)
	} else if f := filePath(word); f != "" {
		t.add("file:", f)
	}
}

// modulePath returns the Go module or package path word names, without a
// @version, or "" if word is none: its first element must be a module host.
func modulePath(word string) string {
	word, _, _ = strings.Cut(word, "@")
	word = strings.TrimSuffix(strings.TrimSuffix(word, "/"), ".git")
	host, _, _ := strings.Cut(word, "/")
	if !moduleHosts[host] || !importPathPattern.MatchString(word) {
		return ""
	}
	elems := strings.Split(word, "/")
	if gitHosts[host] {
		if len(elems) < 3 {
			return ""
		}
		if len(elems) > 3 && repoPages[elems[3]] {
			elems = elems[:3]
		}
	}
	if last := elems[len(elems)-1]; len(elems) > 2 && isFileName(last) {
		elems = elems[:len(elems)-1]
	}
	if len(elems) < 2 {
		return ""
	}
	return strings.Join(elems, "/")
}

// filePath returns the normalised file path word names (no :line suffix, no
// leading ./), or "" if word is no file path.
func filePath(word string) string {
	p := word
	if strings.ContainsAny(p, ":#") {
		if loc := lineSuffixPattern.FindStringIndex(p); loc != nil {
			p = p[:loc[0]]
		}
	}
	p = strings.TrimPrefix(p, "./")
	slash := strings.LastIndexByte(p, '/')
	base := p[slash+1:]
	dot := strings.LastIndexByte(base, '.')
	named := isFileName(base) || slash >= 0 && dot > 0 && dirExts[base[dot+1:]]
	if !named || !pathPattern.MatchString(p) || strings.Contains(p, "//") {
		return ""
	}
	return p
}

// isFileName reports whether base, a name without directory, has a known
// file name or extension.
func isFileName(base string) bool {
	if fileNames[base] || strings.HasPrefix(base, ".env.") || strings.HasPrefix(base, "Dockerfile.") {
		return true
	}
	dot := strings.LastIndexByte(base, '.')
	return dot > 0 && fileExts[base[dot+1:]] && strings.Trim(base[:dot], "._-") != "" &&
		!notFileNames[strings.ToLower(base)]
}

// addImport adds a Go import path.
func (t touchSet) addImport(path string) {
	if importPathPattern.MatchString(path) && !strings.Contains(path, "..") {
		t.add("pkg:", path)
	}
}

// addInlineCode adds what a whole inline code span names beyond the files
// and packages addWords finds: a directory or a code symbol.
func (t touchSet) addInlineCode(code string) {
	if code == "" || modulePath(code) != "" || filePath(code) != "" {
		return
	}
	if isDirPath(code) {
		t.add("file:", strings.TrimSuffix(strings.TrimPrefix(code, "./"), "/"))
		return
	}
	m := symbolPattern.FindStringSubmatch(code)
	if m == nil {
		return
	}
	name, called := m[2], m[3] != ""
	if m[1] != "" {
		name = m[1] + "." + name
	}
	if isSymbol(name, called) {
		t.add("code:", name)
	}
}

// isDirPath reports whether code is a directory path: a path that ends in
// '/' or starts with ./, ../, ~/ or /. Other words with slashes are as
// often MIME types or branch names (application/json, origin/main).
func isDirPath(code string) bool {
	if !pathPattern.MatchString(code) || strings.Contains(code, "//") || code == "/" {
		return false
	}
	return strings.HasSuffix(code, "/") || strings.HasPrefix(code, "./") ||
		strings.HasPrefix(code, "../") || strings.HasPrefix(code, "~/") || strings.HasPrefix(code, "/")
}

// isSymbol reports whether name, matched by symbolPattern, is clearly code
// rather than a plain word: a call, a qualified name, snake_case or
// camelCase. Domain names (example.com) and projects (Node.js) are not.
func isSymbol(name string, called bool) bool {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && !called {
		if end := name[i+1:]; domainEnds[end] || fileExts[end] || notFileNames[strings.ToLower(name)] {
			return false
		}
	}
	return called || strings.Contains(name, ".") || strings.Contains(name, "::") ||
		strings.Contains(name, "_") && strings.Trim(name, "_") != "" || hasInnerUpper(name)
}

// hasInnerUpper reports whether an upper-case ASCII letter follows a
// lower-case one in s, as in parseConfig or NewNode.
func hasInnerUpper(s string) bool {
	for i := 1; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' && 'a' <= s[i-1] && s[i-1] <= 'z' {
			return true
		}
	}
	return false
}

// addCommands adds the packages that install commands in code name.
func (t touchSet) addCommands(code string) {
	code = strings.ReplaceAll(code, "\\\n", " ")
	for _, cmd := range strings.FieldsFunc(code, func(r rune) bool { return strings.ContainsRune("\n;|&", r) }) {
		t.addInstall(strings.Fields(cmd))
	}
}

// addInstall adds the packages of the first install command in words.
func (t touchSet) addInstall(words []string) {
	for i := range words {
		for _, c := range installCommands {
			if !slices.Equal(words[i:min(i+len(c.words), len(words))], c.words) {
				continue
			}
			args := words[i+len(c.words):]
			for j := 0; j < len(args); j++ {
				arg := strings.Trim(args[j], `"'`)
				switch {
				case arg == "":
				case arg[0] == '#':
					return
				case strings.HasPrefix(arg, "-"):
					if valueFlags[arg] {
						j++
					}
				case !strings.Contains(arg, "/") || arg[0] == '@':
					if !isFileName(arg) {
						t.add("pkg:", c.name(arg))
					}
				}
			}
			return
		}
	}
}

// npmName returns the npm package an install argument names.
func npmName(arg string) string {
	if m := npmNamePattern.FindStringSubmatch(arg); m != nil {
		return m[1]
	}
	return ""
}

// pipName returns the normalised (PEP 503) name of the package a pip
// requirement names.
func pipName(arg string) string {
	if m := pipNamePattern.FindStringSubmatch(arg); m != nil {
		return pipSeparators.ReplaceAllString(strings.ToLower(m[1]), "-")
	}
	return ""
}

// cargoName returns the crate an install argument names.
func cargoName(arg string) string {
	if m := cargoNamePattern.FindStringSubmatch(arg); m != nil {
		return m[1]
	}
	return ""
}

// blank overwrites b[start:end] with spaces.
func blank(b []byte, start, end int) {
	for i := start; i < end; i++ {
		b[i] = ' '
	}
}

// stringSet returns the set of the blank-separated words of s.
func stringSet(s string) map[string]bool {
	set := make(map[string]bool)
	for _, w := range strings.Fields(s) {
		set[w] = true
	}
	return set
}
