package mesh

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
)

// Revocation is decided by causal facts, never by a clock. A member that
// revokes a device writes a revocation record holding the frontier of
// what it held of the device's work (crdt.Frontier: per document, the
// highest sequence number of each of the device's Automerge actors; the
// memories the device purged). Every change the device made beyond that
// frontier is refused by every node, whoever relays it, and removed where
// it was taken before the revocation arrived (see sweep.go): content,
// fields, edges, registry and namespace records, purges. A device's
// changes are found by their actor, which starts with crdt.ActorID of the
// device.
//
// Which revocations stand is decided from the records alone, the same way
// on every node:
//   - A revocation by a device that is revoked does not stand when the
//     revoking member had not seen it (its record is beyond the frontier
//     of the revocation of its author): a revoked device cannot revoke,
//     whatever time its clock claims.
//   - Revocations that void each other that way (two devices revoking
//     each other at once, neither having seen the other's, or a ring of
//     them) are settled by seniority: in such a dispute only the older
//     member's revocation can void the younger's. A member is older than
//     the members it admitted, and of two admitted by one member the one
//     admitted first is older (as that member's record of each admission
//     says, written when it admitted them: see seniority). A stolen device
//     that revokes the machine that revokes it therefore loses, unless it
//     is the older of the two; then any other member settles it by
//     revoking the stolen device (see Registry.revoke), and the owner's
//     machine is back.
//   - Otherwise a revocation stands unless one that stands voids it.
//
// Several revocations of one device that stand refuse what lies beyond
// any of their frontiers (their intersection). A device record revoked
// before revocations were records of their own (its revoked_at set) keeps
// the device out, with no frontier: none of its work is refused.

// maxRevocations bounds the revocation records a node takes. A mesh has a
// few devices; more records than this is an attack on the evaluation,
// which is quadratic in them at least.
const maxRevocations = 1024

// revocation is one revocation record as the registry holds it.
type revocation struct {
	id       string // the record's id
	revokes  string
	by       string
	actor    string // the Automerge actor that wrote the record
	at       time.Time
	frontier *crdt.Frontier
	stands   bool
	why      string
}

// revokedDevice is a device that standing revocations revoke.
type revokedDevice struct {
	// frontier is what may stand of its work: the intersection of the
	// frontiers of the revocations that stand; nil when it was revoked
	// without one (before frontiers), and none of its work is refused.
	frontier *crdt.Frontier
	by       []*revocation // the standing revocations, by time shown
}

// verdict is what the revocation records a node holds decide. It is
// immutable once made: the registry swaps in a new one when they change.
type verdict struct {
	self    string
	all     []*revocation // by id
	devices map[string]*revokedDevice
	// prefixes maps crdt.ActorID of every revoked device with a frontier,
	// but this one, to the device: the actors whose changes are checked.
	// A node never refuses its own device's work: revoked, it stops
	// syncing and keeps what it wrote.
	prefixes map[string]string
	// key names what the verdict refuses: equal keys, equal refusals.
	key string
}

// actorPrefix is the length of crdt.ActorID in hex: the part of every
// actor of a device that names the device.
const actorPrefix = 32

// judge evaluates the revocations revs (their stands and why are set)
// among the registry's members, ranked by seniority (0 the oldest), and
// the devices revoked by their device records (legacy). A revocation by a
// device that is no member does not stand.
func judge(self string, revs []*revocation, legacy []string, rank map[string]int) *verdict {
	slices.SortFunc(revs, func(a, b *revocation) int { return strings.Compare(a.id, b.id) })
	n := len(revs)
	// voids[i][j]: revocation i revokes the author of j, whose record
	// lies beyond i's frontier.
	voids := make([][]bool, n)
	for i, r := range revs {
		voids[i] = make([]bool, n)
		for j, o := range revs {
			voids[i][j] = r.revokes == o.by && !r.frontier.Allows(crdt.DocRef{Kind: kindMeshByte, ID: o.id}, o.actor, 1)
		}
	}
	// In a dispute (revocations that void each other, directly or round
	// a ring) only an older member's revocation voids a younger's.
	reach := closure(voids)
	for i := range n {
		for j := range n {
			if voids[j][i] && reach[i][j] && rank[revs[j].by] > rank[revs[i].by] {
				voids[j][i] = false
			}
		}
	}
	state := make([]int8, n) // 0 unknown, 1 stands, 2 void
	var stands func(i int) bool
	// voids is now acyclic (seniority orders the rings' devices), so
	// this recursion ends.
	stands = func(i int) bool {
		if state[i] != 0 {
			return state[i] == 1
		}
		state[i] = 1
		if _, ok := rank[revs[i].by]; !ok {
			state[i] = 2
			revs[i].why = short(revs[i].by) + " is not in the device registry"
			return false
		}
		for j := range n {
			if voids[j][i] && stands(j) {
				state[i] = 2
				revs[i].why = fmt.Sprintf("%s made it after %s had revoked it", short(revs[i].by), short(revs[j].by))
				if reach[i][j] {
					revs[i].why = fmt.Sprintf("%s and %s revoked each other, and %s is the older member (another member settles it the other way by revoking %s)",
						short(revs[i].by), short(revs[j].by), short(revs[j].by), short(revs[j].by))
				}
				return false
			}
		}
		return true
	}
	for _, r := range revs {
		r.why = ""
	}
	v := &verdict{self: self, all: revs, devices: make(map[string]*revokedDevice), prefixes: make(map[string]string)}
	h := sha256.New()
	for i, r := range revs {
		r.stands = stands(i)
		if !r.stands {
			continue
		}
		h.Write([]byte(r.id + "\x00"))
		d := v.devices[r.revokes]
		if d == nil {
			d = &revokedDevice{frontier: r.frontier}
			v.devices[r.revokes] = d
		} else {
			d.frontier = d.frontier.Intersect(r.frontier)
		}
		d.by = append(d.by, r)
	}
	for _, d := range v.devices {
		slices.SortFunc(d.by, func(a, b *revocation) int { return cmp.Or(a.at.Compare(b.at), strings.Compare(a.id, b.id)) })
	}
	for device := range v.devices {
		if device != self {
			v.prefixes[crdt.ActorID(device)] = device
		}
	}
	for _, device := range slices.Sorted(slices.Values(legacy)) {
		if _, ok := v.devices[device]; !ok {
			v.devices[device] = &revokedDevice{}
			h.Write([]byte("legacy " + device + "\x00"))
		}
	}
	v.key = hex.EncodeToString(h.Sum(nil))
	return v
}

// closure returns the transitive closure of the relation edge.
func closure(edge [][]bool) [][]bool {
	n := len(edge)
	r := make([][]bool, n)
	for i := range edge {
		r[i] = slices.Clone(edge[i])
	}
	for k := range n {
		for i := range n {
			if !r[i][k] {
				continue
			}
			for j := range n {
				r[i][j] = r[i][j] || r[k][j]
			}
		}
	}
	return r
}

// short is a device id as shown in a sentence.
func short(device string) string {
	if len(device) > 7 {
		return device[:7]
	}
	return device
}

// kindMeshByte is the storage kind of mesh records, as a frontier names it.
const kindMeshByte = 'x'

// revoked reports whether standing revocations (or a device record's
// older revocation) revoke device.
func (v *verdict) revoked(device string) bool {
	_, ok := v.devices[device]
	return ok
}

// refuses returns which changes of the document doc the verdict refuses,
// given its authors (crdt.Authors): a revoked device's beyond the
// frontier of its revocation, and what depends on them. It returns nil
// when it refuses none.
func (v *verdict) refuses(doc crdt.DocRef, authors map[string]uint64) func(actor string, seq uint64) bool {
	if len(v.prefixes) == 0 {
		return nil
	}
	refuse := func(actor string, seq uint64) bool {
		f := v.frontierOf(actor)
		return f != nil && !f.Allows(doc, actor, seq)
	}
	for actor, seq := range authors {
		if refuse(actor, seq) {
			return refuse
		}
	}
	return nil
}

// frontierOf returns the frontier that bounds what actor's device may
// have made, nil when its device is not refused anything.
func (v *verdict) frontierOf(actor string) *crdt.Frontier {
	if len(actor) < actorPrefix {
		return nil
	}
	device, ok := v.prefixes[actor[:actorPrefix]]
	if !ok {
		return nil
	}
	return v.devices[device].frontier
}

// refusesPurge reports whether the verdict refuses a device's purge of
// the memory id.
func (v *verdict) refusesPurge(id string, p crdt.Purge) bool {
	d, ok := v.devices[p.By]
	return ok && d.frontier != nil && p.By != v.self && !d.frontier.AllowsPurge(id)
}

// view is what api.Device shows of the revocations of device.
func (v *verdict) view(device string) []api.Revocation {
	var out []api.Revocation
	for _, r := range v.all {
		if r.revokes == device {
			out = append(out, r.view())
		}
	}
	return out
}

func (r *revocation) view() api.Revocation {
	return api.Revocation{Revokes: r.revokes, By: r.by, At: r.at, Frontier: r.frontier.Len(), Stands: r.stands, Why: r.why}
}

// first returns the standing revocation of device shown as its revocation,
// nil when there is none (or only a device record's older one).
func (v *verdict) first(device string) *revocation {
	if d, ok := v.devices[device]; ok && len(d.by) > 0 {
		return d.by[0]
	}
	return nil
}

// annotate fills a device record's revocation from the verdict.
func (v *verdict) annotate(r *model.MeshRecord) {
	if first := v.first(r.Key); first != nil {
		r.RevokedBy, r.RevokedAt = first.by, first.at
	}
}

// admission is how a device joined, as its record was created: the
// member that admitted it and when, as that member wrote them, and
// whether that member wrote the record (a record made by another is
// placed after every well-made one).
type admission struct {
	by      string
	at      time.Time
	byAdder bool
}

// seniority ranks the members, oldest first (0): the members that
// admitted themselves (a mesh's first device), then, after each member,
// the members it admitted, each followed by its own, in the order it
// admitted them; members whose record is not its adder's, or whose
// adder is no member, come last. Ties are broken by device id.
func seniority(members map[string]admission) map[string]int {
	children := make(map[string][]string)
	var roots, strays []string
	for device, a := range members {
		_, adderKnown := members[a.by]
		switch {
		case !a.byAdder || a.by != device && !adderKnown:
			strays = append(strays, device)
		case a.by == device || a.by == "":
			roots = append(roots, device)
		default:
			children[a.by] = append(children[a.by], device)
		}
	}
	byAdmission := func(x, y string) int {
		return cmp.Or(members[x].at.Compare(members[y].at), strings.Compare(x, y))
	}
	rank := make(map[string]int, len(members))
	var visit func(device string)
	visit = func(device string) {
		if _, seen := rank[device]; seen {
			return
		}
		rank[device] = len(rank)
		kids := children[device]
		slices.SortFunc(kids, byAdmission)
		for _, k := range kids {
			visit(k)
		}
	}
	slices.SortFunc(roots, byAdmission)
	for _, r := range roots {
		visit(r)
	}
	// Members in a ring of admissions, which no root reaches, go with
	// the strays.
	for device := range members {
		if _, seen := rank[device]; !seen && !slices.Contains(strays, device) {
			strays = append(strays, device)
		}
	}
	slices.SortFunc(strays, byAdmission)
	for _, s := range strays {
		if _, seen := rank[s]; !seen {
			rank[s] = len(rank)
		}
	}
	return rank
}
