package crdt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/memmesh/memmesh/model"
)

// Root keys of a mesh document, besides keyType, keySchema and keyID.
const (
	keyWhat      = "what"       // model.MeshDevice or model.MeshNamespace
	keyKey       = "key"        // the device id or namespace name
	keyName      = "name"       // device: a human name
	keyAddedBy   = "added_by"   // device: the device that admitted it
	keyAddedAt   = "added_at"   // device: Unix ms
	keyRevokedBy = "revoked_by" // device: who revoked it
	keyRevokedAt = "revoked_at" // device: Unix ms; set once, never cleared
	keySync      = "sync"       // namespace: model.SyncAll or model.SyncLocal
	keyStale     = "stale_days" // namespace: age in days after which a memory is stale; 0 means the default
	keyRevokes   = "revokes"    // revocation: the device it revokes
	keyFrontier  = "frontier"   // revocation: the encoded Frontier, bytes
)

// RevocationKey is the key of a revocation record: the device revoked,
// the member that revoked it, and a random nonce, so that every
// revocation is a record of its own, written once by its revoker.
func RevocationKey(revokes, by, nonce string) string { return revokes + "/" + by + "/" + nonce }

// MeshID is the id of the mesh record of (what, key): like EdgeID, a hash,
// so that the record made on two machines merges into one document.
func MeshID(what, key string) string {
	sum := sha256.Sum256([]byte("mesh\x00" + what + "\x00" + key))
	return idEncoding.EncodeToString(sum[:16])
}

// MeshDoc is the Automerge document of one mesh record. It is not safe for
// concurrent use; after Close it must not be used.
type MeshDoc struct {
	document
}

// NewMeshDoc creates the document of r and commits it as one change. r.ID
// must be MeshID(r.What, r.Key); r.Heads is ignored.
func NewMeshDoc(actor string, r *model.MeshRecord) (*MeshDoc, error) {
	if err := checkMesh(r); err != nil {
		return nil, err
	}
	return createMeshDoc(actor, "create",
		field{keyType, typeMesh},
		field{keySchema, int64(schemaVersion)},
		field{keyID, r.ID},
		field{keyWhat, r.What},
		field{keyKey, r.Key},
		field{keyName, r.Name},
		field{keyAddedBy, r.AddedBy},
		field{keyAddedAt, millis(r.AddedAt)},
		field{keyRevokedBy, r.RevokedBy},
		field{keyRevokedAt, millis(r.RevokedAt)},
		field{keySync, r.Sync},
		field{keyStale, r.StaleDays},
		field{keyUpdatedAt, millis(r.UpdatedAt)},
	)
}

// createMeshDoc creates a mesh record's document holding fields (those
// of zero value left out) and commits it as one change named message.
func createMeshDoc(actor, message string, fields ...field) (*MeshDoc, error) {
	base, err := newDocument(actor)
	if err != nil {
		return nil, err
	}
	d := &MeshDoc{base}
	err = d.init(d.am.RootMap(), fields...)
	if err == nil {
		err = d.commit(message)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// NewRevocationDoc creates the document of the revocation r (What
// model.MeshRevocation, Key RevocationKey(r.Revokes, r.RevokedBy, nonce))
// holding what the revoker held of the revoked device, and commits it as
// its one change.
func NewRevocationDoc(actor string, r *model.MeshRecord, f *Frontier) (*MeshDoc, error) {
	if r.What != model.MeshRevocation {
		return nil, fmt.Errorf("%w: a %s record is no revocation", ErrMalformed, r.What)
	}
	frontier, err := f.Encode()
	if err != nil {
		return nil, err
	}
	if err := checkMesh(r); err != nil {
		return nil, err
	}
	return createMeshDoc(actor, "revoke",
		field{keyType, typeMesh},
		field{keySchema, int64(schemaVersion)},
		field{keyID, r.ID},
		field{keyWhat, r.What},
		field{keyKey, r.Key},
		field{keyRevokes, r.Revokes},
		field{keyRevokedBy, r.RevokedBy},
		field{keyRevokedAt, millis(r.RevokedAt)},
		field{keyFrontier, frontier},
	)
}

// Frontier returns the frontier a revocation's document holds.
func (d *MeshDoc) Frontier() (*Frontier, error) {
	if d.am == nil {
		return nil, ErrClosed
	}
	v, err := d.am.RootMap().Get(keyFrontier)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if v.Kind() != automerge.KindBytes {
		return nil, fmt.Errorf("%w: frontier is %v, want bytes", ErrMalformed, v.Kind())
	}
	noteGarbage(int64(len(v.Bytes())))
	return DecodeFrontier(v.Bytes())
}

// Created returns the record as its first change made it, and that
// change's actor: a device record's adder and time of admission as the
// admitting member wrote them, whatever later changes say. Of two first
// changes (the record made on two machines at once) it takes the one
// with the smaller hash.
func (d *MeshDoc) Created() (model.MeshRecord, string, error) {
	if d.am == nil {
		return model.MeshRecord{}, "", ErrClosed
	}
	changes, err := d.am.Changes()
	if err != nil {
		return model.MeshRecord{}, "", fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	var first *automerge.Change
	for _, ch := range changes {
		if len(ch.Dependencies()) == 0 && (first == nil || ch.Hash().String() < first.Hash().String()) {
			first = ch
		}
	}
	if first == nil {
		return model.MeshRecord{}, "", fmt.Errorf("%w: no first change", ErrCorrupt)
	}
	am, err := d.am.Fork(first.Hash())
	if err != nil {
		return model.MeshRecord{}, "", fmt.Errorf("crdt: fork: %w", err)
	}
	c := &MeshDoc{document{am: am, cost: d.cost}}
	defer c.Close()
	r, err := c.Materialize()
	return r, first.ActorID(), err
}

// LoadMeshDoc loads a saved mesh document, with the same checks as
// LoadMemoryDoc; in addition the id must match what and key.
func LoadMeshDoc(actor string, data []byte) (*MeshDoc, error) {
	base, err := loadDocument(actor, typeMesh, data)
	if err != nil {
		return nil, err
	}
	d := &MeshDoc{base}
	if _, err := d.Materialize(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// SetName sets a device's name.
func (d *MeshDoc) SetName(name string, at time.Time) error {
	if err := checkText(keyName, name); err != nil {
		return err
	}
	return d.put(d.am.RootMap(), field{keyName, name}, field{keyUpdatedAt, millis(at)})
}

// record returns the record, which must be of kind what: op, refused on
// other kinds, names the edit in the error.
func (d *MeshDoc) record(what, op string) (model.MeshRecord, error) {
	r, err := d.Materialize()
	if err != nil {
		return model.MeshRecord{}, err
	}
	if r.What != what {
		return model.MeshRecord{}, fmt.Errorf("%w: %s of a %s record", ErrMalformed, op, r.What)
	}
	return r, nil
}

// SetSync sets a namespace's replication policy. A device record has no
// policy and is refused with ErrMalformed.
func (d *MeshDoc) SetSync(policy string, at time.Time) error {
	if err := checkSync(policy); err != nil {
		return err
	}
	if _, err := d.record(model.MeshNamespace, "sync policy"); err != nil {
		return err
	}
	return d.put(d.am.RootMap(), field{keySync, policy}, field{keyUpdatedAt, millis(at)})
}

// SetStaleDays sets the age in days after which a namespace's memories
// are stale (0: the default). A device record has no such age and is
// refused with ErrMalformed.
func (d *MeshDoc) SetStaleDays(days int64, at time.Time) error {
	if days < 0 || days > model.MaxStaleDays {
		return fmt.Errorf("%w: stale after %d days, want 0 to %d", ErrInvalidNumber, days, model.MaxStaleDays)
	}
	if _, err := d.record(model.MeshNamespace, "staleness age"); err != nil {
		return err
	}
	return d.put(d.am.RootMap(), field{keyStale, days}, field{keyUpdatedAt, millis(at)})
}

// Commit turns the operations made since the last commit into one change.
func (d *MeshDoc) Commit(msg string) error { return d.commit(msg) }

// Materialize returns the record as a plain value, with Heads sorted.
func (d *MeshDoc) Materialize() (model.MeshRecord, error) {
	if d.am == nil {
		return model.MeshRecord{}, ErrClosed
	}
	var rd reader
	root := rd.all(d.am.RootMap())
	r := model.MeshRecord{
		ID:        rd.str(root, keyID),
		What:      rd.str(root, keyWhat),
		Key:       rd.str(root, keyKey),
		Name:      rd.str(root, keyName),
		AddedBy:   rd.str(root, keyAddedBy),
		AddedAt:   rd.time(root, keyAddedAt),
		RevokedBy: rd.str(root, keyRevokedBy),
		RevokedAt: rd.time(root, keyRevokedAt),
		Revokes:   rd.str(root, keyRevokes),
		Sync:      rd.str(root, keySync),
		StaleDays: rd.int(root, keyStale),
		UpdatedAt: rd.time(root, keyUpdatedAt),
	}
	if err := rd.done(); err != nil {
		return model.MeshRecord{}, err
	}
	if err := checkMesh(&r); err != nil {
		return model.MeshRecord{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	r.Heads = d.heads()
	return r, nil
}

// Heads returns the document's heads as sorted hex strings.
func (d *MeshDoc) Heads() []string { return d.heads() }

// Save returns the whole document in Automerge's binary format.
func (d *MeshDoc) Save() []byte { return d.save() }

// Merge applies the changes of other that d lacks. Both must be of the
// same record. If Automerge refuses the changes (ErrUnmergeable; see
// document.merge), d is closed.
func (d *MeshDoc) Merge(other *MeshDoc) error { return d.merge(&other.document) }

// Close releases the document. It is safe to call more than once.
func (d *MeshDoc) Close() { d.close() }

func checkMesh(r *model.MeshRecord) error {
	switch r.What {
	case model.MeshDevice:
		if r.Sync != "" || r.StaleDays != 0 {
			return fmt.Errorf("%w: a device record has no namespace settings", ErrInvalidString)
		}
	case model.MeshNamespace:
		if err := checkSync(r.Sync); err != nil {
			return err
		}
		if r.StaleDays < 0 || r.StaleDays > model.MaxStaleDays {
			return fmt.Errorf("%w: stale after %d days", ErrInvalidNumber, r.StaleDays)
		}
	case model.MeshRevocation:
		if err := checkRevocation(r); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: mesh record kind %q", ErrInvalidString, r.What)
	}
	if r.Revokes != "" && r.What != model.MeshRevocation {
		return fmt.Errorf("%w: a %s record revokes nothing", ErrInvalidString, r.What)
	}
	if err := checkElems(keyKey, []string{r.Key}); err != nil {
		return err
	}
	if err := checkText(keyName, r.Name, keyAddedBy, r.AddedBy, keyRevokedBy, r.RevokedBy, keyRevokes, r.Revokes); err != nil {
		return err
	}
	if r.ID != MeshID(r.What, r.Key) {
		return fmt.Errorf("%w: mesh record %q is not the id of %s %q", ErrInvalidID, r.ID, r.What, r.Key)
	}
	return nil
}

// checkRevocation checks what a revocation record must hold: the device
// it revokes and the member that did, neither of them empty nor the
// other, the time, and its key.
func checkRevocation(r *model.MeshRecord) error {
	switch {
	case r.Revokes == "" || r.RevokedBy == "" || r.Revokes == r.RevokedBy:
		return fmt.Errorf("%w: revocation of %q by %q", ErrInvalidString, r.Revokes, r.RevokedBy)
	case millis(r.RevokedAt) == 0:
		return fmt.Errorf("%w: a revocation at the zero time", ErrMalformed)
	case r.Sync != "" || r.StaleDays != 0 || r.Name != "" || r.AddedBy != "":
		return fmt.Errorf("%w: a revocation has no name, adder or namespace settings", ErrInvalidString)
	}
	nonce, ok := strings.CutPrefix(r.Key, r.Revokes+"/"+r.RevokedBy+"/")
	if _, err := hex.DecodeString(nonce); !ok || len(nonce) != 16 || err != nil {
		return fmt.Errorf("%w: revocation key %q", ErrInvalidString, r.Key)
	}
	return nil
}

func checkSync(policy string) error {
	if policy != model.SyncAll && policy != model.SyncLocal {
		return fmt.Errorf("%w: sync policy %q, want %q or %q", ErrInvalidString, policy, model.SyncAll, model.SyncLocal)
	}
	return nil
}
