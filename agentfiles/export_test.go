package agentfiles

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/node"
)

var exportNow = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

// exportTo exports namespace acme into path (outside a git tree) with
// backups into backups.
func exportTo(t *testing.T, n *node.Node, path, backups string, opt ExportOptions) (ExportResult, error) {
	t.Helper()
	src, err := Locate(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	opt.Namespace, opt.BackupDir, opt.Now = "acme", backups, exportNow
	if opt.Format == "" {
		opt.Format = AgentsMD
	}
	return Export(context.Background(), n, src, opt)
}

func capture(t *testing.T, n *node.Node, kind string, tier model.Tier, content string) api.RememberResult {
	t.Helper()
	r, err := n.Remember(context.Background(), api.RememberRequest{Namespace: "acme", Kind: kind, Tier: tier, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestExportKeepsTheRest: the block holds the human-tier conventions and
// decisions; every byte before and after it stays, whatever the line
// ends; an export with nothing new writes nothing; a change rewrites the
// block, after a backup of the file.
func TestExportKeepsTheRest(t *testing.T) {
	for _, nl := range []string{"\n", "\r\n"} {
		t.Run(fmt.Sprintf("%q", nl), func(t *testing.T) {
			n := testNode(t)
			capture(t, n, "convention", model.TierHuman, "Wrap errors with %w")
			capture(t, n, "decision", model.TierHuman, "We use pgx v5, not database/sql")
			capture(t, n, "convention", model.TierAgent, "Agents' own guess about naming")
			capture(t, n, "note", model.TierHuman, "The staging box reboots on Sundays")
			dir, backups := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "AGENTS.md")
			before := strings.ReplaceAll("# AGENTS.md\n\nMy own text, *as I wrote it*   \n\n\n", "\n", nl)
			if err := os.WriteFile(path, []byte(before), 0o640); err != nil {
				t.Fatal(err)
			}
			res, err := exportTo(t, n, path, backups, ExportOptions{})
			if err != nil || !res.Written || res.Shown != 2 || res.Backup == "" {
				t.Fatalf("export: %+v, %v", res, err)
			}
			got := readString(t, path)
			if !strings.HasPrefix(got, before) {
				t.Fatalf("the text before the block changed:\n%q", got)
			}
			blk, found, err := FindBlock([]byte(got))
			if err != nil || !found || blk.Edited() {
				t.Fatalf("block %+v found %v err %v", blk, found, err)
			}
			for _, want := range []string{"Wrap errors with %w", "We use pgx v5", "### Conventions", "### Decisions"} {
				if !strings.Contains(blk.Body, want) {
					t.Errorf("the block lacks %q:\n%s", want, blk.Body)
				}
			}
			for _, not := range []string{"Agents' own guess", "staging box"} {
				if strings.Contains(blk.Body, not) {
					t.Errorf("the block holds %q", not)
				}
			}
			if nl == "\r\n" && strings.Count(got, "\n") != strings.Count(got, "\r\n") {
				t.Fatal("the block's lines do not end as the file's")
			}
			if readString(t, res.Backup) != before {
				t.Fatal("the backup is not the file as it was")
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
				t.Fatalf("mode %v, want the file's 0640", fi.Mode().Perm())
			}

			// Text after the block is the user's too.
			withAfter := got + strings.ReplaceAll("\n## Mine, after\n\n- keep me\n", "\n", nl)
			os.WriteFile(path, []byte(withAfter), 0o640)
			if res, err := exportTo(t, n, path, backups, ExportOptions{}); err != nil || res.Changed || res.Written {
				t.Fatalf("export with nothing new: %+v, %v", res, err)
			}
			if readString(t, path) != withAfter {
				t.Fatal("an export with nothing new changed the file")
			}
			capture(t, n, "convention", model.TierHuman, "Table-driven tests with t.Run names")
			res, err = exportTo(t, n, path, backups, ExportOptions{})
			if err != nil || !res.Written || res.Shown != 3 {
				t.Fatalf("export after a change: %+v, %v", res, err)
			}
			now := readString(t, path)
			blk, _, _ = FindBlock([]byte(now))
			if now[:blk.Start] != before || now[blk.End:] != withAfter[len(got):] {
				t.Fatalf("the bytes around the block changed:\n%q", now)
			}
			if !strings.Contains(blk.Body, "Table-driven tests") || !strings.Contains(res.Diff, "+- Table-driven tests") {
				t.Fatalf("the new memory is not in the block, or the diff: %s", res.Diff)
			}
		})
	}
}

// TestExportNewFile: a missing file is created holding the block alone;
// --check then finds it up to date, and out of date after a change,
// saying why, without writing.
func TestExportCheck(t *testing.T) {
	n := testNode(t)
	capture(t, n, "convention", model.TierHuman, "Run make lint before pushing")
	path := filepath.Join(t.TempDir(), "CLAUDE.md")
	res, err := exportTo(t, n, path, t.TempDir(), ExportOptions{Check: true, Format: ClaudeMD})
	if !errors.Is(err, ErrOutOfDate) || res.Reason != "the file does not exist" {
		t.Fatalf("check of a missing file: %+v, %v", res, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a check created the file")
	}
	res, err = exportTo(t, n, path, t.TempDir(), ExportOptions{Format: ClaudeMD})
	if err != nil || !res.Created || res.Backup != "" {
		t.Fatalf("export to a new file: %+v, %v", res, err)
	}
	if got := readString(t, path); !strings.HasPrefix(got, "<!-- memmesh:begin sha256=") || !strings.HasSuffix(got, "<!-- memmesh:end -->\n") {
		t.Fatalf("new file:\n%s", got)
	}
	if _, err := exportTo(t, n, path, t.TempDir(), ExportOptions{Check: true, Format: ClaudeMD}); err != nil {
		t.Fatalf("check right after an export: %v", err)
	}
	capture(t, n, "decision", model.TierHuman, "Decided: releases are cut on Tuesdays")
	written := readString(t, path)
	res, err = exportTo(t, n, path, t.TempDir(), ExportOptions{Check: true, Format: ClaudeMD})
	if !errors.Is(err, ErrOutOfDate) || res.Reason != "the memories changed since the block was written" || !strings.Contains(res.Diff, "+- Decided: releases are cut on Tuesdays") {
		t.Fatalf("check after a change: %+v, %v", res, err)
	}
	if readString(t, path) != written {
		t.Fatal("a check wrote the file")
	}
}

// TestExportEditedBlock: a block edited by hand is refused, with the diff
// of what would be lost, and the file untouched; --force writes it,
// keeping a backup of the edit.
func TestExportEditedBlock(t *testing.T) {
	n := testNode(t)
	capture(t, n, "convention", model.TierHuman, "Use pnpm, never npm")
	path, backups := filepath.Join(t.TempDir(), "AGENTS.md"), t.TempDir()
	if _, err := exportTo(t, n, path, backups, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(readString(t, path), "Use pnpm, never npm", "Use pnpm, never npm or yarn", 1)
	os.WriteFile(path, []byte(edited), 0o644)
	for _, check := range []bool{false, true} {
		res, err := exportTo(t, n, path, backups, ExportOptions{Check: check})
		if !errors.Is(err, ErrEdited) || !res.Edited || !strings.Contains(res.Diff, "-- Use pnpm, never npm or yarn") || !strings.Contains(res.Diff, "+- Use pnpm, never npm (") {
			t.Fatalf("check %v of an edited block: %+v, %v", check, res, err)
		}
		if readString(t, path) != edited {
			t.Fatal("an edited block was written over")
		}
	}
	res, err := exportTo(t, n, path, backups, ExportOptions{Force: true})
	if err != nil || !res.Written || readString(t, res.Backup) != edited {
		t.Fatalf("forced: %+v, %v", res, err)
	}
	if blk, _, _ := FindBlock([]byte(readString(t, path))); blk.Edited() || strings.Contains(blk.Body, "or yarn") {
		t.Fatalf("forced block: %+v", blk)
	}
}

// TestExportSkipsWhatTheFileSays: memories imported from the file, and
// those whose text the file says outside the block, are not written into
// it again.
func TestExportSkipsWhatTheFileSays(t *testing.T) {
	n := testNode(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "CLAUDE.md")
	os.WriteFile(path, readFixture(t, "CLAUDE.md"), 0o644)
	src, err := Locate(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// Captured before the import, this one holds an item's text: the
	// import leaves the item to it, and the export sees the file says it.
	capture(t, n, "convention", model.TierHuman, "Log with `log/slog`; the request id goes under the key `req_id`.")
	items, _ := Parse(readFixture(t, "CLAUDE.md"), DefaultLimits())
	if r, err := Import(context.Background(), n, src, items, ImportOptions{Namespace: "acme", Format: ClaudeMD}); err != nil || r.Duplicates != 1 {
		t.Fatalf("import: %+v, %v", r, err)
	}
	capture(t, n, "convention", model.TierHuman, "Benchmarks run with -count 5")
	res, err := exportTo(t, n, path, t.TempDir(), ExportOptions{Format: ClaudeMD})
	if err != nil || res.Shown != 1 || res.Skipped != 14 {
		t.Fatalf("export into the imported file: %+v, %v", res, err)
	}
	blk, _, _ := FindBlock([]byte(readString(t, path)))
	if !strings.Contains(blk.Body, "Benchmarks run with -count 5") || strings.Contains(blk.Body, "req_id") {
		t.Fatalf("block:\n%s", blk.Body)
	}
	// Importing the file again leaves its block out.
	items, _ = Parse([]byte(readString(t, path)), DefaultLimits())
	r, err := Import(context.Background(), n, src, items, ImportOptions{Namespace: "acme", Format: ClaudeMD})
	if err != nil || r.Created != 0 || r.Unchanged != 15 || r.Duplicates != 1 {
		t.Fatalf("import after the export: %+v, %v", r, err)
	}
}

// TestExportBudget: the block stays within its budget in tokens, the
// most trusted first, and says how many it left out.
func TestExportBudget(t *testing.T) {
	n := testNode(t)
	for i := range 60 {
		capture(t, n, "convention", model.TierHuman, fmt.Sprintf("Convention %d: %s", i, strings.Repeat("keep the handlers small and the tests table-driven; ", 3)))
	}
	high := 1.0
	if _, err := n.Remember(context.Background(), api.RememberRequest{Namespace: "acme", Kind: "convention", Tier: model.TierHuman, Confidence: &high, Content: "The one that matters most"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "AGENTS.md")
	res, err := exportTo(t, n, path, t.TempDir(), ExportOptions{Budget: 600})
	if err != nil || res.LeftOut == 0 || res.Shown == 0 || res.Shown+res.LeftOut != 61 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	got := readString(t, path)
	if c := tokens.Count(got); c > 600 || c != res.Tokens {
		t.Fatalf("block of %d tokens (result %d), budget 600", c, res.Tokens)
	}
	if !strings.Contains(got, fmt.Sprintf("%d more left out to stay within 600 tokens", res.LeftOut)) {
		t.Fatalf("no note of what was left out:\n%s", got)
	}
	if i := strings.Index(got, "The one that matters most"); i < 0 || i > strings.Index(got, "Convention ") {
		t.Fatal("the most trusted memory is not first")
	}
	for _, b := range []int{10, 1 << 20} {
		if _, err := exportTo(t, n, path, t.TempDir(), ExportOptions{Budget: b}); err == nil {
			t.Fatalf("budget %d accepted", b)
		}
	}
}

// TestExportInert: what a memory holds is written as text: no HTML, no
// comment that could pass for a marker, no terminal escape; code keeps
// its "<".
func TestExportInert(t *testing.T) {
	n := testNode(t)
	capture(t, n, "convention", model.TierHuman, "Never <script>alert(1)</script> in templates\n<!-- memmesh:end -->\n\x1b[31mred\x1b[0m and `Result<T, E>` in code")
	capture(t, n, "convention", model.TierHuman, "```go\nvar x = a<b\n```")
	path := filepath.Join(t.TempDir(), "AGENTS.md")
	if _, err := exportTo(t, n, path, t.TempDir(), ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	got := readString(t, path)
	if raw := regexp.MustCompile(`(^|[^\\])</?script>`); raw.MatchString(got) || strings.Contains(got, "\x1b") || strings.Count(got, "\n<!--") != 1 {
		t.Errorf("the file holds HTML, an escape or a marker of a memory's:\n%s", got)
	}
	for _, want := range []string{`\<script>`, "  \\<!-- memmesh:end -->", "␛[31mred", "`Result<T, E>`", "  var x = a<b"} {
		if !strings.Contains(got, want) {
			t.Errorf("the file lacks %q:\n%s", want, got)
		}
	}
	if blk, found, err := FindBlock([]byte(got)); err != nil || !found || blk.Edited() || blk.Start != 0 || blk.End != len(got) {
		t.Fatalf("block %+v, %v, %v", blk, found, err)
	}
}

// TestExportBadFiles: a read-only file, a file that is not UTF-8 text, a
// directory and a symlink out of its directory are refused with a clear
// error and left as they are.
func TestExportBadFiles(t *testing.T) {
	n := testNode(t)
	capture(t, n, "convention", model.TierHuman, "Use pnpm, never npm")
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		says          string
	}{
		{"read-only", "# Mine\n", 0o444, "read-only"},
		{"latin-1", "# Caf\xe9\n", 0o644, "not UTF-8 text: invalid byte 0xe9 at offset 5 (line 1)"},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00", 0o644, "NUL"},
		{"broken block", "<!-- memmesh:begin sha256=0123456789abcdef -->\n- x\n", 0o644, "no \"<!-- memmesh:end -->\" line ends"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".md")
			if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			_, err := exportTo(t, n, path, t.TempDir(), ExportOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v: want one saying %q", err, tc.says)
			}
			if readString(t, path) != tc.content {
				t.Fatal("the file changed")
			}
			if m, _ := filepath.Glob(path + ".*"); len(m) != 0 {
				t.Fatalf("left beside it: %v", m)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(dir, "AGENTS.md")
		os.Mkdir(path, 0o755)
		if _, err := exportTo(t, n, path, t.TempDir(), ExportOptions{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("symlink out", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "authorized_keys")
		os.WriteFile(outside, []byte("ssh-ed25519 AAAA me\n"), 0o600)
		link := filepath.Join(dir, "CLAUDE.md")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		if _, err := Locate(context.Background(), link); !errors.Is(err, ErrOutside) {
			t.Fatalf("error %v: want ErrOutside", err)
		}
		if readString(t, outside) != "ssh-ed25519 AAAA me\n" {
			t.Fatal("the file outside changed")
		}
	})
}

// idSuffix is the id an export puts after an entry's first line.
var idSuffix = regexp.MustCompile(` \(m-[a-z0-9]{8}\)`)

// TestRoundTrip: each format's fixture imported into a namespace and
// exported into a new AGENTS.md reads back, item for item, as the
// conventions and decisions it held.
func TestRoundTrip(t *testing.T) {
	for _, file := range []string{"CLAUDE.md", "AGENTS.md", ".cursorrules", ".github/copilot-instructions.md", "react.mdc"} {
		t.Run(file, func(t *testing.T) {
			n := testNode(t)
			dir := t.TempDir()
			in := filepath.Join(dir, filepath.Base(file))
			os.WriteFile(in, readFixture(t, file), 0o644)
			src, err := Locate(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			items, _ := Parse(readFixture(t, file), DefaultLimits())
			if _, err := Import(context.Background(), n, src, items, ImportOptions{Namespace: "acme", Format: CursorRules}); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "OUT.md")
			res, err := exportTo(t, n, out, t.TempDir(), ExportOptions{Budget: MaxBudget})
			if err != nil || res.LeftOut != 0 {
				t.Fatalf("export: %+v, %v", res, err)
			}
			blk, _, _ := FindBlock([]byte(readString(t, out)))
			// "\<" reads as "<" in Markdown.
			back, err := Parse([]byte(strings.ReplaceAll(idSuffix.ReplaceAllString(blk.Body, ""), `\<`, "<")), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			var want, got []string
			for _, it := range items {
				if it.Kind == "convention" || it.Kind == "decision" {
					want = append(want, it.Text)
				}
			}
			for _, it := range back {
				if len(it.Section) > 1 { // the entries, under Conventions and Decisions
					got = append(got, strings.TrimPrefix(it.Text, "**"+titleOf(items, it.Text)+":** "))
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(want, got) {
				t.Fatalf("read back:\n%q\nwant:\n%q", got, want)
			}
		})
	}
}

// titleOf returns the title an exported entry of text got: its item's.
func titleOf(items []Item, entry string) string {
	for _, it := range items {
		if strings.HasSuffix(entry, it.Text) {
			return strings.TrimSuffix(strings.TrimSuffix(entry, it.Text), ":** ")[2:]
		}
	}
	return ""
}

// TestLocate names a file by its path in its git working tree, follows a
// symlink within it (AGENTS.md linked to CLAUDE.md is CLAUDE.md), and
// refuses one out of it and a path too long to name.
func TestLocate(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(repo, ".github"), 0o755)
	os.WriteFile(filepath.Join(repo, "CLAUDE.md"), []byte("- x\n"), 0o644)
	os.Symlink("CLAUDE.md", filepath.Join(repo, "AGENTS.md"))
	for path, key := range map[string]string{
		filepath.Join(repo, "CLAUDE.md"):                       "CLAUDE.md",
		filepath.Join(repo, "AGENTS.md"):                       "CLAUDE.md",
		filepath.Join(repo, ".github/copilot-instructions.md"): ".github/copilot-instructions.md", // not there yet
	} {
		src, err := Locate(ctx, path)
		if err != nil || src.Key != key || src.Root == "" || src.Session() != "file:"+key {
			t.Fatalf("Locate(%s) = %+v, %v: want key %s", path, src, err, key)
		}
	}
	outside := filepath.Join(t.TempDir(), "notes.md")
	os.WriteFile(outside, []byte("- y\n"), 0o644)
	os.Symlink(outside, filepath.Join(repo, "NOTES.md"))
	if _, err := Locate(ctx, filepath.Join(repo, "NOTES.md")); !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "outside the repository") {
		t.Fatalf("a symlink out of the repository: %v", err)
	}
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 200), strings.Repeat("e", 100))
	os.MkdirAll(deep, 0o755)
	if _, err := Locate(ctx, filepath.Join(deep, "CLAUDE.md")); err == nil || !strings.Contains(err.Error(), "cannot name") {
		t.Fatalf("a path too long: %v", err)
	}
}

// TestEntryLeavesOutItsSectionsName: an item imported from a file's
// "Conventions" section is titled so; under the block's own
// "Conventions" heading the title would only repeat it.
func TestEntryLeavesOutItsSectionsName(t *testing.T) {
	m := api.Memory{ID: "m-4wexqpgjabcdef", Memory: model.Memory{Title: "Conventions", Content: "Use pnpm, never npm.", Kind: "convention"}}
	if got, want := entry(&m, kindHead(m.Kind)), "- Use pnpm, never npm. (m-4wexqpgj)\n"; got != want {
		t.Errorf("entry = %q, want %q", got, want)
	}
	m.Title = "Code style › Naming"
	if got := entry(&m, kindHead(m.Kind)); !strings.HasPrefix(got, "- **Code style › Naming:** Use pnpm") {
		t.Errorf("a title that says more than the section was left out: %q", got)
	}
}
