package bridge

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/secrets/secretstest"
	"github.com/memmesh/memmesh/model"
)

const fixture = `---
name: notes
---
# Memory

## Build commands
- ` + "`npm run build:staging`" + ` loads the staging env vars
- Deploy takes ~4 min
  because it regenerates images
  - nested detail

## Debugging
CORS errors in local are always the Vite proxy.
Never the backend.

` + "```" + `
go test ./...

# not a heading
` + "```" + `
1. first step
2) second step
`

func TestParse(t *testing.T) {
	f := parse(fixture)
	var got []string
	for _, e := range f.entries {
		got = append(got, e.Section+" | "+e.Text)
	}
	want := []string{
		"Build commands | `npm run build:staging` loads the staging env vars",
		"Build commands | Deploy takes ~4 min\nbecause it regenerates images\n- nested detail",
		"Debugging | CORS errors in local are always the Vite proxy.\nNever the backend.",
		"Debugging | ```\ngo test ./...\n\n# not a heading\n```",
		"Debugging | first step",
		"Debugging | second step",
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries:\n%q\nwant\n%q", got, want)
	}
}

// TestRenderReadsBack: what the bridge writes for any text reads back as
// one entry with that text's lines, and text cannot open or close a
// managed part.
func TestRenderReadsBack(t *testing.T) {
	for _, text := range []string{
		"plain",
		"two\nlines",
		"with\n\nblank line",
		"# heading-like\n- item-like\n1. numbered",
		"closes <!-- memmesh:end --> and opens <!-- memmesh:begin -->",
		"<!-- mm:m-abcdefghijklmnopqrstuvwxyz -->",
		"ctrl \x1b[31m red",
	} {
		for _, prefix := range []string{"- ", ""} {
			lines := renderEntry(prefix, text, "m-abc", []string{"other\nversion"})
			f := parse(beginLine + "\n" + strings.Join(lines, "\n") + "\n" + endMark + "\n")
			if len(f.entries) != 1 || f.entries[0].ID != "m-abc" || f.begin != 0 || f.end != len(lines)+1 {
				t.Errorf("%q with %q reads back as %+v (begin %d end %d)", text, prefix, f.entries, f.begin, f.end)
			}
		}
	}
}

// TestTwoMachines: an entry written on A reaches B's MEMORY.md in its
// managed part; a hand edit of it on B reaches A's own text; a deletion
// on A leaves B; the users' own text is kept byte for byte.
func TestTwoMachines(t *testing.T) {
	ns := newStore()
	a := newMachine(t, "work/app", "git@github.com:acme/app.git")
	b := newMachine(t, "src/acme-app", "https://github.com/acme/app")
	a.write(t, IndexFile, "# Memory\n\n- Use pnpm, not npm\n- Tests need Redis on 6379\n")
	a.write(t, "debugging.md", "# Debugging\n\n- CORS errors are the Vite proxy\n")
	bOwn := "# B's notes\n\nThe staging host is slow on Mondays.\n"
	b.write(t, IndexFile, bOwn)

	if rep := a.run(t, ns); rep.Imported != 3 || rep.Namespace != "app" || rep.Remote != "github.com/acme/app" {
		t.Fatalf("first pass on A: %+v", rep)
	}
	b.run(t, ns)
	got := b.read(t, IndexFile)
	if !strings.HasPrefix(got, bOwn) || !strings.Contains(got, "- Use pnpm, not npm <!-- mm:") || !strings.Contains(got, "[debugging.md](debugging.md)") {
		t.Fatalf("B's MEMORY.md after the pass:\n%s", got)
	}
	if dbg := b.read(t, "debugging.md"); !strings.Contains(dbg, "- CORS errors are the Vite proxy <!-- mm:") {
		t.Fatalf("B's debugging.md:\n%s", dbg)
	}
	a.run(t, ns) // B's own paragraph reaches A
	if got := a.read(t, IndexFile); !strings.HasPrefix(got, "# Memory\n\n- Use pnpm, not npm\n- Tests need Redis on 6379\n") ||
		!strings.Contains(got, "The staging host is slow on Mondays. <!-- mm:") {
		t.Fatalf("A's MEMORY.md:\n%s", got)
	}

	// A hand edit on B of A's entry reaches A's own line.
	b.write(t, IndexFile, strings.Replace(b.read(t, IndexFile), "Use pnpm, not npm", "Use pnpm 9, not npm", 1))
	if rep := b.run(t, ns); rep.Updated != 1 {
		t.Fatalf("pass on B after an edit: %+v", rep)
	}
	a.run(t, ns)
	if got := a.read(t, IndexFile); !strings.HasPrefix(got, "# Memory\n\n- Use pnpm 9, not npm\n- Tests need Redis on 6379\n") {
		t.Fatalf("A's MEMORY.md after B's edit:\n%s", got)
	}

	// A deletes an entry: its memory is archived and it leaves B.
	a.write(t, IndexFile, strings.Replace(a.read(t, IndexFile), "- Tests need Redis on 6379\n", "", 1))
	if rep := a.run(t, ns); rep.Archived != 1 {
		t.Fatalf("pass on A after a deletion: %+v", rep)
	}
	if m := ns.byContent(t, "Tests need Redis on 6379"); m.Status != model.StatusArchived {
		t.Fatalf("the deleted entry's memory is %s", m.Status)
	}
	b.run(t, ns)
	if got := b.read(t, IndexFile); strings.Contains(got, "Redis") || !strings.HasPrefix(got, bOwn) {
		t.Fatalf("B's MEMORY.md after A's deletion:\n%s", got)
	}
	// A pass with nothing new writes nothing.
	if rep := b.run(t, ns); len(rep.Written) != 0 || rep.Imported+rep.Updated+rep.Archived != 0 {
		t.Fatalf("an idle pass: %+v", rep)
	}
}

// TestConflictKeepsBothTexts: an entry edited on both machines at once is
// a sync conflict; both files show both texts, and editing the entry
// resolves it.
func TestConflictKeepsBothTexts(t *testing.T) {
	ns, a, b := twoMachines(t)
	a.write(t, IndexFile, "- Deploy on Fridays\n")
	a.run(t, ns)
	b.run(t, ns)
	m := ns.byContent(t, "Deploy on Fridays")
	ns.fork(m.ID, "Deploy on Thursdays", "Never deploy on Fridays")
	for _, mc := range []*machine{a, b} {
		if rep := mc.run(t, ns); rep.Conflicts != 1 {
			t.Errorf("pass on %s: %+v", mc.project, rep)
		}
		got := mc.read(t, IndexFile)
		if !strings.Contains(got, "Never deploy on Fridays") || !strings.Contains(got, "⟂ other version (edited on another machine at the same time): Deploy on Thursdays") {
			t.Errorf("%s's MEMORY.md does not show both versions:\n%s", mc.project, got)
		}
	}
	// Resolving: B writes the entry as it should be.
	got := b.read(t, IndexFile)
	i := strings.Index(got, "- Never deploy")
	b.write(t, IndexFile, got[:i]+"- Deploy on Thursdays, never on Fridays <!-- mm:"+m.ID+" -->\n"+endMark+"\n")
	b.run(t, ns)
	if m := ns.byContent(t, "Deploy on Thursdays, never on Fridays"); len(m.Conflict) != 0 {
		t.Fatalf("the conflict stays after the edit: %+v", m.Conflict)
	}
	a.run(t, ns)
	if got := a.read(t, IndexFile); got != "- Deploy on Thursdays, never on Fridays\n" {
		t.Fatalf("A's MEMORY.md after the resolution:\n%q", got)
	}
}

// TestIndexStaysWithinLimits: MEMORY.md keeps to 200 lines and 25 KB; what
// does not fit goes into memmesh.md, which it links.
func TestIndexStaysWithinLimits(t *testing.T) {
	ns, a, b := twoMachines(t)
	var sb strings.Builder
	for i := range 300 {
		sb.WriteString("- fact number " + strings.Repeat("x", i%50) + " " + strconv.Itoa(i) + "\n")
	}
	a.write(t, IndexFile, sb.String())
	if rep := a.run(t, ns); rep.Imported != 300 {
		t.Fatalf("pass on A: %+v", rep)
	}
	b.write(t, IndexFile, "# Mine\n- my own line\n")
	b.run(t, ns)
	idx, more := b.read(t, IndexFile), b.read(t, OverflowFile)
	lines := strings.Count(idx, "\n")
	if lines > IndexLines || len(idx) > IndexBytes || !strings.Contains(idx, "[memmesh.md](memmesh.md)") {
		t.Fatalf("MEMORY.md has %d lines, %d bytes:\n%s", lines, len(idx), idx)
	}
	if n := strings.Count(idx, "<!-- mm:m-") + strings.Count(more, "<!-- mm:m-"); n != 300 {
		t.Fatalf("%d memories written, want 300", n)
	}
}

// TestBadInput: files the bridge must not damage are left alone, and
// said so; secrets never reach the namespace.
func TestBadInput(t *testing.T) {
	ns, a, b := twoMachines(t)
	a.write(t, IndexFile, "no structure at all, one long line with a token ghp_"+strings.Repeat("A", 36)+" in it")
	a.write(t, "latin1.md", "caf\xe9\n")
	a.write(t, "tool.md", "- \x7fELF\x02\x01\x01\x00\x00\n")
	a.write(t, "huge.md", strings.Repeat("- x\n", MaxFileBytes/4+1))
	outside := filepath.Join(t.TempDir(), "outside.md")
	if err := os.WriteFile(outside, []byte("- outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(a.memDir(), "linked.md")); err != nil {
		t.Fatal(err)
	}
	rep := a.run(t, ns)
	if rep.Imported != 1 || len(rep.Problems) != 4 {
		t.Fatalf("pass on A: %+v", rep)
	}
	for _, want := range []string{
		"latin1.md: not UTF-8 text: invalid byte 0xe9 at offset 3 (line 1): left alone",
		"tool.md: binary, not text: a NUL byte at offset 9 (line 1): left alone",
	} {
		if !slices.Contains(rep.Problems, want) {
			t.Errorf("problems %q, want %q", rep.Problems, want)
		}
	}
	ns.byContent(t, "no structure at all, one long line with a token [REDACTED:github-token] in it")
	if got := a.read(t, IndexFile); !strings.Contains(got, "ghp_") {
		t.Fatalf("the user's own file was rewritten: %q", got)
	}
	if got := a.read(t, "latin1.md"); got != "caf\xe9\n" || !utf8.ValidString(a.read(t, IndexFile)) {
		t.Fatalf("a non-UTF-8 file changed: %q", got)
	}

	// B's MEMORY.md is read-only: nothing is written, the pass says why.
	b.write(t, IndexFile, "- mine\n")
	if err := os.Chmod(filepath.Join(b.memDir(), IndexFile), 0o444); err != nil {
		t.Fatal(err)
	}
	reps, _ := b.bridge.Run(context.Background(), ns, Options{})
	if got := b.read(t, IndexFile); got != "- mine\n" || len(reps) != 1 || !strings.Contains(strings.Join(reps[0].Problems, "\n"), "read-only") {
		t.Fatalf("read-only MEMORY.md: %q, reports %+v", got, reps)
	}
	// A symlinked file on B's side is not written through either.
	if err := os.Symlink(outside, filepath.Join(b.memDir(), "linked.md")); err != nil {
		t.Fatal(err)
	}
	b.bridge.Run(context.Background(), ns, Options{})
	if data, _ := os.ReadFile(outside); string(data) != "- outside\n" {
		t.Fatalf("written through a symlink: %q", data)
	}
}

// TestBackups: each file the bridge replaces is copied first, and only
// the newest MaxBackups copies stay.
func TestBackups(t *testing.T) {
	ns, a, b := twoMachines(t)
	b.write(t, IndexFile, "- b's own\n")
	for i := range MaxBackups + 3 {
		a.write(t, IndexFile, "- fact "+strconv.Itoa(i)+"\n")
		a.run(t, ns)
		b.run(t, ns)
	}
	var copies []string
	filepath.Walk(filepath.Join(b.home, ".memmesh", "bridge", "backups"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			copies = append(copies, p)
		}
		return nil
	})
	if len(copies) != MaxBackups {
		t.Fatalf("%d backups kept, want %d", len(copies), MaxBackups)
	}
	data, _ := os.ReadFile(copies[len(copies)-1])
	if !strings.HasPrefix(string(data), "- b's own\n") {
		t.Fatalf("the newest backup holds %q", data)
	}
}

// TestListSaysWhy: a project with no remote and no mapping is skipped
// with the reason; one whose auto memory is off too.
func TestListSaysWhy(t *testing.T) {
	a := newMachine(t, "app", "")
	a.bridge.cfg.Namespace = func(path, remote string) string { return "" }
	ps, err := a.bridge.List(context.Background(), "")
	if err != nil || len(ps) != 1 || !strings.Contains(ps[0].Skipped, "has no remote") || ps[0].Path != a.project {
		t.Fatalf("List = %+v, %v", ps, err)
	}
	b := newMachine(t, "app", "github.com/acme/app")
	if err := os.WriteFile(filepath.Join(b.home, ".claude", "settings.json"), []byte(`{"autoMemoryEnabled": false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, _ = b.bridge.List(context.Background(), "")
	if len(ps) != 1 || !strings.Contains(ps[0].Skipped, "autoMemoryEnabled") {
		t.Fatalf("List = %+v", ps)
	}
}

// TestEditedHereAndInTheNamespace: an entry edited here after its memory
// changed on another machine (before this machine's pass) does not
// replace that change unseen: the two are a sync conflict, and the file
// keeps both texts.
func TestEditedHereAndInTheNamespace(t *testing.T) {
	ns, a, b := twoMachines(t)
	a.write(t, IndexFile, "- Run the linter before pushing\n")
	a.run(t, ns)
	b.run(t, ns)
	b.write(t, IndexFile, strings.Replace(b.read(t, IndexFile), "Run the linter", "Run golangci-lint", 1))
	b.run(t, ns)
	a.write(t, IndexFile, "- Run the linter and the tests before pushing\n")
	if rep := a.run(t, ns); rep.Updated != 1 || rep.Conflicts != 1 {
		t.Fatalf("pass on A: %+v", rep)
	}
	got := a.read(t, IndexFile)
	if !strings.Contains(got, "Run the linter and the tests before pushing") || !strings.Contains(got, "Run golangci-lint before pushing") {
		t.Fatalf("A's MEMORY.md lost a text:\n%s", got)
	}
}

// twoMachines is a namespace and two machines with the project at
// different paths, one remote.
func twoMachines(t *testing.T) (*store, *machine, *machine) {
	return newStore(), newMachine(t, "app", "github.com/acme/app"), newMachine(t, "elsewhere/app", "github.com/acme/app")
}

// TestReadOnlyDirectory: a memory directory the user made read-only gets
// nothing written, and the pass says why.
func TestReadOnlyDirectory(t *testing.T) {
	ns, a, b := twoMachines(t)
	a.write(t, IndexFile, "- from A\n")
	a.run(t, ns)
	b.write(t, IndexFile, "- mine\n")
	if err := os.Chmod(b.memDir(), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(b.memDir(), 0o755) })
	reps, _ := b.bridge.Run(context.Background(), ns, Options{})
	if got := b.read(t, IndexFile); got != "- mine\n" || len(reps) != 1 || !strings.Contains(strings.Join(reps[0].Problems, "\n"), "read-only") {
		t.Fatalf("read-only directory: MEMORY.md %q, reports %+v", got, reps)
	}
	if ents, _ := os.ReadDir(b.memDir()); len(ents) != 1 {
		t.Fatalf("files left in the read-only directory: %v", ents)
	}
}

// TestWrittenTextIsInert: a memory's control characters reach no file as
// they are: they are shown as visible stand-ins.
func TestWrittenTextIsInert(t *testing.T) {
	ns, a, b := twoMachines(t)
	a.write(t, IndexFile, "- colour \x1b[31mred\x1b[0m and a bell \a\n")
	a.run(t, ns)
	b.run(t, ns)
	got := b.read(t, IndexFile)
	if strings.ContainsAny(got, "\x1b\a") || !strings.Contains(got, "colour ␛[31mred␛[0m and a bell ␇") {
		t.Fatalf("B's MEMORY.md:\n%q", got)
	}
}

// TestEditOfADeletedMemory: an entry edited here whose memory was deleted
// (or erased) meanwhile becomes a memory anew instead of failing the pass.
func TestEditOfADeletedMemory(t *testing.T) {
	ns, a, _ := twoMachines(t)
	a.write(t, IndexFile, "- Cache keys include the tenant\n- Erased soon\n")
	a.run(t, ns)
	deleted := model.StatusDeleted
	ns.Update(context.Background(), ns.byContent(t, "Cache keys include the tenant").ID, api.UpdateRequest{Status: &deleted})
	ns.mu.Lock()
	delete(ns.mems, ns.byContentLocked("Erased soon"))
	ns.mu.Unlock()
	a.write(t, IndexFile, "- Cache keys include the tenant and region\n- Erased soon, or not\n")
	if rep := a.run(t, ns); rep.Imported != 2 || len(rep.Problems) != 0 {
		t.Fatalf("pass on A: %+v", rep)
	}
	ns.byContent(t, "Cache keys include the tenant and region")
	ns.byContent(t, "Erased soon, or not")
}

// TestManagedPartDroppedWhole: a rewrite of MEMORY.md that drops the
// managed part whole (Claude Code reorganising its index) forgets
// nothing: the part is written again. Deleting one of its entries
// forgets that one.
func TestManagedPartDroppedWhole(t *testing.T) {
	ns, a, b := twoMachines(t)
	a.write(t, IndexFile, "- one from A\n- two from A\n")
	a.run(t, ns)
	b.write(t, IndexFile, "- B's own\n")
	b.run(t, ns)
	b.write(t, IndexFile, "# Reorganised\n- B's own\n")
	if rep := b.run(t, ns); rep.Archived != 0 {
		t.Fatalf("pass after the managed part was dropped: %+v", rep)
	}
	got := b.read(t, IndexFile)
	if !strings.HasPrefix(got, "# Reorganised\n- B's own\n") || !strings.Contains(got, "one from A") || !strings.Contains(got, "two from A") {
		t.Fatalf("B's MEMORY.md:\n%s", got)
	}
	i := strings.Index(got, "- one from A")
	j := i + strings.Index(got[i:], "\n") + 1
	b.write(t, IndexFile, got[:i]+got[j:])
	if rep := b.run(t, ns); rep.Archived != 1 {
		t.Fatalf("pass after an entry of the managed part was deleted: %+v", rep)
	}
}

// TestEntryAlreadyInTheNamespace: an entry whose text a memory of the
// namespace holds already (captured another way) makes that memory auto
// memory's, and it reaches the other machines' files.
func TestEntryAlreadyInTheNamespace(t *testing.T) {
	ns, a, b := twoMachines(t)
	if _, err := ns.Remember(context.Background(), api.RememberRequest{Namespace: "app", Content: "Use UTC in logs"}); err != nil {
		t.Fatal(err)
	}
	a.write(t, IndexFile, "- Use UTC in logs\n")
	a.run(t, ns)
	b.run(t, ns)
	if got := b.read(t, IndexFile); !strings.Contains(got, "- Use UTC in logs <!-- mm:") {
		t.Fatalf("B's MEMORY.md:\n%s", got)
	}
}

// TestProjectOption: --project names the project of a directory, one
// Claude Code has not run in included (its folder is made by the pass),
// and refuses what is not a directory.
func TestProjectOption(t *testing.T) {
	ns, a, _ := twoMachines(t)
	a.write(t, IndexFile, "- from A\n")
	a.run(t, ns)
	other := filepath.Join(t.TempDir(), "fresh")
	gitInit(t, other, "github.com/acme/app")
	reps, err := a.bridge.Run(context.Background(), ns, Options{Project: filepath.Join(other)})
	if err != nil || len(reps) != 1 || reps[0].Path != other {
		t.Fatalf("Run(--project %s) = %+v, %v", other, reps, err)
	}
	data, err := os.ReadFile(filepath.Join(a.home, ".claude", "projects", EncodePath(other), "memory", IndexFile))
	if err != nil || !strings.Contains(string(data), "- from A <!-- mm:") {
		t.Fatalf("the fresh project's MEMORY.md: %q, %v", data, err)
	}
	if _, err := a.bridge.Run(context.Background(), ns, Options{Project: filepath.Join(other, "missing")}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a missing directory: %v", err)
	}
}

// TestWriteBounds: a memory too long for a note is left out of the files,
// and a topic file stays within MaxTopicBytes; the pass says so.
func TestWriteBounds(t *testing.T) {
	ns, a, _ := twoMachines(t)
	ctx := context.Background()
	remember := func(content, session string) {
		if _, err := ns.Remember(ctx, api.RememberRequest{Namespace: "app", Content: content, Tags: []string{Tag}, Agent: Agent, Session: session}); err != nil {
			t.Fatal(err)
		}
	}
	remember(strings.Repeat("long ", MaxEntryBytes/5+1), "")
	for i := range 100 {
		remember(strconv.Itoa(i)+strings.Repeat(" detail", 1000), "github.com/acme/app#big.md")
	}
	rep := a.run(t, ns)
	problems := strings.Join(rep.Problems, "\n")
	if !strings.Contains(problems, "1 memories of over") || !strings.Contains(problems, "big.md: ") {
		t.Fatalf("problems: %q", rep.Problems)
	}
	big := a.read(t, "big.md")
	if len(big) > MaxTopicBytes || strings.Count(big, "<!-- mm:") < 50 {
		t.Fatalf("big.md: %d bytes, %d entries", len(big), strings.Count(big, "<!-- mm:"))
	}
	if strings.Contains(a.read(t, IndexFile), "long long") {
		t.Fatal("the long memory was written")
	}
}

// TestEntryMovedBetweenFiles: an entry moved from a topic file into
// MEMORY.md keeps its memory live, and stays in the file it moved to.
func TestEntryMovedBetweenFiles(t *testing.T) {
	ns, a, _ := twoMachines(t)
	a.write(t, IndexFile, "- an index line\n")
	a.write(t, "debugging.md", "- Flaky test: the clock\n")
	a.run(t, ns)
	a.write(t, IndexFile, "- an index line\n- Flaky test: the clock\n")
	a.write(t, "debugging.md", "")
	if rep := a.run(t, ns); rep.Archived != 0 {
		t.Fatalf("pass after the move: %+v", rep)
	}
	a.run(t, ns)
	if m := ns.byContent(t, "Flaky test: the clock"); m.Status != model.StatusActive {
		t.Fatalf("the moved entry's memory is %s", m.Status)
	}
	if got := a.read(t, IndexFile); got != "- an index line\n- Flaky test: the clock\n" {
		t.Fatalf("MEMORY.md after the move:\n%q", got)
	}
}

// TestNewLineIsNoDeletedManagedEntry: a line of the user's added where an
// entry of the managed part was deleted is a new memory, not an edit of
// the other machine's.
func TestNewLineIsNoDeletedManagedEntry(t *testing.T) {
	ns, a, b := twoMachines(t)
	a.write(t, IndexFile, "- from A\n")
	a.run(t, ns)
	b.run(t, ns)
	b.write(t, IndexFile, "- B's own line\n"+beginLine+"\n"+endMark+"\n")
	if rep := b.run(t, ns); rep.Imported != 1 || rep.Archived != 1 {
		t.Fatalf("pass on B: %+v", rep)
	}
	if m := ns.byContent(t, "from A"); m.Status != model.StatusArchived {
		t.Fatalf("A's memory is %s, want archived (its entry was deleted)", m.Status)
	}
}

// TestSecretsNeverLeave: no secret of the shared corpus written in an
// entry reaches the namespace or another machine's file.
func TestSecretsNeverLeave(t *testing.T) {
	ns, a, b := twoMachines(t)
	var sb strings.Builder
	var all []string
	for _, c := range secretstest.Cases(t) {
		if !strings.Contains(c.Input, "\n") {
			sb.WriteString("- " + c.Input + "\n")
			all = append(all, c.Secrets...)
		}
	}
	if len(all) < 10 {
		t.Fatalf("only %d secrets in the corpus's one-line cases", len(all))
	}
	a.write(t, IndexFile, sb.String())
	a.run(t, ns)
	b.run(t, ns)
	more, _ := os.ReadFile(filepath.Join(b.memDir(), OverflowFile))
	got := b.read(t, IndexFile) + string(more)
	ms, _ := ns.List(context.Background(), api.ListRequest{Namespace: "app", Statuses: []model.Status{model.StatusActive}})
	for _, m := range ms {
		got += m.Content
	}
	for _, s := range all {
		if strings.Contains(got, s) {
			t.Errorf("a secret left machine A: %q", s)
		}
	}
}
