package node

import (
	"context"
	"encoding/json"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// The device registry and namespace settings are mesh records, stored
// and replicated like memories whether or not the mesh runs; the mesh's
// Registry writes them, and a running mesh follows them.

// Devices lists the device registry.
func (n *Node) Devices(ctx context.Context) ([]api.Device, error) {
	return n.registry.Devices()
}

// Revoke removes a device from the mesh for good: every member refuses it
// once the revocation reaches them. ref is a device id, a unique prefix of
// one, or a unique device name.
func (n *Node) Revoke(ctx context.Context, ref string) (api.Device, error) {
	d, err := n.registry.Revoke(ref)
	return d, storeError(err)
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
	var staleDays *int64
	if ch.StaleAfter != nil {
		staleDays = new(int64)
		if *ch.StaleAfter != "default" {
			d, err := api.ParseTTL(*ch.StaleAfter)
			days := int64(d / (24 * time.Hour))
			if err != nil || d <= 0 || d%(24*time.Hour) != 0 || days > model.MaxStaleDays {
				return model.MeshRecord{}, api.Invalidf("stale after %q: give whole days, 1d to %dd, or default", *ch.StaleAfter, model.MaxStaleDays)
			}
			*staleDays = days
		}
	}
	r, err := n.registry.SetNamespace(ns, ch.Sync, staleDays)
	return r, storeError(err)
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
