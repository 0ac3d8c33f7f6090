package crdt

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/memmesh/memmesh/model"
)

func deviceRecord(key, name string) *model.MeshRecord {
	return &model.MeshRecord{ID: MeshID(model.MeshDevice, key), What: model.MeshDevice, Key: key, Name: name, AddedBy: "A", AddedAt: at("2026-01-02T03:04:05Z")}
}

func TestMeshRoundTripAndRevoke(t *testing.T) {
	d, err := NewMeshDoc(ActorID("A"), deviceRecord("DEV1", "laptop"))
	must(t, err)
	defer d.Close()
	loaded, err := LoadMeshDoc(ActorID("B"), d.Save())
	must(t, err)
	defer loaded.Close()
	r, err := loaded.Materialize()
	must(t, err)
	if r.Key != "DEV1" || r.Name != "laptop" || r.Revoked() || len(r.Heads) != 1 {
		t.Fatalf("loaded %+v", r)
	}
	// Revocation on B, a rename on A: both survive the merge, and the
	// revocation cannot be undone by revoking again.
	must(t, loaded.Revoke("B", at("2026-02-01T00:00:00Z")))
	must(t, loaded.Commit("revoke"))
	must(t, d.SetName("old laptop", at("2026-02-01T00:00:01Z")))
	must(t, d.Commit("rename"))
	must(t, d.Merge(loaded))
	r, err = d.Materialize()
	must(t, err)
	if !r.Revoked() || r.RevokedBy != "B" || r.Name != "old laptop" {
		t.Fatalf("merged %+v", r)
	}
	heads := r.Heads
	must(t, d.Revoke("A", at("2026-03-01T00:00:00Z")))
	must(t, d.Commit("revoke again"))
	if r2, _ := d.Materialize(); r2.RevokedBy != "B" || len(r2.Heads) != len(heads) || r2.Heads[0] != heads[0] {
		t.Fatalf("a second revoke changed the record: %+v", r2)
	}
}

func TestMeshMadeTwiceMerges(t *testing.T) {
	a, err := NewMeshDoc(ActorID("A"), &model.MeshRecord{ID: MeshID(model.MeshNamespace, "secrets"), What: model.MeshNamespace, Key: "secrets", Sync: model.SyncLocal})
	must(t, err)
	defer a.Close()
	b, err := NewMeshDoc(ActorID("B"), &model.MeshRecord{ID: MeshID(model.MeshNamespace, "secrets"), What: model.MeshNamespace, Key: "secrets", Sync: model.SyncAll})
	must(t, err)
	defer b.Close()
	must(t, a.Merge(b))
	must(t, b.Merge(a))
	ra, err := a.Materialize()
	must(t, err)
	rb, err := b.Materialize()
	must(t, err)
	if ra.Sync != rb.Sync || ra.Heads[0] != rb.Heads[0] || len(ra.Heads) != 2 {
		t.Fatalf("replicas differ after merging: %+v %+v", ra, rb)
	}
}

func TestMeshInvalid(t *testing.T) {
	for name, r := range map[string]*model.MeshRecord{
		"wrong id":        {ID: MeshID(model.MeshDevice, "X"), What: model.MeshDevice, Key: "Y"},
		"unknown kind":    {ID: MeshID("fleet", "X"), What: "fleet", Key: "X"},
		"empty key":       {ID: MeshID(model.MeshDevice, ""), What: model.MeshDevice},
		"bad policy":      {ID: MeshID(model.MeshNamespace, "n"), What: model.MeshNamespace, Key: "n", Sync: "some"},
		"device and sync": {ID: MeshID(model.MeshDevice, "X"), What: model.MeshDevice, Key: "X", Sync: model.SyncAll},
	} {
		if d, err := NewMeshDoc(ActorID("A"), r); err == nil {
			d.Close()
			t.Errorf("%s: accepted", name)
		}
	}
	// A memory's bytes are not a mesh record.
	if _, err := LoadMeshDoc(ActorID("A"), savedMemory(t)); !errors.Is(err, ErrWrongType) {
		t.Fatalf("memory loaded as mesh record: %v", err)
	}
}

// TestMeshRevokeInvalidBy: a revoker that is not UTF-8 is refused as an
// invalid string, as every other text field is, and revokes nothing.
func TestMeshRevokeInvalidBy(t *testing.T) {
	d, err := NewMeshDoc(ActorID("A"), deviceRecord("DEV1", "laptop"))
	must(t, err)
	defer d.Close()
	if err := d.Revoke("\xff\xfe", at("2026-02-01T00:00:00Z")); !errors.Is(err, ErrInvalidString) {
		t.Fatalf("Revoke: err = %v, want %v", err, ErrInvalidString)
	}
	if r, err := d.Materialize(); err != nil || r.Revoked() {
		t.Fatalf("after a refused revoke: %+v, %v", r, err)
	}
}

// TestMeshWrongKindEdits: a device record takes no namespace settings and
// a namespace record cannot be revoked; either would leave a record that
// no longer reads.
func TestMeshWrongKindEdits(t *testing.T) {
	dev, err := NewMeshDoc(ActorID("A"), deviceRecord("DEV1", "laptop"))
	must(t, err)
	defer dev.Close()
	ns, err := NewMeshDoc(ActorID("A"), &model.MeshRecord{ID: MeshID(model.MeshNamespace, "work"), What: model.MeshNamespace, Key: "work", Sync: model.SyncAll})
	must(t, err)
	defer ns.Close()
	when := at("2026-02-01T00:00:00Z")
	for name, edit := range map[string]func() error{
		"sync of a device":       func() error { return dev.SetSync(model.SyncLocal, when) },
		"stale days of a device": func() error { return dev.SetStaleDays(30, when) },
		"revoke of a namespace":  func() error { return ns.Revoke("A", when) },
	} {
		if err := edit(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want %v", name, err, ErrMalformed)
		}
	}
	for _, d := range []*MeshDoc{dev, ns} {
		again, err := LoadMeshDoc(ActorID("B"), d.Save())
		if err != nil {
			t.Fatalf("a record no longer loads after refused edits: %v", err)
		}
		again.Close()
	}
}

// TestMeshRevokeZeroTime: a revocation at the zero time would read as not
// revoked, and revoking again would make an empty change that Commit
// fails on; it is refused.
func TestMeshRevokeZeroTime(t *testing.T) {
	d, err := NewMeshDoc(ActorID("A"), deviceRecord("DEV1", "laptop"))
	must(t, err)
	defer d.Close()
	for range 2 {
		if err := d.Revoke("B", time.Time{}); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Revoke: err = %v, want %v", err, ErrMalformed)
		}
		must(t, d.Commit("revoke"))
	}
	if r, err := d.Materialize(); err != nil || r.RevokedBy != "" {
		t.Fatalf("after refused revocations: %+v, %v", r, err)
	}
}

// Revoke marks a device record revoked, as nodes did before revocations
// were records of their own (a peer of that version may still send such
// records, which still read as revoked); revoking a revoked device
// changes nothing. at must not be the zero time, which reads as not
// revoked.
func (d *MeshDoc) Revoke(by string, at time.Time) error {
	if err := checkText(keyRevokedBy, by); err != nil {
		return err
	}
	if millis(at) == 0 {
		return fmt.Errorf("%w: a revocation at the zero time revokes nothing", ErrMalformed)
	}
	r, err := d.record(model.MeshDevice, "revoke")
	if err != nil {
		return err
	}
	if r.Revoked() {
		return nil
	}
	return d.put(d.am.RootMap(), field{keyRevokedBy, by}, field{keyRevokedAt, millis(at)}, field{keyUpdatedAt, millis(at)})
}
