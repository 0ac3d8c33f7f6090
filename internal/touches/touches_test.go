package touches

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{
			name: "bug fix with files, lines and a symbol",
			text: "Bug: sessions leaked after logout. The fix is in internal/auth/session.go:142 " +
				"(`Store.Delete` now runs in the same tx) with a regression test in " +
				"internal/auth/session_test.go. See cmd/server/main.go:42 for the wiring.",
			want: []string{
				"code:Store.Delete",
				"file:cmd/server/main.go",
				"file:internal/auth/session.go",
				"file:internal/auth/session_test.go",
			},
		},
		{
			name: "convention with backticked paths, names and calls",
			text: "Convention: config is parsed once by `parseConfig()` in `./internal/config/load.go`; " +
				"handlers take an `http.Handler` and never read `os.Getenv(\"PORT\")` directly. " +
				"Helpers use `snake_case_fn` names only in the Python tools under `tools/`. " +
				"Build with the Makefile, deps in package.json and go.mod.",
			want: []string{
				"code:http.Handler",
				"code:os.Getenv",
				"code:parseConfig",
				"code:snake_case_fn",
				"file:Makefile",
				"file:go.mod",
				"file:internal/config/load.go",
				"file:package.json",
				"file:tools",
			},
		},
		{
			name: "urls with trailing punctuation",
			text: "Docs: https://pkg.go.dev/github.com/cockroachdb/pebble/v2, the issue " +
				"(https://github.com/memmesh/memmesh/issues/12). Wiki: " +
				"https://en.wikipedia.org/wiki/Go_(programming_language). " +
				"Also [the RFC](https://www.rfc-editor.org/rfc/rfc9000.html)!",
			want: []string{
				"url:https://en.wikipedia.org/wiki/Go_(programming_language)",
				"url:https://github.com/memmesh/memmesh/issues/12",
				"url:https://pkg.go.dev/github.com/cockroachdb/pebble/v2",
				"url:https://www.rfc-editor.org/rfc/rfc9000.html",
			},
		},
		{
			name: "go module paths and imports",
			text: "Decision: use github.com/cockroachdb/pebble/v2@v2.1.7 for storage and " +
				"golang.org/x/sync/errgroup for fan-out; github.com/spf13/cobra for the CLI.\n" +
				"```go\nimport (\n\t\"context\"\n\t\"net/http\"\n\n\tbleve \"github.com/blevesearch/bleve/v2\"\n)\n" +
				"import \"log/slog\"\n```",
			want: []string{
				"pkg:context",
				"pkg:github.com/blevesearch/bleve/v2",
				"pkg:github.com/cockroachdb/pebble/v2",
				"pkg:github.com/spf13/cobra",
				"pkg:golang.org/x/sync/errgroup",
				"pkg:log/slog",
				"pkg:net/http",
			},
		},
		{
			name: "install commands in code",
			text: "Frontend setup:\n```sh\nnpm install zod @tanstack/react-query@5 --save\n" +
				"npm i -D typescript@5.4 @types/node && pnpm add clsx\n" +
				"pip install -r requirements.txt \"FastAPI[all]>=0.110\" Pydantic_Settings==2.2\n" +
				"cargo add serde --features derive\n```\n" +
				"Then `yarn add lodash-es` and `uv add httpx`. Scoped packages such as @angular/core are pinned.",
			want: []string{
				"file:requirements.txt",
				"pkg:@angular/core",
				"pkg:@tanstack/react-query",
				"pkg:@types/node",
				"pkg:clsx",
				"pkg:fastapi",
				"pkg:httpx",
				"pkg:lodash-es",
				"pkg:pydantic-settings",
				"pkg:serde",
				"pkg:typescript",
				"pkg:zod",
			},
		},
		{
			name: "install command in prose is not read",
			text: "After npm install the build works again, and pip install fails on Python 3.13.",
			want: nil,
		},
		{
			name: "no false positives in prose",
			text: "We decided, e.g. for v1.2.3 and v2.0, to keep π ≈ 3.14 (i.e. close enough), etc. " +
				"The end. Next sentence... Node.js and Vue.js are fine, see docs.rs too; " +
				"mail ops@example.com. Mr. Smith agreed at 5 p.m. on the U.S. release.",
			want: nil,
		},
		{
			name: "plain words in backticks are no symbols",
			text: "Return `nil`, not `false`; the `Node` type and `main` stay. Run `go test ./...` " +
				"and check `application/json` on `origin/main`. `example.com` is reserved.",
			want: nil,
		},
		{
			name: "directories, dotfiles and method values",
			text: "Put fixtures in `testdata/golden/` and secrets in .env.local (see .gitignore). " +
				"The method `(*Node).Close` waits; `Vec::new()` in the Rust port. Logs go to " +
				"/var/log/memmesh/node.log, and `console.log` calls are removed. Call res.json() once.",
			want: []string{
				"code:Node.Close",
				"code:Vec::new",
				"code:console.log",
				"file:.env.local",
				"file:.gitignore",
				"file:/var/log/memmesh/node.log",
				"file:testdata/golden",
			},
		},
		{
			name: "markdown links and emphasis",
			text: "- **docs/adr/0001-use-pebble.md** explains storage; [README](README.md#install), " +
				"assets `assets/img/hero@2x.png`, and the Dockerfile.dev image. Line links like " +
				"web/static/app.ts#L10-L20 lose their anchor.",
			want: []string{
				"file:Dockerfile.dev",
				"file:README.md",
				"file:assets/img/hero@2x.png",
				"file:docs/adr/0001-use-pebble.md",
				"file:web/static/app.ts",
			},
		},
		{
			name: "unicode text",
			text: "Décision : le fichier docs/ja/README.md (日本語) décrit `Store.Commit` — voir https://例え.jp/パス.",
			want: []string{
				"code:Store.Commit",
				"file:docs/ja/README.md",
				"url:https://例え.jp/パス",
			},
		},
		{name: "empty", text: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Extract(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Extract(%q)\n got %q\nwant %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestExtractCaps(t *testing.T) {
	var text strings.Builder
	for i := range 100 {
		fmt.Fprintf(&text, "https://example.com/page/%d see `callSite%d()` and pkg/file%03d.go\n", i, i, i)
	}
	got := Extract(text.String())
	if len(got) != maxTouches {
		t.Fatalf("%d entities, want %d", len(got), maxTouches)
	}
	for _, e := range got {
		if !strings.HasPrefix(e, "file:") {
			t.Fatalf("kept %q before all files", e)
		}
	}

	long := "internal/" + strings.Repeat("d", 300) + "/x.go and https://example.com/" + strings.Repeat("é", 200)
	got = Extract(long)
	if len(got) != 2 {
		t.Fatalf("got %q, want a file and a URL", got)
	}
	for _, e := range got {
		if len(e) > maxTouchLen || len(e) < maxTouchLen-1 || !utf8.ValidString(e) {
			t.Errorf("entity %q is %d bytes or cut inside a character", e, len(e))
		}
	}
}

func FuzzExtract(f *testing.F) {
	f.Add(touchMemory)
	f.Add("`(*Node).Close` in ./a/b.go:1:2 https://x.y/(z)) `npm i @a/b@1` import (\"c/d\")")
	f.Fuzz(func(t *testing.T, text string) {
		got := Extract(text)
		if len(got) > maxTouches || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("Extract(%q) = %q: not a sorted set of at most %d", text, got, maxTouches)
		}
		for _, e := range got {
			if len(e) > maxTouchLen || touchKindRank(e) < 0 || utf8.ValidString(text) && !utf8.ValidString(e) {
				t.Fatalf("Extract(%q): bad entity %q", text, e)
			}
		}
	})
}

// touchMemory is a typical 1 KB memory for the benchmark.
const touchMemory = "Bug fix: replica catch-up stalled after a partition.\n\n" +
	"Cause: `Syncer.pushLoop` in transport/sync.go:212 dropped the change when the peer's " +
	"stream was half-closed, and anti-entropy only ran on reconnect. Fix: run the digest " +
	"exchange every 30s (see `DefaultConfig()` in node/config.go) and treat io.EOF as a " +
	"reconnect. Regression test: e2e/partition_test.go (TestHealedPartitionReMerges).\n\n" +
	"Dependencies: github.com/quic-go/quic-go@v0.48.2 and github.com/hashicorp/memberlist; " +
	"upstream issue https://github.com/quic-go/quic-go/issues/4501. Dashboard fix needed " +
	"`npm install @tanstack/react-query` in web/ui/package.json.\n\n" +
	"```go\nimport \"github.com/quic-go/quic-go\"\n\nif errors.Is(err, io.EOF) {\n" +
	"\treturn s.reconnect(ctx, peer)\n}\n```\n" +
	"Related decision: keep memberlist over QUIC datagrams, e.g. no extra TCP port; " +
	"measured p50 of 3.2 ms on the 2-core box (v1.4.0)."

func BenchmarkExtract(b *testing.B) {
	b.SetBytes(int64(len(touchMemory)))
	for b.Loop() {
		Extract(touchMemory)
	}
}
