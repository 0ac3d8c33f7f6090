package memmesh_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFrontEndsLinkNoStorageOrMesh holds the package map: the front ends,
// the packages they share with node, extract (pure rules over a session),
// transcript (readers of files), bridge (auto memory's files),
// agentfiles (agent instruction files, through the API), rules (the
// rules of a memory's fields, which a front end may check) and embed (the
// embedders search by meaning calls, builtin and over HTTP) link neither the
// store, nor the mesh's transport, nor Automerge or tree-sitter (cgo).
func TestFrontEndsLinkNoStorageOrMesh(t *testing.T) {
	light := []string{"./api", "./model", "./mcp", "./mcp/servermemory", "./web", "./web/ui", "./internal/localhttp", "./search", "./graph", "./internal/secrets", "./extract", "./transcript", "./bridge", "./agentfiles", "./rules", "./embed", "./embed/model2vec"}
	heavy := []string{
		"github.com/cockroachdb/pebble/v2",
		"github.com/quic-go/quic-go",
		"github.com/hashicorp/memberlist",
		"github.com/automerge/automerge-go",
		"github.com/smacker/go-tree-sitter",
	}
	for _, pkg := range light {
		for _, dep := range deps(t, pkg) {
			for _, h := range heavy {
				if dep == h {
					t.Errorf("%s depends on %s", pkg, h)
				}
			}
		}
	}
}

// TestOnlySearchLinksBleve holds that the index stays behind search: api
// owns the shapes search answers in (search imports api, never the
// reverse), so the packages that speak api (the front ends, bridge,
// agentfiles, the mesh and the embedders) link none of bleve.
func TestOnlySearchLinksBleve(t *testing.T) {
	for _, pkg := range []string{"./api", "./mcp", "./mcp/servermemory", "./web", "./bridge", "./agentfiles", "./mesh", "./embed", "./embed/model2vec"} {
		var bleve []string
		for _, dep := range deps(t, pkg) {
			if dep == "github.com/memmesh/memmesh/search" {
				t.Errorf("%s depends on search", pkg)
			}
			if strings.HasPrefix(dep, "github.com/blevesearch/") {
				bleve = append(bleve, dep)
			}
		}
		if len(bleve) > 0 {
			t.Errorf("%s links %d packages of bleve, e.g. %s", pkg, len(bleve), bleve[0])
		}
	}
}

// TestBriefKnowsNoNode holds the brief apart from what composes it: it
// reads the node through brief.Host and the store through brief.Store,
// so it imports neither node nor the parts the node composes, and links
// neither the mesh's transport nor Automerge or tree-sitter (cgo).
func TestBriefKnowsNoNode(t *testing.T) {
	banned := []string{
		"github.com/memmesh/memmesh/node",
		"github.com/memmesh/memmesh/mesh",
		"github.com/memmesh/memmesh/transport",
		"github.com/memmesh/memmesh/sessions",
		"github.com/memmesh/memmesh/gitstale",
		"github.com/memmesh/memmesh/crdt",
		"github.com/quic-go/quic-go",
		"github.com/hashicorp/memberlist",
		"github.com/automerge/automerge-go",
		"github.com/smacker/go-tree-sitter",
	}
	for _, dep := range deps(t, "./brief") {
		for _, b := range banned {
			if dep == b {
				t.Errorf("brief depends on %s", b)
			}
		}
	}
}

// deps lists the packages pkg imports, directly or not, and pkg itself.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}
