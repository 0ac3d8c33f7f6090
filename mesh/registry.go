package mesh

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// Registry writes this device's mesh records: the device registry,
// namespace settings and revocations, stored and replicated like
// memories. The node makes it whether or not the mesh runs; a running
// Mesh follows every record it commits. It holds every revocation record
// and what they decide (see revocation.go).
type Registry struct {
	self  string // this device
	actor string // its Automerge actor since the store opened
	host  Host
	store Store
	clock clock.Clock
	rand  io.Reader // nonces of revocation records

	judgeMu sync.Mutex // one evaluation at a time, so that the newest is kept
	mu      sync.Mutex
	mesh    *Mesh                  // the running mesh; nil when none
	revs    map[string]*revocation // every revocation record held, by id
	members map[string]admission   // devices with a registry record
	legacy  map[string]bool        // devices whose device record carries a revocation
	judged  atomic.Pointer[verdict]
}

// NewRegistry returns the registry of device self, which writes as
// Automerge actor actor (see Identity), over store; host takes the write
// locks and learns of commits. A nil clock is the system's, a nil rnd
// crypto/rand. It reads the revocations the store holds.
func NewRegistry(self, actor string, host Host, store Store, clk clock.Clock, rnd io.Reader) (*Registry, error) {
	if clk == nil {
		clk = clock.System()
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	g := &Registry{self: self, actor: actor, host: host, store: store, clock: clk, rand: rnd,
		revs: make(map[string]*revocation), members: make(map[string]admission), legacy: make(map[string]bool)}
	err := store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return fmt.Errorf("mesh record %s: %w", rec.ID, err)
		}
		// A record the view cannot take stays out of it, as one a peer
		// sends does (see took).
		g.note(r, nil)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mesh: registry: %w", err)
	}
	g.rejudge()
	return g, nil
}

// verdict returns what the revocations held decide.
func (g *Registry) verdict() *verdict { return g.judged.Load() }

// Revoked reports whether device is revoked.
func (g *Registry) Revoked(device string) bool { return g.verdict().revoked(device) }

// note takes a mesh record into the registry's view of revocations: a
// revocation record (whose document is doc, read from the store when
// nil), or a device record revoked before revocations had records. It
// reports whether the view changed; the caller then calls rejudge.
func (g *Registry) note(r model.MeshRecord, doc []byte) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch r.What {
	case model.MeshDevice:
		_, known := g.members[r.Key]
		if !known {
			a, err := g.admission(r, doc)
			if err != nil {
				return false, err
			}
			g.members[r.Key] = a
		}
		changed := !known
		if r.Revoked() && !g.legacy[r.Key] {
			g.legacy[r.Key] = true
			changed = true
		}
		return changed, nil
	case model.MeshRevocation:
		if _, ok := g.revs[r.ID]; ok {
			return false, nil // written once, never changed
		}
		if len(g.revs) >= maxRevocations {
			return false, fmt.Errorf("revocation %s: the registry holds %d revocations already", r.ID, maxRevocations)
		}
		rev, err := g.load(r, doc)
		if err != nil {
			return false, err
		}
		g.revs[r.ID] = rev
		return true, nil
	}
	return false, nil
}

// admission reads how a device was admitted, from its record as created
// (whose document is doc, read from the store when nil).
func (g *Registry) admission(r model.MeshRecord, doc []byte) (admission, error) {
	if doc == nil {
		var err error
		if doc, err = g.store.GetDoc(storage.KindMesh, r.ID); err != nil {
			return admission{}, fmt.Errorf("device record %s: %w", r.ID, err)
		}
	}
	d, err := crdt.LoadMeshDoc(g.actor, doc)
	if err != nil {
		return admission{}, fmt.Errorf("device record %s: %w", r.ID, err)
	}
	defer d.Close()
	created, actor, err := d.Created()
	if err != nil {
		return admission{}, fmt.Errorf("device record %s: %w", r.ID, err)
	}
	return admission{by: created.AddedBy, at: created.AddedAt, byAdder: strings.HasPrefix(actor, crdt.ActorID(created.AddedBy))}, nil
}

// load reads a revocation record's frontier and author.
func (g *Registry) load(r model.MeshRecord, doc []byte) (*revocation, error) {
	if doc == nil {
		var err error
		if doc, err = g.store.GetDoc(storage.KindMesh, r.ID); err != nil {
			return nil, fmt.Errorf("revocation %s: %w", r.ID, err)
		}
	}
	actor, err := revocationAuthor(r, doc)
	if err != nil {
		return nil, err
	}
	d, err := crdt.LoadMeshDoc(g.actor, doc)
	if err != nil {
		return nil, fmt.Errorf("revocation %s: %w", r.ID, err)
	}
	defer d.Close()
	f, err := d.Frontier()
	if err != nil {
		return nil, fmt.Errorf("revocation %s: %w", r.ID, err)
	}
	return &revocation{id: r.ID, revokes: r.Revokes, by: r.RevokedBy, actor: actor, at: r.RevokedAt, frontier: f}, nil
}

// revocationAuthor checks that a revocation record's document is the one
// change its revoker made, and returns that change's actor.
func revocationAuthor(r model.MeshRecord, doc []byte) (string, error) {
	authors, err := crdt.Authors(doc)
	if err != nil {
		return "", fmt.Errorf("revocation %s: %w", r.ID, err)
	}
	for actor, seq := range authors {
		if len(authors) == 1 && seq == 1 && strings.HasPrefix(actor, crdt.ActorID(r.RevokedBy)) {
			return actor, nil
		}
	}
	return "", fmt.Errorf("revocation %s: not the one change of its revoker %s", r.ID, r.RevokedBy)
}

// rejudge evaluates the revocations held and reports whether what they
// refuse changed.
func (g *Registry) rejudge() bool {
	g.judgeMu.Lock()
	defer g.judgeMu.Unlock()
	g.mu.Lock()
	revs := make([]*revocation, 0, len(g.revs))
	for _, r := range g.revs {
		c := *r
		revs = append(revs, &c)
	}
	legacy := slices.Collect(maps.Keys(g.legacy))
	members := seniority(g.members)
	g.mu.Unlock()
	v := judge(g.self, revs, legacy, members)
	old := g.judged.Swap(v)
	return old == nil || old.key != v.key
}

// follow makes m follow the records committed from now on.
func (g *Registry) follow(m *Mesh) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mesh = m
}

// AddDevice creates the registry record of a device, admitted by the
// device by, or returns the existing one; a revoked device cannot be
// added again.
func (g *Registry) AddDevice(device, name, by string) (model.MeshRecord, error) {
	if g.Revoked(device) {
		return model.MeshRecord{}, fmt.Errorf("%w: device %s was revoked and cannot rejoin", transport.ErrUnauthorized, device)
	}
	id := crdt.MeshID(model.MeshDevice, device)
	unlock := g.host.Lock(id)
	defer unlock()
	if rec, err := g.store.Get(storage.KindMesh, id); err == nil {
		var r model.MeshRecord
		err := json.Unmarshal(rec.Value, &r)
		return r, err
	} else if !notFound(err) {
		return model.MeshRecord{}, err
	}
	now := g.clock.Now().UTC()
	doc, err := crdt.NewMeshDoc(g.actor, &model.MeshRecord{ID: id, What: model.MeshDevice, Key: device, Name: name, AddedBy: by, AddedAt: now, UpdatedAt: now})
	if err != nil {
		return model.MeshRecord{}, err
	}
	defer doc.Close()
	return g.commit(doc)
}

// commit stores a mesh document and updates the registry's and the
// running mesh's view of it. The caller holds the document's lock.
func (g *Registry) commit(doc *crdt.MeshDoc) (model.MeshRecord, error) {
	r, err := doc.Materialize()
	if err != nil {
		return r, err
	}
	rec, err := record(&r, doc.Save())
	if err != nil {
		return r, err
	}
	seq, err := g.store.Commit(rec)
	if err != nil {
		return r, writeFailed("store mesh record", err)
	}
	changed := g.took([]model.MeshRecord{r}, [][]byte{rec.Doc})
	g.mu.Lock()
	m := g.mesh
	g.mu.Unlock()
	if m != nil {
		m.Noted(r, changed)
	}
	g.host.Committed(seq, nil)
	return r, nil
}

// forget drops device records the sweep erased (made by a revoked
// device beyond its frontier) from the registry's view.
func (g *Registry) forget(recs []model.MeshRecord) {
	g.mu.Lock()
	forgot := false
	for _, r := range recs {
		if _, ok := g.members[r.Key]; ok && r.What == model.MeshDevice {
			delete(g.members, r.Key)
			delete(g.legacy, r.Key)
			forgot = true
		}
	}
	g.mu.Unlock()
	if forgot {
		g.rejudge()
	}
}

// took takes mesh records committed here or received from peers, whose
// documents are docs, into the view of revocations, and reports whether
// what the revocations refuse changed. A record it cannot read is
// logged by the caller's store already; here it only stays out of the
// view.
func (g *Registry) took(recs []model.MeshRecord, docs [][]byte) bool {
	noted := false
	for i, r := range recs {
		if ok, err := g.note(r, docs[i]); err == nil {
			noted = noted || ok
		}
	}
	return noted && g.rejudge()
}

// writeFailed wraps the error of a failed write with what was being
// written, except a full disk's: its message already says all the user
// needs.
func writeFailed(what string, err error) error {
	if errors.Is(err, storage.ErrDiskFull) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// record builds the storage record of a mesh document.
func record(r *model.MeshRecord, doc []byte) (storage.Record, error) {
	value, err := json.Marshal(r)
	if err != nil {
		return storage.Record{}, fmt.Errorf("encode mesh record: %w", err)
	}
	return storage.Record{Kind: storage.KindMesh, ID: r.ID, Heads: r.Heads, Value: value, Doc: doc,
		Terms: []storage.Term{{Field: "what", Value: r.What}}}, nil
}

// Devices lists the device registry, oldest first, each revoked one with
// its revocations.
func (g *Registry) Devices() ([]api.Device, error) {
	v := g.verdict()
	refused, err := g.refused()
	if err != nil {
		return nil, err
	}
	var out []api.Device
	err = g.store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return fmt.Errorf("mesh record %s: %w", rec.ID, err)
		}
		if r.What == model.MeshDevice {
			v.annotate(&r)
			d := api.Device{MeshRecord: r, Self: r.Key == g.self, Revocations: v.view(r.Key)}
			if w, ok := refused[r.Key]; ok {
				d.Refused = &w
			}
			out = append(out, d)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b api.Device) int { return a.AddedAt.Compare(b.AddedAt) })
	return out, err
}

// Revocations lists the revocations this node holds, oldest first, as
// judged, and what it refused of each revoked device's work.
func (g *Registry) Revocations() ([]api.Revocation, []api.RefusedWork, error) {
	v := g.verdict()
	revs := []api.Revocation{}
	for _, r := range v.all {
		revs = append(revs, r.view())
	}
	slices.SortFunc(revs, func(a, b api.Revocation) int { return a.At.Compare(b.At) })
	refused, err := g.refused()
	work := slices.Collect(maps.Values(refused))
	slices.SortFunc(work, func(a, b api.RefusedWork) int { return strings.Compare(a.Device, b.Device) })
	return revs, work, err
}

// refused reads what this node refused of each revoked device's work.
func (g *Registry) refused() (map[string]api.RefusedWork, error) {
	out := make(map[string]api.RefusedWork)
	err := g.store.ScanLocal(localRefused, func(key string, value []byte) error {
		var w api.RefusedWork
		if json.Unmarshal(value, &w) == nil {
			out[strings.TrimPrefix(key, localRefused)] = w
		}
		return nil
	})
	return out, err
}

// Revoke removes a device from the mesh for good: every member refuses it
// once the revocation reaches them, and with it every change it made
// beyond what this node holds of its work now (the revocation's frontier).
// ref is a device id, a unique prefix of one, or a unique device name. A
// device that is revoked cannot revoke; revoking a revoked device again
// changes nothing.
func (g *Registry) Revoke(ref string) (api.Device, error) {
	devices, err := g.Devices()
	if err != nil {
		return api.Device{}, err
	}
	ref = strings.TrimSpace(ref)
	var match []api.Device
	for _, d := range devices {
		if d.Key == ref || d.Name == ref || (len(ref) >= 4 && strings.HasPrefix(d.Key, strings.ToUpper(ref))) {
			match = append(match, d)
		}
	}
	v := g.verdict()
	switch {
	case ref == "" || len(match) == 0:
		return api.Device{}, api.InputError(api.ErrNotFound, "no device %q in the registry (see `memmesh devices`)", ref)
	case len(match) > 1:
		return api.Device{}, api.InputError(api.ErrAmbiguous, "%q matches %d devices; give more of the id", ref, len(match))
	case match[0].Self:
		return api.Device{}, api.Invalidf("device %s is this machine: revoke it from another member", match[0].Key)
	case v.revoked(g.self):
		return api.Device{}, api.Invalidf("this device was revoked from the mesh: a revoked device cannot revoke (see `memmesh devices`)")
	case v.first(match[0].Key) != nil:
		return match[0], nil
	}
	if _, err := g.revoke(match[0].Key); err != nil {
		return api.Device{}, err
	}
	d := match[0]
	v = g.verdict()
	v.annotate(&d.MeshRecord)
	d.Revocations = v.view(d.Key)
	return d, nil
}

// revoke writes a revocation of target with this node's frontier of it,
// less target's revocations of members that revoked it: revoking a device
// takes the side of those it revoked in return, so that any member
// settles a dispute the revoked device would win by seniority (see
// revocation.go).
func (g *Registry) revoke(target string) (model.MeshRecord, error) {
	frontier, err := g.frontier(target)
	if err == nil {
		g.mu.Lock()
		for _, r := range g.revs {
			if r.by == target && g.revokedByLocked(target, r.revokes) {
				frontier.Remove(crdt.DocRef{Kind: byte(storage.KindMesh), ID: r.id})
			}
		}
		g.mu.Unlock()
	}
	if err != nil {
		return model.MeshRecord{}, fmt.Errorf("read what this device holds of %s: %w", target, err)
	}
	var nonce [8]byte
	if _, err := io.ReadFull(g.rand, nonce[:]); err != nil {
		return model.MeshRecord{}, fmt.Errorf("revocation nonce: %w", err)
	}
	key := crdt.RevocationKey(target, g.self, hex.EncodeToString(nonce[:]))
	r := model.MeshRecord{ID: crdt.MeshID(model.MeshRevocation, key), What: model.MeshRevocation, Key: key,
		Revokes: target, RevokedBy: g.self, RevokedAt: g.clock.Now().UTC()}
	doc, err := crdt.NewRevocationDoc(g.actor, &r, frontier)
	if err != nil {
		return model.MeshRecord{}, err
	}
	defer doc.Close()
	unlock := g.host.Lock(r.ID)
	defer unlock()
	return g.commit(doc)
}

// revokedByLocked reports whether the registry holds a revocation of
// device by by. The caller holds g.mu.
func (g *Registry) revokedByLocked(device, by string) bool {
	for _, r := range g.revs {
		if r.revokes == device && r.by == by {
			return true
		}
	}
	return false
}

// frontier returns what this node holds of the device's work: every
// change of its actors in every document, and its purges. It reads every
// document's change metadata, not the documents themselves.
func (g *Registry) frontier(device string) (*crdt.Frontier, error) {
	prefix := crdt.ActorID(device)
	f := &crdt.Frontier{}
	for _, kind := range []storage.Kind{storage.KindMesh, storage.KindMemory, storage.KindEdge} {
		err := g.store.Docs(kind, func(id string, doc []byte) error {
			authors, err := crdt.Authors(doc)
			if err != nil {
				return fmt.Errorf("%v %s: %w", kind, id, err)
			}
			for actor, seq := range authors {
				if strings.HasPrefix(actor, prefix) {
					f.AddChange(crdt.DocRef{Kind: byte(kind), ID: id}, actor, seq)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	err := g.store.All(storage.KindPurge, func(rec storage.Record) error {
		ts, err := crdt.DecodeTombstone(rec.Value)
		if err != nil {
			return fmt.Errorf("tombstone %s: %w", rec.ID, err)
		}
		if slices.ContainsFunc(ts.Purges, func(p crdt.Purge) bool { return p.By == device }) {
			f.AddPurge(ts.ID)
		}
		return nil
	})
	return f, err
}

// SetNamespace changes the settings of the namespace ns (normalised by
// the caller): the sync policy, and the age in days after which its
// memories are stale (0: the default), each when not nil.
func (g *Registry) SetNamespace(ns string, sync *string, staleDays *int64) (model.MeshRecord, error) {
	r, _, err := g.setNamespace(ns, sync, staleDays, false)
	return r, err
}

// AddNamespace is SetNamespace for a namespace that has no settings yet,
// and reports whether it had none: settings stored meanwhile (a peer's,
// say) are kept.
func (g *Registry) AddNamespace(ns string, sync *string, staleDays *int64) (added bool, err error) {
	_, added, err = g.setNamespace(ns, sync, staleDays, true)
	return added, err
}

func (g *Registry) setNamespace(ns string, sync *string, staleDays *int64, onlyNew bool) (model.MeshRecord, bool, error) {
	id := crdt.MeshID(model.MeshNamespace, ns)
	unlock := g.host.Lock(id)
	defer unlock()
	now := g.clock.Now().UTC()
	data, err := g.store.GetDoc(storage.KindMesh, id)
	var doc *crdt.MeshDoc
	switch {
	case notFound(err):
		doc, err = crdt.NewMeshDoc(g.actor, &model.MeshRecord{ID: id, What: model.MeshNamespace, Key: ns, Sync: model.SyncAll, UpdatedAt: now})
	case err == nil && onlyNew:
		return model.MeshRecord{}, false, nil
	case err == nil:
		doc, err = crdt.LoadMeshDoc(g.actor, data)
	}
	if err != nil {
		return model.MeshRecord{}, false, err
	}
	defer doc.Close()
	if sync != nil {
		err = doc.SetSync(*sync, now)
	}
	if err == nil && staleDays != nil {
		err = doc.SetStaleDays(*staleDays, now)
	}
	if err == nil {
		err = doc.Commit("namespace settings")
	}
	if err != nil {
		return model.MeshRecord{}, false, err
	}
	r, err := g.commit(doc)
	return r, true, err
}
