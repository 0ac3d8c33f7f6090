package crdt

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/memmesh/memmesh/model"
)

func testFrontier() *Frontier {
	f := &Frontier{}
	session := actorB + "0102030405060708"
	m1, m2, e := NewID(), NewID(), NewID()
	f.AddChange(DocRef{'m', m1}, actorB, 3)
	f.AddChange(DocRef{'m', m1}, session, 1)
	f.AddChange(DocRef{'m', m2}, session, 7)
	f.AddChange(DocRef{'m', m2}, session, 2) // lower: kept at 7
	f.AddChange(DocRef{'e', e}, actorB, 1)
	f.AddPurge(m2)
	return f
}

func TestFrontierRoundTrip(t *testing.T) {
	f := testFrontier()
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeFrontier(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := got.Encode()
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("re-encoding gives other bytes (%v)", err)
	}
	if got.Len() != 4 {
		t.Fatalf("%d documents, want 4", got.Len())
	}
	for doc, actors := range f.docs {
		for actor, seq := range actors {
			if !got.Allows(doc, actor, seq) || got.Allows(doc, actor, seq+1) {
				t.Fatalf("%v by %s: the frontier does not stop at %d", doc, actor, seq)
			}
		}
	}
	if got.Allows(DocRef{'m', NewID()}, actorB, 1) {
		t.Fatal("a document the frontier does not name is allowed")
	}
}

func TestFrontierIntersect(t *testing.T) {
	a, b := &Frontier{}, &Frontier{}
	m1, m2 := NewID(), NewID()
	a.AddChange(DocRef{'m', m1}, actorB, 5)
	b.AddChange(DocRef{'m', m1}, actorB, 3)
	a.AddChange(DocRef{'m', m2}, actorB, 1)
	a.AddPurge(m1)
	b.AddPurge(m1)
	b.AddPurge(m2)
	both := a.Intersect(b)
	switch {
	case !both.Allows(DocRef{'m', m1}, actorB, 3) || both.Allows(DocRef{'m', m1}, actorB, 4):
		t.Fatal("the intersection does not stop at the lower frontier")
	case both.Allows(DocRef{'m', m2}, actorB, 1):
		t.Fatal("the intersection holds a document only one frontier names")
	case !both.AllowsPurge(m1) || both.AllowsPurge(m2):
		t.Fatal("the intersection's purges are not those both hold")
	}
}

func TestDecodeFrontierRefusesBadInput(t *testing.T) {
	good, err := testFrontier().Encode()
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{2}, good[1:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(bytes.Clone(good), 0),
		// A count no bytes hold: refused before anything is allocated.
		"huge count": {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		if _, err := DecodeFrontier(in); !errors.Is(err, ErrInvalidFrontier) {
			t.Errorf("%s: %v, want ErrInvalidFrontier", name, err)
		}
	}
}

func TestRevocationDoc(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	key := RevocationKey("device-b", "device-a", "0011223344556677")
	r := &model.MeshRecord{ID: MeshID(model.MeshRevocation, key), What: model.MeshRevocation, Key: key,
		Revokes: "device-b", RevokedBy: "device-a", RevokedAt: at}
	d, err := NewRevocationDoc(actorA, r, testFrontier())
	if err != nil {
		t.Fatal(err)
	}
	data := d.Save()
	d.Close()
	if authors, err := Authors(data); err != nil || len(authors) != 1 || authors[actorA] != 1 {
		t.Fatalf("a revocation is one change by its revoker: %v, %v", authors, err)
	}
	l, err := LoadMeshDoc(actorC, data)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, err := l.Materialize()
	if err != nil || got.Revokes != "device-b" || got.RevokedBy != "device-a" || !got.RevokedAt.Equal(at) {
		t.Fatalf("materialised %+v, %v", got, err)
	}
	f, err := l.Frontier()
	if err != nil || f.Len() != 4 {
		t.Fatalf("frontier of %d documents (%v), want 4", f.Len(), err)
	}
	for _, bad := range []model.MeshRecord{
		{What: model.MeshRevocation, Key: RevocationKey("device-b", "device-b", "0011223344556677"), Revokes: "device-b", RevokedBy: "device-b", RevokedAt: at},
		{What: model.MeshRevocation, Key: "device-b/device-a/xyz", Revokes: "device-b", RevokedBy: "device-a", RevokedAt: at},
		{What: model.MeshRevocation, Key: key, Revokes: "device-b", RevokedBy: "device-a"},
	} {
		bad.ID = MeshID(bad.What, bad.Key)
		if d, err := NewRevocationDoc(actorA, &bad, &Frontier{}); err == nil {
			d.Close()
			t.Errorf("revocation %+v was made", bad)
		}
	}
}
