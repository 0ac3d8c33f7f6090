package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// The device registry and namespace settings are mesh records, stored
// and replicated like memories whether or not the mesh runs; the mesh
// follows them (mesh.Mesh.Noted).

// addDevice creates the registry record of a device, or returns the
// existing one; a revoked device cannot be added again.
func (n *Node) addDevice(device, name, by string) (model.MeshRecord, error) {
	id := crdt.MeshID(model.MeshDevice, device)
	unlock := n.lock(id)
	defer unlock()
	if rec, err := n.store.Get(storage.KindMesh, id); err == nil {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return r, err
		}
		if r.Revoked() {
			return r, fmt.Errorf("%w: device %s was revoked and cannot rejoin", transport.ErrUnauthorized, device)
		}
		return r, nil
	} else if !storageNotFound(err) {
		return model.MeshRecord{}, err
	}
	now := n.now().UTC()
	doc, err := crdt.NewMeshDoc(n.actor, &model.MeshRecord{ID: id, What: model.MeshDevice, Key: device, Name: name, AddedBy: by, AddedAt: now, UpdatedAt: now})
	if err != nil {
		return model.MeshRecord{}, err
	}
	defer doc.Close()
	return n.commitMesh(doc)
}

// commitMesh stores a mesh document and updates the mesh's view of it.
// The caller holds the document's lock.
func (n *Node) commitMesh(doc *crdt.MeshDoc) (model.MeshRecord, error) {
	r, err := doc.Materialize()
	if err != nil {
		return r, err
	}
	rec, err := meshRecord(&r, doc.Save())
	if err != nil {
		return r, err
	}
	if _, err := n.store.Commit(rec); err != nil {
		return r, writeFailed("store mesh record", err)
	}
	if n.mesh != nil {
		n.mesh.Noted(r)
	}
	n.changed()
	return r, nil
}

// meshRecord builds the storage record of a mesh document.
func meshRecord(r *model.MeshRecord, doc []byte) (storage.Record, error) {
	value, err := json.Marshal(r)
	if err != nil {
		return storage.Record{}, fmt.Errorf("encode mesh record: %w", err)
	}
	return storage.Record{Kind: storage.KindMesh, ID: r.ID, Heads: r.Heads, Value: value, Doc: doc,
		Terms: []storage.Term{{Field: "what", Value: r.What}}}, nil
}

// Devices lists the device registry.
func (n *Node) Devices(ctx context.Context) ([]api.Device, error) {
	var out []api.Device
	err := n.store.All(storage.KindMesh, func(rec storage.Record) error {
		var r model.MeshRecord
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return fmt.Errorf("mesh record %s: %w", rec.ID, err)
		}
		if r.What == model.MeshDevice {
			out = append(out, api.Device{MeshRecord: r, Self: r.Key == n.id.DeviceID})
		}
		return nil
	})
	slices.SortFunc(out, func(a, b api.Device) int { return a.AddedAt.Compare(b.AddedAt) })
	return out, err
}

// Revoke removes a device from the mesh for good: every member refuses it
// once the revocation reaches them. ref is a device id, a unique prefix of
// one, or a unique device name.
func (n *Node) Revoke(ctx context.Context, ref string) (api.Device, error) {
	devices, err := n.Devices(ctx)
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
	unlock := n.lock(id)
	defer unlock()
	data, err := n.store.GetDoc(storage.KindMesh, id)
	if err != nil {
		return api.Device{}, err
	}
	doc, err := crdt.LoadMeshDoc(n.actor, data)
	if err != nil {
		return api.Device{}, err
	}
	defer doc.Close()
	if err := doc.Revoke(n.id.DeviceID, n.now().UTC()); err != nil {
		return api.Device{}, err
	}
	if err := doc.Commit("revoke"); err != nil {
		return api.Device{}, err
	}
	r, err := n.commitMesh(doc)
	return api.Device{MeshRecord: r}, err
}

// SetNamespace changes a namespace's settings. They are a mesh record, so
// they apply on every device.
func (n *Node) SetNamespace(ctx context.Context, ns string, ch api.NamespaceChange) (model.MeshRecord, error) {
	ns, err := NormalizeNamespace(ns)
	if err != nil {
		return model.MeshRecord{}, err
	}
	if ch.Sync == nil && ch.StaleAfter == nil {
		return model.MeshRecord{}, api.Invalidf("nothing to change: give a sync policy or a stale-after age")
	}
	if ch.Sync != nil && *ch.Sync != model.SyncAll && *ch.Sync != model.SyncLocal {
		return model.MeshRecord{}, api.Invalidf("sync policy %q: want %q or %q", *ch.Sync, model.SyncAll, model.SyncLocal)
	}
	var staleDays int64
	if ch.StaleAfter != nil && *ch.StaleAfter != "default" {
		d, err := api.ParseTTL(*ch.StaleAfter)
		days := int64(d / (24 * time.Hour))
		if err != nil || d <= 0 || d%(24*time.Hour) != 0 || days > model.MaxStaleDays {
			return model.MeshRecord{}, api.Invalidf("stale after %q: give whole days, 1d to %dd, or default", *ch.StaleAfter, model.MaxStaleDays)
		}
		staleDays = days
	}
	id := crdt.MeshID(model.MeshNamespace, ns)
	unlock := n.lock(id)
	defer unlock()
	now := n.now().UTC()
	data, err := n.store.GetDoc(storage.KindMesh, id)
	var doc *crdt.MeshDoc
	switch {
	case storageNotFound(err):
		doc, err = crdt.NewMeshDoc(n.actor, &model.MeshRecord{ID: id, What: model.MeshNamespace, Key: ns, Sync: model.SyncAll, UpdatedAt: now})
	case err == nil:
		doc, err = crdt.LoadMeshDoc(n.actor, data)
	}
	if err != nil {
		return model.MeshRecord{}, err
	}
	defer doc.Close()
	if ch.Sync != nil {
		err = doc.SetSync(*ch.Sync, now)
	}
	if err == nil && ch.StaleAfter != nil {
		err = doc.SetStaleDays(staleDays, now)
	}
	if err == nil {
		err = doc.Commit("namespace settings")
	}
	if err != nil {
		return model.MeshRecord{}, err
	}
	return n.commitMesh(doc)
}

// namespaceSettings reads a namespace's settings record; a namespace
// without one has the defaults.
func (n *Node) namespaceSettings(ns string) model.MeshRecord {
	r := model.MeshRecord{What: model.MeshNamespace, Key: ns, Sync: model.SyncAll}
	rec, err := n.store.Get(storage.KindMesh, crdt.MeshID(model.MeshNamespace, ns))
	if err == nil {
		json.Unmarshal(rec.Value, &r) // a record that does not decode keeps the defaults
	}
	return r
}
