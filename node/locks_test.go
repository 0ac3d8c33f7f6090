package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// The tests below run a racing write in the window between a writer's
// look at documents and its locks (Node.checked): a write that took the
// locks and looked again under them keeps what the racing write did.

// entryOf is n's stored document kind/id as a peer sends it.
func entryOf(t *testing.T, n *Node, kind storage.Kind, id string) transport.Entry {
	t.Helper()
	rec, err := n.store.Get(kind, id)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := n.store.GetDoc(kind, id)
	if err != nil {
		t.Fatal(err)
	}
	return transport.Entry{Kind: byte(kind), ID: id, Heads: rec.Heads, Doc: doc}
}

// onceChecked sets n's checked hook to run race the first time a writer
// looked at the memory id, and returns whether it ran.
func onceChecked(n *Node, id string, race func()) (ran func() bool) {
	done := false
	n.checked = func(ids []string) {
		if !done && slices.Contains(ids, id) {
			done = true
			race()
		}
	}
	return func() bool { return done }
}

// importWhilePulling imports file into a new node with a mesh, which
// applies pulled (a peer's document) the first time the import looked at
// the document id, and returns the node and the import's result.
func importWhilePulling(t *testing.T, file []byte, id string, pulled transport.Entry) (*Node, api.ImportResult) {
	t.Helper()
	dst := meshNodeWith(t, "", 1, nil, mesh.Config{SyncInterval: time.Hour})
	ran := onceChecked(dst, id, func() {
		if err := dst.mesh.Apply("peer", []transport.Entry{pulled}); err != nil {
			t.Error(err)
		}
	})
	res, err := dst.Import(context.Background(), bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if !ran() {
		t.Fatalf("the import never looked at %s", id)
	}
	return dst, res
}

// TestImportKeepsAVersionPulledMeanwhile: a memory an import found absent
// arrives from a peer before the import stores it; the peer's version
// stays, not the file's.
func TestImportKeepsAVersionPulledMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := testNode(t, "")
	m := remember(t, src, api.RememberRequest{Content: "The deploy key lives in the vault under ops/deploy"})
	file := exportOf(t, src)
	edited := "The deploy key moved to the vault under ops/keys/deploy"
	if _, err := src.Update(ctx, m.ID, api.UpdateRequest{Content: &edited}); err != nil {
		t.Fatal(err)
	}
	pulled := entryOf(t, src, storage.KindMemory, m.ID[2:])
	dst, res := importWhilePulling(t, file, m.ID[2:], pulled)
	got, err := dst.Get(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != edited || !slices.Equal(got.Heads, pulled.Heads) {
		t.Fatalf("after the import: %q at %v; want the pulled version %q at %v", got.Content, got.Heads, edited, pulled.Heads)
	}
	if res.Imported != 0 || res.Skipped != 1 {
		t.Fatalf("import = %+v; want the memory skipped", res)
	}
}

// TestImportDoesNotBringBackAMemoryPurgedMeanwhile: a memory's tombstone
// arrives from a peer after an import found the memory absent and not
// purged; the import does not store it again.
func TestImportDoesNotBringBackAMemoryPurgedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := testNode(t, "")
	m := remember(t, src, api.RememberRequest{Content: "The staging database password is in 1Password, vault ops"})
	file := exportOf(t, src)
	if _, err := src.Purge(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	dst, res := importWhilePulling(t, file, m.ID[2:], entryOf(t, src, storage.KindPurge, m.ID[2:]))
	if _, err := dst.store.Get(storage.KindMemory, m.ID[2:]); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the purged memory's record after the import: %v; want none", err)
	}
	if _, err := dst.Get(ctx, m.ID); !errors.Is(err, api.ErrPurged) {
		t.Fatalf("after the import: %v; want purged", err)
	}
	if res.Imported != 0 || res.Erased != 1 {
		t.Fatalf("import = %+v; want the memory left out as erased", res)
	}
}

// edgesAt returns the ids of the stored edges, live or not, with the
// memory id at an end.
func edgesAt(t *testing.T, n *Node, id string) []string {
	t.Helper()
	var out []string
	err := n.store.All(storage.KindEdge, func(rec storage.Record) error {
		var e model.Edge
		if err := json.Unmarshal(rec.Value, &e); err != nil {
			return err
		}
		if e.From == id || e.To == id {
			out = append(out, rec.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportLeavesNoEdgeAtAMemoryPurgedMeanwhile: a memory is purged
// after an import found it stored, about to store an edge at it; the edge
// is not stored.
func TestImportLeavesNoEdgeAtAMemoryPurgedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := testNode(t, "")
	a := remember(t, src, api.RememberRequest{Content: "Releases are cut from the main branch every Tuesday"}).ID
	b := remember(t, src, api.RememberRequest{Content: "The changelog is generated from conventional commits"}).ID
	if _, err := src.Link(ctx, api.LinkRequest{From: b, Rel: "depends_on", To: a}); err != nil {
		t.Fatal(err)
	}
	file := exportOf(t, src)

	dst := testNode(t, "")
	// The memories' batch looks at both; the edges' batch at a first.
	looks := 0
	dst.checked = func(ids []string) {
		if slices.Contains(ids, a[2:]) {
			if looks++; looks == 2 {
				if _, err := dst.Purge(ctx, a); err != nil {
					t.Error(err)
				}
			}
		}
	}
	res, err := dst.Import(ctx, bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if looks != 2 {
		t.Fatalf("the import looked at the memory %d times, want 2 (its batch, then the edge's)", looks)
	}
	if ids := edgesAt(t, dst, a); len(ids) > 0 {
		t.Fatalf("edges %v left at the purged memory", ids)
	}
	if res.Edges != 0 || res.EdgesSkipped != 1 {
		t.Fatalf("import = %+v; want the edge skipped", res)
	}
}

// TestAutoLinkIsNotLeftAtAMemoryPurgedMeanwhile: a near duplicate is
// purged after a new memory found it, before its auto-link is stored; the
// memory is stored without the link, and does not report it as similar.
func TestAutoLinkIsNotLeftAtAMemoryPurgedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	text := "Run the integration tests with make itest before pushing to the release branch"
	first := remember(t, n, api.RememberRequest{Content: text})
	ran := onceChecked(n, first.ID[2:], func() {
		if _, err := n.Purge(ctx, first.ID); err != nil {
			t.Error(err)
		}
	})
	second, err := n.Remember(ctx, api.RememberRequest{Content: strings.Replace(text, "Run", "Always run", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if !ran() {
		t.Fatal("the new memory never looked at its near duplicate")
	}
	if ids := edgesAt(t, n, first.ID); len(ids) > 0 {
		t.Fatalf("edges %v left at the purged memory", ids)
	}
	if len(second.Similar) != 0 {
		t.Fatalf("the new memory reports %+v as similar; it was purged", second.Similar)
	}
	if !has(n, second.ID) {
		t.Fatal("the new memory was not stored")
	}
}

// TestImportKeepsNamespaceSettingsPulledMeanwhile: a namespace's settings
// an import found absent arrive from a peer before the import stores the
// file's; the peer's (newer) settings stay.
func TestImportKeepsNamespaceSettingsPulledMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := testNode(t, "")
	local, all := model.SyncLocal, model.SyncAll
	if _, err := src.SetNamespace(ctx, "notes", api.NamespaceChange{Sync: &local}); err != nil {
		t.Fatal(err)
	}
	file := exportOf(t, src)
	if _, err := src.SetNamespace(ctx, "notes", api.NamespaceChange{Sync: &all}); err != nil {
		t.Fatal(err)
	}
	id := crdt.MeshID(model.MeshNamespace, "notes")
	dst, res := importWhilePulling(t, file, id, entryOf(t, src, storage.KindMesh, id))
	if dst.mesh.LocalOnly("notes") {
		t.Fatal("the import's older setting (local-only) replaced the one pulled meanwhile (shared)")
	}
	if res.Namespaces != 0 || res.NamespacesKept != 1 {
		t.Fatalf("import = %+v; want the namespace's settings kept", res)
	}
}
