package sessions_test

import (
	"testing"

	"github.com/memmesh/memmesh/internal/nodetest"
	"github.com/memmesh/memmesh/node"
)

// testNode starts a node on a temporary home, closed when the test ends.
func testNode(t *testing.T) *node.Node {
	t.Helper()
	n, err := node.New(node.Config{Home: t.TempDir(), Logger: nodetest.Logger(t)})
	return nodetest.Start(t, n, err)
}
