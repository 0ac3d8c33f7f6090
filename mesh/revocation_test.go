package mesh

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
)

// court builds revocations between devices named by one letter, each
// with a frontier that holds exactly the revocations it is told were
// seen, and judges them.
type court struct {
	t       *testing.T
	revs    []*revocation
	members map[string]admission
}

func newCourt(t *testing.T) *court {
	// a admitted itself, then b, then c, then d; b admitted e.
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &court{t: t, members: map[string]admission{
		"a": {by: "a", at: at, byAdder: true},
		"b": {by: "a", at: at.Add(1 * time.Hour), byAdder: true},
		"c": {by: "a", at: at.Add(2 * time.Hour), byAdder: true},
		"d": {by: "a", at: at.Add(3 * time.Hour), byAdder: true},
		"e": {by: "b", at: at.Add(4 * time.Hour), byAdder: true},
	}}
}

// revoke records that by revoked device, having seen the revocations
// named in seen (by index).
func (c *court) revoke(by, device string, seen ...int) int {
	f := &crdt.Frontier{}
	for _, i := range seen {
		r := c.revs[i]
		f.AddChange(crdt.DocRef{Kind: kindMeshByte, ID: r.id}, r.actor, 1)
	}
	id := crdt.NewID()
	c.revs = append(c.revs, &revocation{id: id, revokes: device, by: by, actor: crdt.ActorID(by) + "0000000000000001", frontier: f})
	return len(c.revs) - 1
}

// revoked judges and returns the revoked devices, sorted.
func (c *court) revoked() []string {
	v := judge("z", slices.Clone(c.revs), nil, seniority(c.members))
	return slices.Sorted(maps.Keys(v.devices))
}

func (c *court) want(want ...string) {
	c.t.Helper()
	if got := c.revoked(); !slices.Equal(got, want) {
		var why []string
		for _, r := range c.revs {
			why = append(why, fmt.Sprintf("%s revokes %s: stands %v (%s)", r.by, r.revokes, r.stands, r.why))
		}
		c.t.Fatalf("revoked %v, want %v\n%v", got, want, why)
	}
}

func TestSeniority(t *testing.T) {
	rank := seniority(newCourt(t).members)
	order := slices.SortedFunc(maps.Keys(rank), func(x, y string) int { return rank[x] - rank[y] })
	if want := []string{"a", "b", "e", "c", "d"}; !slices.Equal(order, want) {
		t.Fatalf("seniority %v, want %v (a member's admissions follow it)", order, want)
	}
	c := newCourt(t)
	c.members["x"] = admission{by: "a", at: time.Time{}, byAdder: false} // a record a did not write
	c.members["y"] = admission{by: "nobody", byAdder: true}
	rank = seniority(c.members)
	if rank["x"] < rank["d"] || rank["y"] < rank["d"] {
		t.Fatalf("ranks %v: a record its adder did not write, or whose adder is unknown, comes last", rank)
	}
}

func TestJudge(t *testing.T) {
	t.Run("a revocation stands", func(t *testing.T) {
		c := newCourt(t)
		c.revoke("a", "b")
		c.want("b")
	})
	t.Run("a revoked device cannot revoke", func(t *testing.T) {
		c := newCourt(t)
		first := c.revoke("a", "c")
		c.revoke("c", "b")    // c had not seen its own revocation
		c.revoke("c", "a")    // nor this one
		c.revoke("c", "d", 0) // whatever it had seen
		c.revoke("b", "d")    // b was not revoked: stands
		c.revoke("a", "e", first)
		c.want("c", "d", "e")
	})
	t.Run("a revocation the revoker had seen stands", func(t *testing.T) {
		c := newCourt(t)
		bd := c.revoke("b", "d")
		c.revoke("a", "b", bd) // a held b's revocation of d when it revoked b
		c.want("b", "d")
	})
	t.Run("in a dispute the older member wins", func(t *testing.T) {
		c := newCourt(t)
		c.revoke("c", "b") // b is older than c
		c.revoke("b", "c")
		c.want("c")
		c = newCourt(t)
		c.revoke("e", "a") // e, admitted by b, is younger than every device a admitted before b's...
		c.revoke("a", "e") // ... and than a
		c.want("e")
	})
	t.Run("a ring of three", func(t *testing.T) {
		c := newCourt(t)
		c.revoke("b", "c")
		c.revoke("c", "d")
		c.revoke("d", "b")
		// b is the oldest: its revocation of c stands, so c's of d does
		// not, so d's of b stands too.
		c.want("b", "c")
	})
	t.Run("another member settles a dispute", func(t *testing.T) {
		c := newCourt(t)
		cb := c.revoke("c", "b") // c, the owner's, revokes the stolen b...
		c.revoke("b", "c")       // ... which revokes c at once, and wins it
		c.want("c")
		// d revokes b, holding b's revocation of c, but not counting it
		// (Registry.revoke leaves it out of the frontier).
		c.revoke("d", "b", cb)
		c.want("b")
	})
	t.Run("a revocation by no member", func(t *testing.T) {
		c := newCourt(t)
		c.revoke("stranger", "a")
		c.want()
	})
}

// TestJudgeIntersectsFrontiers: two revocations of one device that stand
// refuse what lies beyond either frontier.
func TestJudgeIntersectsFrontiers(t *testing.T) {
	m1, m2 := crdt.NewID(), crdt.NewID()
	actor := crdt.ActorID("b") + "0000000000000002"
	fa, fc := &crdt.Frontier{}, &crdt.Frontier{}
	fa.AddChange(crdt.DocRef{Kind: 'm', ID: m1}, actor, 3)
	fa.AddChange(crdt.DocRef{Kind: 'm', ID: m2}, actor, 1)
	fc.AddChange(crdt.DocRef{Kind: 'm', ID: m1}, actor, 5)
	revs := []*revocation{
		{id: crdt.NewID(), revokes: "b", by: "a", actor: crdt.ActorID("a"), frontier: fa},
		{id: crdt.NewID(), revokes: "b", by: "c", actor: crdt.ActorID("c"), frontier: fc},
	}
	v := judge("z", revs, nil, seniority(newCourt(t).members))
	refuse := v.refuses(crdt.DocRef{Kind: 'm', ID: m1}, map[string]uint64{actor: 4})
	if refuse == nil || refuse(actor, 3) || !refuse(actor, 4) {
		t.Fatal("m1: want changes up to 3 kept and the 4th refused")
	}
	if v.refuses(crdt.DocRef{Kind: 'm', ID: m2}, map[string]uint64{actor: 1}) == nil {
		t.Fatal("m2: c held none of b's changes, so none stands")
	}
	if v.refuses(crdt.DocRef{Kind: 'm', ID: m2}, map[string]uint64{crdt.ActorID("c"): 9}) != nil {
		t.Fatal("a member's changes were refused")
	}
}

// TestSweepRecordsALegacyRevocation: a device this node revoked before
// revocations were records of their own (its device record carries the
// revocation) stays revoked, refused nothing of its work (no frontier),
// until the sweep writes a revocation record with this node's frontier.
func TestSweepRecordsALegacyRevocation(t *testing.T) {
	st := testStore(t)
	m := testMesh(t, st, newFakeClock())
	other := strings.Repeat("B", 52)
	if _, err := m.registry.AddDevice(m.self, "laptop", m.self); err != nil {
		t.Fatal(err)
	}
	at := m.clock.Now().UTC()
	old := &model.MeshRecord{ID: crdt.MeshID(model.MeshDevice, other), What: model.MeshDevice, Key: other, Name: "old",
		AddedBy: m.self, AddedAt: at, RevokedBy: m.self, RevokedAt: at}
	doc, err := crdt.NewMeshDoc(crdt.ActorID(m.self)+"0000000000000009", old)
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.registry.commit(doc)
	doc.Close()
	if err != nil {
		t.Fatal(err)
	}
	m.noteRecord(r)
	if !m.registry.Revoked(other) || m.registry.verdict().first(other) != nil {
		t.Fatal("a device record's revocation does not revoke, or has a frontier")
	}
	if err := m.Sweep(); err != nil {
		t.Fatal(err)
	}
	first := m.registry.verdict().first(other)
	if first == nil || first.by != m.self {
		t.Fatal("the sweep wrote no revocation record for the device this node revoked")
	}
}
