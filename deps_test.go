package memmesh_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFrontEndsLinkNoStorageOrMesh holds the package map: the front ends,
// the packages they share with node, extract (pure rules over a session),
// transcript (readers of files), bridge (auto memory's files) and
// agentfiles (agent instruction files, through the API) link neither the
// store, nor the mesh's transport, nor Automerge or tree-sitter (cgo).
func TestFrontEndsLinkNoStorageOrMesh(t *testing.T) {
	light := []string{"./api", "./model", "./mcp", "./web", "./web/ui", "./internal/localhttp", "./search", "./graph", "./internal/secrets", "./extract", "./transcript", "./bridge", "./agentfiles"}
	heavy := []string{
		"github.com/cockroachdb/pebble/v2",
		"github.com/quic-go/quic-go",
		"github.com/hashicorp/memberlist",
		"github.com/automerge/automerge-go",
		"github.com/smacker/go-tree-sitter",
	}
	for _, pkg := range light {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, dep := range deps {
			for _, h := range heavy {
				if dep == h {
					t.Errorf("%s depends on %s", pkg, h)
				}
			}
		}
	}
}
