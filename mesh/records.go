package mesh

import (
	"fmt"

	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/transport"
)

// The mesh's view of the registry's records: the devices that may
// connect, and the namespaces that never leave this machine.

// Noted tells the mesh of a mesh record the registry committed: its view
// of the registry follows and, when what revocations refuse changed
// (revoked), revoked devices are disconnected and what they made beyond
// their frontiers is removed.
func (m *Mesh) Noted(r model.MeshRecord, revoked bool) {
	m.noteRecord(r)
	if revoked {
		m.revocationsChanged()
	}
}

// noteRecord updates the in-memory view of one mesh record. Callers that
// hold m.mu use noteRecordLocked.
func (m *Mesh) noteRecord(r model.MeshRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noteRecordLocked(r)
}

// forgetRecord drops a mesh record the sweep erased from the view.
func (m *Mesh) forgetRecord(r model.MeshRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch r.What {
	case model.MeshDevice:
		delete(m.devices, r.Key)
	case model.MeshNamespace:
		if m.localNS[r.Key] {
			delete(m.localNS, r.Key)
			m.privateChanged()
		}
	}
}

func (m *Mesh) noteRecordLocked(r model.MeshRecord) {
	switch r.What {
	case model.MeshDevice:
		m.devices[r.Key] = r
	case model.MeshNamespace:
		if local := r.Sync == model.SyncLocal; local != m.localNS[r.Key] {
			if local {
				m.localNS[r.Key] = true
			} else {
				delete(m.localNS, r.Key)
			}
			m.privateChanged()
		}
	}
}

// Authorize admits a device that is in the registry and not revoked.
func (m *Mesh) Authorize(device string) error {
	m.mu.Lock()
	_, ok := m.devices[device]
	m.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("%w: %s is not in the device registry", transport.ErrUnauthorized, device)
	case m.registry.Revoked(device):
		return fmt.Errorf("%w: %s was revoked", transport.ErrRevoked, device)
	}
	return nil
}
