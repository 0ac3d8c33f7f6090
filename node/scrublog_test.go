package node

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/syncbuf"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/transport"
)

const logToken = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"

// TestRefusedPeerDocumentLogsNoSecret sends a node documents whose id
// holds a token: they are refused, and the log line that says so does not
// carry the token.
func TestRefusedPeerDocumentLogsNoSecret(t *testing.T) {
	t.Parallel()
	var out syncbuf.Buffer // the node's goroutines write at once
	n, err := New(Config{Home: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&out, nil)),
		Mesh: &mesh.Config{Listen: "127.0.0.1:0", Name: "canary"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	for _, e := range []transport.Entry{
		{Kind: 'm', ID: logToken, Doc: []byte("x")},
		{Kind: 'e', ID: "token=" + logToken, Doc: []byte("x")},
	} {
		if err := n.mesh.Apply("PEER", []transport.Entry{e}); !errors.Is(err, api.ErrInvalid) {
			t.Fatalf("%q: %v, want ErrInvalid", e.ID, err)
		} else if strings.Contains(err.Error(), logToken) {
			t.Fatalf("the error carries the token: %v", err)
		}
	}
	got := out.String()
	if !strings.Contains(got, "rejected a document from a peer") {
		t.Fatalf("no rejection logged:\n%s", got)
	}
	if strings.Contains(got, logToken) {
		t.Fatalf("the log carries the token:\n%s", got)
	}
}
