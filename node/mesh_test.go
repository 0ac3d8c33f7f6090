package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/faultnet"
)

// meshNode starts a node with the mesh on 127.0.0.<host>, an ephemeral
// port, fast failure detection and, when fn is set, faults.
func meshNode(tb testing.TB, home string, host int, fn *faultnet.Net) *Node {
	tb.Helper()
	if home == "" {
		home = tb.TempDir()
	}
	mc := &MeshConfig{
		Listen:        fmt.Sprintf("127.0.0.%d:0", host),
		Name:          fmt.Sprintf("node%d", host),
		ProbeInterval: 200 * time.Millisecond,
		RetryInterval: 500 * time.Millisecond,
		SyncInterval:  2 * time.Second,
	}
	if fn != nil {
		mc.WrapConn = fn.Wrap
	}
	n, err := New(Config{Home: home, Logger: slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelInfo})), Mesh: mc})
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

// addr is a node's mesh address.
func addr(n *Node) string { return n.mesh.ep.Addr().String() }

// cluster starts k nodes and joins them all through invites on the first.
func cluster(t *testing.T, k int, fn *faultnet.Net) []*Node {
	t.Helper()
	nodes := []*Node{meshNode(t, "", 1, fn)}
	for i := 2; i <= k; i++ {
		n := meshNode(t, "", i, fn)
		join(t, nodes[0], n)
		nodes = append(nodes, n)
	}
	waitUntil(t, "every node sees every other alive", func() bool {
		for _, n := range nodes {
			if alivePeers(n) != k-1 {
				return false
			}
		}
		return true
	})
	return nodes
}

func join(t *testing.T, member, newcomer *Node) {
	t.Helper()
	ctx := context.Background()
	inv, err := member.Invite(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newcomer.Join(ctx, inv.Token); err != nil {
		t.Fatal(err)
	}
}

func alivePeers(n *Node) int {
	peers, err := n.Peers(context.Background())
	if err != nil {
		return -1
	}
	k := 0
	for _, p := range peers {
		if p.State == "alive" {
			k++
		}
	}
	return k
}

// waitUntil polls cond for up to 30 seconds. It bounds a wait for
// convergence; it is not a performance assertion.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached in 30s: %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func found(n *Node, query, ns string) []string {
	res, err := n.Search(context.Background(), SearchRequest{Query: query, Namespace: ns})
	if err != nil {
		return nil
	}
	var ids []string
	for _, h := range res.Results {
		ids = append(ids, h.ID)
	}
	return ids
}

func TestMeshCaptureSearchableEverywhere(t *testing.T) {
	nodes := cluster(t, 3, nil)
	res := remember(t, nodes[0], RememberRequest{Namespace: "proj", Content: "Deploys go through the blue-green pipeline in deploy/pipeline.yaml"})
	for i, n := range nodes[1:] {
		waitUntil(t, fmt.Sprintf("capture on node1 searchable on node%d", i+2), func() bool {
			return slices.Contains(found(n, "blue-green pipeline", "proj"), res.ID)
		})
	}
}

func TestMeshRefusesStrangers(t *testing.T) {
	nodes := cluster(t, 2, nil)
	stranger := meshNode(t, "", 9, nil)
	if _, err := stranger.JoinAddr(context.Background(), addr(nodes[0])); err == nil {
		t.Fatal("a device outside the registry joined by address")
	}
	_ = net.IPv4len
}
