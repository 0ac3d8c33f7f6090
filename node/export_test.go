package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/internal/mutate"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// richHome fills a node with what a backup must keep: revisions, every
// status, namespace settings, manual and automatic edges with notes,
// strength and validity, an unlinked edge, a compaction and a purge.
func richHome(t *testing.T, n *Node) (purged string) {
	t.Helper()
	ctx := context.Background()
	rem := func(req api.RememberRequest) string { return remember(t, n, req).ID }
	pool := rem(api.RememberRequest{Namespace: "backend", Kind: "decision", Tier: model.TierHuman, Tags: []string{"db", "adr"},
		Content: "Use pgx, not lib/pq: see internal/db/pool.go"})
	old := rem(api.RememberRequest{Namespace: "backend", Kind: "decision", Content: "Use lib/pq for Postgres in internal/db/pool.go"})
	retry := rem(api.RememberRequest{Namespace: "backend", Content: "Retry idempotent calls with backoff.Retry"})
	cache := rem(api.RememberRequest{Namespace: "backend", Content: "The cache is warmed on start by cmd/warm"})
	dup := rem(api.RememberRequest{Namespace: "backend", Content: "The cache is warmed on start by cmd/warm now"}) // auto-linked
	task := rem(api.RememberRequest{Namespace: "frontend", Kind: "task", TTL: "30d", Content: "Move the build to vite"})
	gone := rem(api.RememberRequest{Namespace: "frontend", Content: "Deleted note about webpack"})
	arch := rem(api.RememberRequest{Namespace: "frontend", Content: "Archived note about babel"})
	purged = rem(api.RememberRequest{Namespace: "frontend", Content: "A secret we purge"})
	content := "Use pgx v5, not lib/pq: see internal/db/pool.go and internal/db/tx.go"
	if _, err := n.Update(ctx, pool, api.UpdateRequest{Content: &content}); err != nil {
		t.Fatal(err)
	}
	var members []string
	for i := range 3 {
		members = append(members, rem(api.RememberRequest{Namespace: "backend", Content: fmt.Sprintf("Flaky test note %d about the runner", i)}))
	}
	if _, err := n.CompactApply(ctx, api.CompactApplyRequest{Members: members, Summary: "The runner's flaky tests, summarised"}); err != nil {
		t.Fatal(err)
	}
	strength := 0.4
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, l := range []api.LinkRequest{
		{From: pool, Rel: "supersedes", To: old, Notes: "pgx replaces lib/pq"},
		{From: retry, Rel: "contradicts", To: cache},
		{From: pool, Rel: "touches", To: "file:internal/db/pool.go:10-40", Strength: &strength, ValidFrom: from},
		{From: retry, Rel: "depends_on", To: pool},
		{From: task, Rel: "related_to", To: "url:https://vite.dev/guide"},
		{From: arch, Rel: "related_to", To: task},
	} {
		if _, err := n.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Invalidate(ctx, retry, "depends_on", pool); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Unlink(ctx, task, "related_to", "url:https://vite.dev/guide"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Link(ctx, api.LinkRequest{From: purged, Rel: "related_to", To: task}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Forget(ctx, arch); err != nil {
		t.Fatal(err)
	}
	local, thirty := model.SyncLocal, "30d"
	if _, err := n.SetNamespace(ctx, "frontend", api.NamespaceChange{Sync: &local, StaleAfter: &thirty}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.SetNamespace(ctx, "backend", api.NamespaceChange{StaleAfter: &thirty}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Purge(ctx, purged); err != nil {
		t.Fatal(err)
	}
	if e, err := n.erasures(strings.TrimPrefix(dup, IDPrefix)); err != nil || len(e) != 1 {
		t.Fatalf("the near duplicate has edges %v (%v), want its auto-link", e, err)
	}
	return purged
}

// contents is everything a home holds that a backup must carry, with what
// differs between homes by nature (Automerge heads, ids derived from
// them) left out.
type contents struct {
	Memories   map[string]model.Memory
	Edges      map[string]model.Edge
	Namespaces map[string]model.MeshRecord
	Purged     map[string]crdt.Tombstone
}

func readContents(t *testing.T, n *Node) contents {
	t.Helper()
	c := contents{map[string]model.Memory{}, map[string]model.Edge{}, map[string]model.MeshRecord{}, map[string]crdt.Tombstone{}}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(n.store.All(storage.KindMemory, func(rec storage.Record) error {
		var m model.Memory
		must(json.Unmarshal(rec.Value, &m))
		m.Heads = nil
		c.Memories[m.ID] = m
		return nil
	}))
	must(n.store.All(storage.KindEdge, func(rec storage.Record) error {
		var e model.Edge
		must(json.Unmarshal(rec.Value, &e))
		e.Heads = nil
		c.Edges[e.ID] = e
		return nil
	}))
	must(n.store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		must(json.Unmarshal(rec.Value, &r))
		if r.What == model.MeshNamespace {
			c.Namespaces[r.Key] = model.MeshRecord{Key: r.Key, Sync: r.Sync, StaleDays: r.StaleDays}
		}
		return nil
	}))
	must(n.store.All(storage.KindPurge, func(rec storage.Record) error {
		ts, err := crdt.DecodeTombstone(rec.Value)
		must(err)
		c.Purged[ts.ID] = ts
		return nil
	}))
	return c
}

func exportOf(t *testing.T, n *Node) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := n.Export(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// graphAnswers is what graph and impact answer for every memory and for a
// file: ids and edges, in a stable order.
func graphAnswers(t *testing.T, n *Node, starts []string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, s := range starts {
		g, err := n.Traverse(ctx, api.TraverseRequest{Start: s, Depth: 3})
		if err != nil {
			t.Fatal(err)
		}
		var nodes, edges []string
		for _, v := range g.Nodes {
			nodes = append(nodes, fmt.Sprintf("%s@%d", v.ID, v.Depth))
		}
		for _, e := range g.Edges {
			edges = append(edges, fmt.Sprintf("%s-%s->%s %q %.2f %s", e.From, e.Rel, e.To, e.Notes, e.Strength, e.Origin))
		}
		slices.Sort(nodes)
		slices.Sort(edges)
		fmt.Fprintf(&b, "graph %s: %v %v\n", s, nodes, edges)
	}
	imp, err := n.Impact(ctx, api.ImpactRequest{Path: "internal/db/pool.go"})
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	for _, i := range imp {
		hits = append(hits, fmt.Sprintf("%s@%d %s", i.Memory.ID, i.Depth, i.Via))
	}
	slices.Sort(hits)
	fmt.Fprintf(&b, "impact: %v\n", hits)
	return b.String()
}

func TestExportImportRoundTripsTheWholeGraph(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testNode(t, "")
	purged := richHome(t, a)
	want := readContents(t, a)
	if len(want.Edges) < 8 || len(want.Namespaces) != 2 || len(want.Purged) != 1 {
		t.Fatalf("the home holds %d edges, %d namespace settings, %d purges: the test proves less than it should",
			len(want.Edges), len(want.Namespaces), len(want.Purged))
	}
	file := exportOf(t, a)

	b := testNode(t, "")
	res, err := b.Import(ctx, bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != len(want.Memories) || res.Edges != len(want.Edges) || res.Namespaces != 2 || res.Purged != 1 {
		t.Fatalf("import = %+v, want %d memories, %d edges, 2 namespaces, 1 purge", res, len(want.Memories), len(want.Edges))
	}
	got := readContents(t, b)
	for _, part := range []struct {
		name      string
		want, got any
	}{{"memories", want.Memories, got.Memories}, {"edges", want.Edges, got.Edges}, {"namespaces", want.Namespaces, got.Namespaces}, {"purges", want.Purged, got.Purged}} {
		if !reflect.DeepEqual(part.want, part.got) {
			t.Errorf("%s differ after the round trip:\nwant %+v\ngot  %+v", part.name, part.want, part.got)
		}
	}
	var starts []string
	for id := range want.Memories {
		starts = append(starts, DisplayID(id))
	}
	slices.Sort(starts)
	if wg, gg := graphAnswers(t, a, starts), graphAnswers(t, b, starts); wg != gg {
		t.Errorf("graph and impact answer differently after the import:\nbefore %s\nafter  %s", wg, gg)
	}
	if _, err := b.Get(ctx, purged); !errors.Is(err, api.ErrPurged) {
		t.Errorf("the purged memory in the new home: %v, want purged", err)
	}

	// Again: nothing new.
	again, err := b.Import(ctx, bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if again.Imported != 0 || again.Edges != 0 || again.Namespaces != 0 || again.Skipped != len(want.Memories) ||
		again.EdgesSkipped != len(want.Edges) || again.NamespacesKept != 2 {
		t.Fatalf("second import = %+v, want everything skipped", again)
	}
}

func TestImportNeverBringsBackAPurgedMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	id := remember(t, n, api.RememberRequest{Content: "The staging password rotates monthly"}).ID
	other := remember(t, n, api.RememberRequest{Content: "Staging lives in eu-west-1"}).ID
	if _, err := n.Link(ctx, api.LinkRequest{From: other, Rel: "related_to", To: id}); err != nil {
		t.Fatal(err)
	}
	before := exportOf(t, n) // a backup made before the purge
	if _, err := n.Purge(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, err := n.Import(ctx, bytes.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 0 || res.Erased != 1 || res.Edges != 0 {
		t.Fatalf("import of an older backup = %+v, want the purged memory left out", res)
	}
	if _, err := n.Get(ctx, id); !errors.Is(err, api.ErrPurged) {
		t.Fatalf("after importing an older backup: %v, want still purged", err)
	}

	// A home that imports the later backup first erases what an older one
	// brings: the tombstone travels with the backup.
	fresh := testNode(t, "")
	if _, err := fresh.Import(ctx, bytes.NewReader(before)); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Import(ctx, bytes.NewReader(exportOf(t, n))); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Get(ctx, id); !errors.Is(err, api.ErrPurged) {
		t.Fatalf("a home that had the memory, after importing a backup with its tombstone: %v, want purged", err)
	}
	waitUntil(t, "the erasure expunged", func() bool { return !fresh.store.ErasePending() })
}

// TestInterruptedImportCompletesWhenRunAgain cuts an import off after half
// of its lines, and after a bad line; importing the whole file again
// completes it.
func TestInterruptedImportCompletesWhenRunAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testNode(t, "")
	richHome(t, a)
	file := exportOf(t, a)
	lines := bytes.SplitAfter(file, []byte("\n"))
	half := bytes.Join(lines[:len(lines)/2], nil)

	b := testNode(t, "")
	first, err := b.Import(ctx, bytes.NewReader(half))
	if err != nil {
		t.Fatal(err)
	}
	bad := append(slices.Clone(half), []byte("{\"type\":\"memory\",\"id\":\"m-nope\"}\n")...)
	bad = append(bad, bytes.Join(lines[len(lines)/2:], nil)...)
	_, err = b.Import(ctx, bytes.NewReader(bad))
	if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("line %d", len(lines)/2+1)) ||
		!strings.Contains(err.Error(), "importing the file again") {
		t.Fatalf("import with a bad line: %v; want the line and how to go on", err)
	}
	rest, err := b.Import(ctx, bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if rest.Skipped != first.Imported || first.Imported == 0 || rest.Imported == 0 {
		t.Fatalf("first part %+v, then the whole file %+v: want the first part skipped and the rest imported", first, rest)
	}
	if want, got := readContents(t, a), readContents(t, b); !reflect.DeepEqual(want, got) {
		t.Fatalf("after completing the import, the homes differ:\nwant %+v\ngot  %+v", want, got)
	}
}

func TestCheckImportFindsTheFirstBadLine(t *testing.T) {
	t.Parallel()
	n := testNode(t, "")
	richHome(t, n)
	file := exportOf(t, n)
	c, err := CheckImport(bytes.NewReader(file))
	if err != nil || c.Header == nil || c.Header.Format != api.ExportFormat || c.Records != c.Header.Records() {
		t.Fatalf("CheckImport of an export = %+v, %v; want its header and %d records", c, err, c.Header.Records())
	}
	for _, tc := range []struct{ name, line, want string }{
		{"unknown type", `{"type":"gadget"}`, "type \"gadget\""},
		{"header not first", `{"type":"header","format":"memmesh-export","version":2}`, "first line"},
		{"bad edge", `{"type":"edge","from":"m-x","rel":"Not A Rel","to":"file:a","created_at":"2026-01-01T00:00:00Z"}`, "relation"},
		{"bad namespace", `{"type":"namespace","namespace":"Bad Name!","sync":"all"}`, "namespace"},
		{"bad tombstone", `{"type":"purged","id":"m-zz","at":"2026-01-01T00:00:00Z","by":"X"}`, "tombstone"},
		{"not json", `{"type":`, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := io.MultiReader(bytes.NewReader(file), strings.NewReader(tc.line+"\n"))
			_, err := CheckImport(in)
			if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("line %d", c.Lines+1)) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckImport = %v; want line %d and %q", err, c.Lines+1, tc.want)
			}
		})
	}
	newer := `{"type":"header","format":"memmesh-export","version":99}` + "\n"
	if _, err := CheckImport(strings.NewReader(newer)); err == nil || !strings.Contains(err.Error(), "newer memmesh") {
		t.Fatalf("CheckImport of a newer format: %v", err)
	}
}

// TestImportKeepsSecretsOut: an import file is input like any other: the
// secrets in its text, labels and edge notes are scrubbed, and an error
// about a line does not quote them.
func TestImportKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	const token = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	id, other := crdt.NewID(), crdt.NewID()
	file := fmt.Sprintf(`{"type":"memory","id":"m-%s","namespace":"x","title":"t %[3]s","kind":"note","tier":"human","confidence":1,"status":"active","provenance":{"device":"D %[3]s","agent":"a %[3]s","session":"s %[3]s","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"},"revisions":[{"id":"%[4]s","text":"text %[3]s","device":"D %[3]s","at":"2026-01-01T00:00:00Z"}]}
{"type":"memory","id":"m-%[2]s","namespace":"x","content":"other","kind":"note","tier":"human","confidence":1,"status":"active","provenance":{"device":"D","created_at":"2026-01-01T00:00:00Z"}}
{"type":"edge","from":"m-%[1]s","rel":"related_to","to":"url:https://h/x?token=%[3]s","notes":"n %[3]s","strength":1,"created_at":"2026-01-01T00:00:00Z"}
`, id, other, token, crdt.NewID())
	if _, err := n.Import(ctx, strings.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	if out := exportOf(t, n); bytes.Contains(out, []byte(token)) {
		t.Fatalf("the token reached the store:\n%s", out)
	}
	_, err := n.Import(ctx, strings.NewReader(`{"type":"edge","from":"m-x","rel":"Bad `+token+`","to":"file:a","created_at":"2026-01-01T00:00:00Z"}`+"\n"))
	if err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("a bad line's error: %v; want one that does not quote the token", err)
	}
}

// TestBriefFromPeersInTheSameMillisecond: a memory from another machine
// that arrives in the millisecond the brief was last read is new to the
// next brief (memories keep their times to the millisecond).
func TestBriefFromPeersInTheSameMillisecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 0, 0, 123_456_789, time.UTC)
	n, err := New(Config{Home: t.TempDir(), Logger: testLogger(t), Clock: clock.WithNow(func() time.Time { return at })})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Context(ctx, api.ContextRequest{Namespace: "web"}); err != nil {
		t.Fatal(err)
	}
	stamp := at.Truncate(time.Millisecond).Format(time.RFC3339Nano)
	line := fmt.Sprintf(`{"type":"memory","id":"m-%s","namespace":"web","content":"Images go through imgproxy","kind":"note","tier":"agent","confidence":0.7,"status":"active","provenance":{"device":"OTHERDEVICE","created_at":%q,"updated_at":%q}}`+"\n",
		crdt.NewID(), stamp, stamp)
	if _, err := n.Import(ctx, strings.NewReader(line)); err != nil {
		t.Fatal(err)
	}
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.FromPeers) != 1 {
		t.Fatalf("from_peers = %+v, want the memory that arrived in the same millisecond", b.FromPeers)
	}
}

// FuzzCheckImport: any bytes given as an import file are accepted or
// refused with ErrInvalid naming a line, never a panic; what is accepted
// imports without an error other than ErrInvalid.
func FuzzCheckImport(f *testing.F) {
	src := testNode(f, "")
	ctx := context.Background()
	a, err := src.Remember(ctx, api.RememberRequest{Namespace: "x", Content: "a seed memory about builds", Tags: []string{"ci"}})
	if err != nil {
		f.Fatal(err)
	}
	b, err := src.Remember(ctx, api.RememberRequest{Namespace: "x", Content: "another seed memory about caches"})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := src.Link(ctx, api.LinkRequest{From: a.ID, Rel: "related_to", To: b.ID, Notes: "n"}); err != nil {
		f.Fatal(err)
	}
	stale := "30d"
	if _, err := src.SetNamespace(ctx, "x", api.NamespaceChange{StaleAfter: &stale}); err != nil {
		f.Fatal(err)
	}
	if _, err := src.Purge(ctx, b.ID); err != nil {
		f.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := src.Export(ctx, &file); err != nil {
		f.Fatal(err)
	}
	f.Add(file.Bytes())
	f.Add([]byte("{\"type\":\"header\",\"format\":\"memmesh-export\",\"version\":2}\n{}\n"))
	mutate.Seeds(f, 200, file.Bytes())
	dst := testNode(f, "")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := CheckImport(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), "line ") {
				t.Fatalf("CheckImport: %v; want ErrInvalid naming the line", err)
			}
			return
		}
		if _, err := dst.Import(ctx, bytes.NewReader(data)); err != nil && !errors.Is(err, api.ErrInvalid) {
			t.Fatalf("Import of a file CheckImport accepts: %v", err)
		}
	})
}

// TestImportSkipsAMemoryWhileItsBatchCommits: a batch of an import
// commits while the next one is read and built; a memory that the file
// holds twice, once in each, is stored once.
func TestImportSkipsAMemoryWhileItsBatchCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var file bytes.Buffer
	if err := corpus.New(7).WriteImport(&file, importBatch+100); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(file.Bytes(), []byte("\n"))
	// The first memory again, in the second batch.
	twice := slices.Concat(file.Bytes(), lines[0])
	n := testNode(t, "")
	res, err := n.Import(ctx, bytes.NewReader(twice))
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != importBatch+100 || res.Skipped != 1 {
		t.Fatalf("import = %+v; want %d imported and the repeated memory skipped", res, importBatch+100)
	}
	list, err := n.List(ctx, api.ListRequest{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != importBatch+100 {
		t.Fatalf("%d memories listed, want %d", len(list), importBatch+100)
	}
}
