package mesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// Registry writes this device's mesh records: the device registry and
// namespace settings, stored and replicated like memories. The node makes
// it whether or not the mesh runs; a running Mesh follows every record it
// commits.
type Registry struct {
	self  string // this device
	actor string // its Automerge actor since the store opened
	host  Host
	store Store
	clock Clock

	mu   sync.Mutex
	mesh *Mesh // the running mesh; nil when none
}

// NewRegistry returns the registry of device self, which writes as
// Automerge actor actor (see Identity), over store; host takes the write
// locks and learns of commits. A nil clock is the system's.
func NewRegistry(self, actor string, host Host, store Store, clock Clock) *Registry {
	if clock == nil {
		clock = SystemClock(nil)
	}
	return &Registry{self: self, actor: actor, host: host, store: store, clock: clock}
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
	id := crdt.MeshID(model.MeshDevice, device)
	unlock := g.host.Lock(id)
	defer unlock()
	if rec, err := g.store.Get(storage.KindMesh, id); err == nil {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return r, err
		}
		if r.Revoked() {
			return r, fmt.Errorf("%w: device %s was revoked and cannot rejoin", transport.ErrUnauthorized, device)
		}
		return r, nil
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

// commit stores a mesh document and updates the running mesh's view of
// it. The caller holds the document's lock.
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
	g.mu.Lock()
	m := g.mesh
	g.mu.Unlock()
	if m != nil {
		m.Noted(r)
	}
	g.host.Committed(seq, nil)
	return r, nil
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

// Devices lists the device registry, oldest first.
func (g *Registry) Devices() ([]api.Device, error) {
	var out []api.Device
	err := g.store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return fmt.Errorf("mesh record %s: %w", rec.ID, err)
		}
		if r.What == model.MeshDevice {
			out = append(out, api.Device{MeshRecord: r, Self: r.Key == g.self})
		}
		return nil
	})
	slices.SortFunc(out, func(a, b api.Device) int { return a.AddedAt.Compare(b.AddedAt) })
	return out, err
}

// Revoke removes a device from the mesh for good: every member refuses it
// once the revocation reaches them. ref is a device id, a unique prefix of
// one, or a unique device name.
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
	switch {
	case ref == "" || len(match) == 0:
		return api.Device{}, api.InputError(api.ErrNotFound, "no device %q in the registry (see `memmesh devices`)", ref)
	case len(match) > 1:
		return api.Device{}, api.InputError(api.ErrAmbiguous, "%q matches %d devices; give more of the id", ref, len(match))
	case match[0].Self:
		return api.Device{}, api.Invalidf("device %s is this machine: revoke it from another member", match[0].Key)
	}
	id := match[0].ID
	unlock := g.host.Lock(id)
	defer unlock()
	data, err := g.store.GetDoc(storage.KindMesh, id)
	if err != nil {
		return api.Device{}, err
	}
	doc, err := crdt.LoadMeshDoc(g.actor, data)
	if err != nil {
		return api.Device{}, err
	}
	defer doc.Close()
	if err := doc.Revoke(g.self, g.clock.Now().UTC()); err != nil {
		return api.Device{}, err
	}
	if err := doc.Commit("revoke"); err != nil {
		return api.Device{}, err
	}
	r, err := g.commit(doc)
	return api.Device{MeshRecord: r}, err
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
