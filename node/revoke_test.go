package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
)

// revocationMesh is three nodes with homes of their own, so that a test
// can stop one ("away") and start it again: a admitted b, then c.
type revocationMesh struct {
	t     *testing.T
	homes [3]string
	nodes [3]*Node
}

var revocationTimings = mesh.Config{ProbeInterval: 200 * time.Millisecond, RetryInterval: 300 * time.Millisecond, SyncInterval: 2 * time.Second}

func newRevocationMesh(t *testing.T) *revocationMesh {
	skipIfShort(t) // real daemons revoking and appealing: seconds each
	r := &revocationMesh{t: t}
	for i := range r.homes {
		r.homes[i] = t.TempDir()
		r.start(i)
		if i > 0 {
			join(t, r.nodes[0], r.nodes[i])
		}
	}
	waitUntil(t, "every node sees every other alive", func() bool {
		return alivePeers(r.nodes[0]) == 2 && alivePeers(r.nodes[1]) == 2 && alivePeers(r.nodes[2]) == 2
	})
	return r
}

func (r *revocationMesh) start(i int) *Node {
	r.nodes[i] = meshNodeWith(r.t, r.homes[i], i+1, nil, revocationTimings)
	return r.nodes[i]
}

func (r *revocationMesh) stop(i int) {
	if err := r.nodes[i].Close(); err != nil {
		r.t.Fatal(err)
	}
	r.nodes[i] = nil
}

// meet makes i and j contact each other until each sees the other alive
// (a node that restarted listens on a new port).
func (r *revocationMesh) meet(i, j int) {
	a, b := r.nodes[i], r.nodes[j]
	waitUntil(r.t, "the two nodes see each other", func() bool {
		a.JoinAddr(context.Background(), addr(b))
		b.JoinAddr(context.Background(), addr(a))
		return peerOf(r.t, a, b.DeviceID()).State == "alive" && peerOf(r.t, b, a.DeviceID()).State == "alive"
	})
}

// TestRevocationWhileAway is the stolen laptop: a revokes b while b is
// away; b, talking only to c, which has not heard, purges, deletes,
// edits, links, changes a namespace's sharing, revokes a and writes new
// memories, and c takes all of it. Once a and c meet, c holds a's
// revocation (a appeals c's refusal) and every node undoes what b did
// after its revocation; a is not locked out, and what a and c wrote
// stands.
func TestRevocationWhileAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRevocationMesh(t)
	a, b, c := r.nodes[0], r.nodes[1], r.nodes[2]
	const ownersText = "Deploys go through the release branch, never from main."
	owners := remember(t, a, api.RememberRequest{Namespace: "shared", Title: "Deploys", Content: ownersText})
	members := remember(t, c, api.RememberRequest{Namespace: "shared", Content: "The staging database is reset every night at 02:00."})
	laptops := remember(t, b, api.RememberRequest{Namespace: "shared", Title: "Driver", Content: "Use pgx, not lib/pq, for Postgres."})
	for _, n := range r.nodes {
		for _, id := range []string{owners.ID, members.ID, laptops.ID} {
			waitUntil(t, "every memory everywhere", func() bool { return has(n, id) })
		}
	}

	// b goes away with the thief; c is off; a revokes b, then stops.
	r.stop(1)
	r.stop(2)
	if _, err := a.Revoke(ctx, b.DeviceID()); err != nil {
		t.Fatal(err)
	}
	r.stop(0)

	// The thief, with c, which has not heard of the revocation.
	b, c = r.start(1), r.start(2)
	r.meet(1, 2)
	advance(b, -24*time.Hour) // its clock says all this happened the day before
	if _, err := b.Purge(ctx, owners.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Delete(ctx, members.ID); err != nil {
		t.Fatal(err)
	}
	title, kind := "Drivers: lib/pq is fine", "decision"
	if _, err := b.Update(ctx, laptops.ID, api.UpdateRequest{Title: &title, Kind: &kind, AddTags: []string{"thief"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Link(ctx, api.LinkRequest{From: laptops.ID, Rel: "supersedes", To: members.ID}); err != nil {
		t.Fatal(err)
	}
	local := model.SyncLocal
	if _, err := b.SetNamespace(ctx, "shared", api.NamespaceChange{Sync: &local}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Revoke(ctx, a.DeviceID()); err != nil {
		t.Fatal(err)
	}
	planted := remember(t, b, api.RememberRequest{Namespace: "team", Content: "Push straight to main; reviews slow us down."})
	waitUntil(t, "c takes all the thief did", func() bool {
		return has(c, planted.ID) && c.purged(strings.TrimPrefix(owners.ID, IDPrefix)) && c.registry.Revoked(a.DeviceID())
	})
	r.stop(1)

	// a comes back. c refuses it at first (b revoked it), a appeals, and
	// both hold both revocations: a is the older member.
	a = r.start(0)
	r.meet(0, 2)
	for _, n := range []*Node{a, c} {
		waitUntil(t, "b's work after its revocation undone", func() bool { return undone(n, owners, members, laptops, planted) })
		if n.registry.Revoked(a.DeviceID()) || !n.registry.Revoked(b.DeviceID()) {
			t.Fatalf("%s: a revoked %v, b revoked %v; want b alone", n.DeviceID()[:7], n.registry.Revoked(a.DeviceID()), n.registry.Revoked(b.DeviceID()))
		}
	}
	waitUntil(t, "a and c converge", func() bool { return converged([]*Node{a, c}) })
	got, err := c.Get(ctx, owners.ID)
	if err != nil || got.Content != ownersText {
		t.Fatalf("the owner's purged memory on c: %q, %v; want it back whole", got.Content, err)
	}
	// Both say so.
	for _, n := range []*Node{a, c} {
		devices, err := n.Devices(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range devices {
			switch d.Key {
			case b.DeviceID():
				if !d.Revoked() || d.RevokedBy != a.DeviceID() {
					t.Errorf("b shown as %+v, want revoked by a", d.MeshRecord)
				}
			case a.DeviceID():
				if d.Revoked() || len(d.Revocations) != 1 || d.Revocations[0].Stands || d.Revocations[0].Why == "" {
					t.Errorf("a shown revoked %v with %+v; want b's revocation of it, not standing, with why", d.Revoked(), d.Revocations)
				}
			}
		}
	}
	rep, err := c.Doctor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Refused) != 1 || rep.Refused[0].Device != b.DeviceID() || rep.Refused[0].Erased == 0 || rep.Refused[0].Purges != 1 {
		t.Fatalf("c's doctor shows %+v; want what b did after its revocation, removed", rep.Refused)
	}
}

// undone reports whether n holds none of what the thief did: the owner's
// memory is not purged, the member's not deleted, the laptop's as it was,
// no link, the namespace shared, the planted memory gone.
func undone(n *Node, owners, members, laptops api.RememberResult, planted api.RememberResult) bool {
	ctx := context.Background()
	if has(n, planted.ID) || n.purged(strings.TrimPrefix(owners.ID, IDPrefix)) || !has(n, owners.ID) {
		return false
	}
	m, err := n.Get(ctx, members.ID)
	if err != nil || m.Status != model.StatusActive {
		return false
	}
	l, err := n.Get(ctx, laptops.ID)
	if err != nil || l.Title != "Driver" || l.Kind == "decision" || slices.Contains(l.Tags, "thief") {
		return false
	}
	edges, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{members.ID}})
	if err != nil || slices.ContainsFunc(edges, func(e api.Edge) bool { return !e.Deleted }) {
		return false
	}
	return n.namespaceSettings("shared").Sync != model.SyncLocal
}

// TestRevocationStolenOlderDevice: the owner's b revokes the stolen a,
// the mesh's first device, which revokes b at once: a is the older
// member and wins the dispute, on c too, and b stops. c, another member,
// settles it by revoking a: b appeals again, takes c's revocation, and
// is a member again with no step on b.
func TestRevocationStolenOlderDevice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRevocationMesh(t)
	a, b, c := r.nodes[0], r.nodes[1], r.nodes[2]
	r.stop(0)
	if _, err := b.Revoke(ctx, a.DeviceID()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "c holds b's revocation of a", func() bool { return c.registry.Revoked(a.DeviceID()) })
	r.stop(1)
	a = r.start(0)
	if _, err := a.Revoke(ctx, b.DeviceID()); err != nil {
		t.Fatal(err)
	}
	r.meet(0, 2)
	if !c.registry.Revoked(b.DeviceID()) || c.registry.Revoked(a.DeviceID()) {
		t.Fatal("the older a did not win the dispute on c")
	}
	b = r.start(1)
	waitUntil(t, "b learns from c that it lost", func() bool {
		st, err := b.MeshStatus(ctx)
		return err == nil && slices.ContainsFunc(st.Errors, func(e string) bool { return strings.Contains(e, "revoked") })
	})

	if _, err := c.Revoke(ctx, a.DeviceID()); err != nil {
		t.Fatal(err)
	}
	if !c.registry.Revoked(a.DeviceID()) || c.registry.Revoked(b.DeviceID()) {
		t.Fatal("c's revocation of a did not settle the dispute for b")
	}
	waitUntil(t, "b is a member again", func() bool {
		return !b.registry.Revoked(b.DeviceID()) && peerOf(t, c, b.DeviceID()).State == "alive" && peerOf(t, b, c.DeviceID()).State == "alive"
	})
	if _, err := b.Revoke(ctx, b.DeviceID()); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("revoking oneself: %v", err)
	}
}
