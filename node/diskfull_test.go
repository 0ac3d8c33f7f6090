package node

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
)

// fullDisk is more free space than any disk has: a node that keeps it in
// reserve runs as on a full disk.
const fullDisk = 1 << 60

// TestDiskFull runs a node on a disk with less free space than its
// reserve: every write fails with ErrDiskFull, saying what to do, and
// changes nothing; every read goes on.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	n := testNode(t, home)
	kept := remember(t, n, api.RememberRequest{Namespace: "full", Content: "written while the disk had space"})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{Home: home, Logger: testLogger(t), MinFreeSpace: fullDisk})
	if err != nil {
		t.Fatalf("New on a full disk: %v", err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })

	writes := map[string]func() error{
		"remember": func() error {
			_, err := n.Remember(ctx, api.RememberRequest{Namespace: "full", Content: "refused on a full disk"})
			return err
		},
		"forget": func() error { _, err := n.Forget(ctx, kept.ID); return err },
		"link": func() error {
			_, err := n.Link(ctx, api.LinkRequest{From: kept.ID, Rel: "related_to", To: "file:main.go"})
			return err
		},
	}
	for name, write := range writes {
		err := write()
		if !errors.Is(err, api.ErrDiskFull) || !strings.HasPrefix(err.Error(), "disk full: ") || !strings.Contains(err.Error(), "free some space") {
			t.Errorf("%s on a full disk: %v, want ErrDiskFull saying what to do", name, err)
		}
	}

	if m, err := n.Get(ctx, kept.ID); err != nil || m.Status != "active" {
		t.Fatalf("get on a full disk: %+v, %v", m, err)
	}
	if l, err := n.List(ctx, api.ListRequest{Namespace: "full"}); err != nil || len(l) != 1 {
		t.Fatalf("list on a full disk: %d memories, %v", len(l), err)
	}
	if res, err := n.Search(ctx, api.SearchRequest{Namespace: "full", Query: "written disk"}); err != nil || len(res.Results) != 1 {
		t.Fatalf("search on a full disk: %+v, %v", res, err)
	}
	if _, err := n.Context(ctx, api.ContextRequest{Namespace: "full"}); err != nil {
		t.Fatalf("context on a full disk: %v", err)
	}
	if h, err := n.Export(ctx, io.Discard); err != nil || h.Memories != 1 {
		t.Fatalf("export on a full disk: %+v, %v", h, err)
	}
}
