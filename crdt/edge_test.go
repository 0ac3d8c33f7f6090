package crdt

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/memmesh/memmesh/model"
)

func testEdge() *model.Edge {
	from, to := "aaaaaaaaaaaaaaaaaaaaaaaaaa", "file:storage/db.go:42"
	return &model.Edge{
		ID:        EdgeID(from, "touches", to),
		From:      from,
		Rel:       "touches",
		To:        to,
		Notes:     "batch commit path",
		Strength:  0.6,
		Origin:    "auto-link",
		ValidFrom: at("2025-01-01T00:00:00Z"),
		CreatedAt: at("2025-12-01T10:00:00.25Z"),
		UpdatedAt: at("2025-12-01T10:00:00.25Z"),
	}
}

func newTestEdge(tb testing.TB, actor string, e *model.Edge) *EdgeDoc {
	tb.Helper()
	d, err := NewEdgeDoc(actor, e)
	if err != nil {
		tb.Fatalf("NewEdgeDoc: %v", err)
	}
	tb.Cleanup(d.Close)
	return d
}

func materializeEdge(tb testing.TB, d *EdgeDoc) model.Edge {
	tb.Helper()
	e, err := d.Materialize()
	if err != nil {
		tb.Fatalf("Materialize: %v", err)
	}
	return e
}

func TestEdgeRoundTrip(t *testing.T) {
	bounded := testEdge()
	bounded.ValidTo = at("2025-06-01T00:00:00Z")
	bounded.Deleted = true
	minimal := &model.Edge{ID: EdgeID("a", "rel", "b"), From: "a", Rel: "rel", To: "b"}
	for _, tt := range []struct {
		name string
		in   *model.Edge
	}{
		{"open ended", testEdge()},
		{"bounded", bounded},
		{"minimal", minimal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newTestEdge(t, actorA, tt.in)
			got := materializeEdge(t, d)
			if len(got.Heads) != 1 {
				t.Fatalf("Heads = %q, want one", got.Heads)
			}
			want := *tt.in
			want.Heads = got.Heads
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Materialize:\n got %+v\nwant %+v", got, want)
			}
			loaded, err := LoadEdgeDoc(actorB, d.Save())
			if err != nil {
				t.Fatalf("LoadEdgeDoc: %v", err)
			}
			defer loaded.Close()
			if again := materializeEdge(t, loaded); !reflect.DeepEqual(again, got) {
				t.Errorf("after Save and Load:\n got %+v\nwant %+v", again, got)
			}
		})
	}
}

func TestEdgeSetters(t *testing.T) {
	d := newTestEdge(t, actorA, testEdge())
	from, to, updated := at("2025-02-01T00:00:00Z"), at("2025-03-01T00:00:00Z"), at("2025-12-05T00:00:00Z")
	must(t, d.SetNotes("new notes"))
	must(t, d.SetStrength(1))
	must(t, d.SetValidity(from, to))
	must(t, d.SetDeleted(true))
	must(t, d.SetUpdated(updated))
	must(t, d.Commit("edit"))
	got := materializeEdge(t, d)
	want := *testEdge()
	want.Notes, want.Strength, want.ValidFrom, want.ValidTo, want.Deleted, want.UpdatedAt = "new notes", 1, from, to, true, updated
	want.Heads = got.Heads
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after setters:\n got %+v\nwant %+v", got, want)
	}
}

func TestEdgeInvalid(t *testing.T) {
	d := newTestEdge(t, actorA, testEdge())
	setters := []struct {
		name string
		do   func() error
		want error
	}{
		{"strength NaN", func() error { return d.SetStrength(math.NaN()) }, ErrInvalidNumber},
		{"strength above 1", func() error { return d.SetStrength(2) }, ErrInvalidNumber},
		{"validity reversed", func() error { return d.SetValidity(at("2025-02-01T00:00:00Z"), at("2025-01-01T00:00:00Z")) }, ErrInvalidValidity},
		{"notes not UTF-8", func() error { return d.SetNotes("\xff") }, ErrInvalidString},
	}
	for _, tt := range setters {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}

	news := []struct {
		name   string
		change func(e *model.Edge)
		want   error
	}{
		{"id of another edge", func(e *model.Edge) { e.ID = EdgeID("x", "y", "z") }, ErrInvalidID},
		{"random id", func(e *model.Edge) { e.ID = NewID() }, ErrInvalidID},
		{"empty from", func(e *model.Edge) { e.From = ""; e.ID = EdgeID(e.From, e.Rel, e.To) }, ErrInvalidString},
		{"empty rel", func(e *model.Edge) { e.Rel = ""; e.ID = EdgeID(e.From, e.Rel, e.To) }, ErrInvalidString},
		{"NUL in to", func(e *model.Edge) { e.To = "a\x00b"; e.ID = EdgeID(e.From, e.Rel, e.To) }, ErrInvalidString},
		{"strength", func(e *model.Edge) { e.Strength = -1 }, ErrInvalidNumber},
		{"validity", func(e *model.Edge) { e.ValidTo = e.ValidFrom.Add(-time.Hour) }, ErrInvalidValidity},
	}
	for _, tt := range news {
		t.Run("new "+tt.name, func(t *testing.T) {
			e := testEdge()
			tt.change(e)
			if _, err := NewEdgeDoc(actorA, e); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestLoadEdgeDocRejects(t *testing.T) {
	e := testEdge()
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrEmpty},
		{"memory document", savedMemory(t), ErrWrongType},
		{"id not matching endpoints", rawDoc(t, map[string]any{
			keyType: typeEdge, keySchema: int64(schemaVersion), keyID: NewID(),
			keyFrom: e.From, keyRel: e.Rel, keyTo: e.To,
		}), ErrInvalidID},
		{"bad validity", rawDoc(t, map[string]any{
			keyType: typeEdge, keySchema: int64(schemaVersion), keyID: e.ID,
			keyFrom: e.From, keyRel: e.Rel, keyTo: e.To, keyValidity: "yesterday",
		}), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := LoadEdgeDoc(actorA, tt.data); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func mergeEdgesBothWays(t *testing.T, a, b *EdgeDoc) model.Edge {
	t.Helper()
	ab, err := a.Fork(actorC)
	must(t, err)
	defer ab.Close()
	must(t, ab.Merge(b))
	ba, err := b.Fork(actorC)
	must(t, err)
	defer ba.Close()
	must(t, ba.Merge(a))
	e1, e2 := materializeEdge(t, ab), materializeEdge(t, ba)
	if !reflect.DeepEqual(e1, e2) {
		t.Fatalf("merge order matters:\na+b %+v\nb+a %+v", e1, e2)
	}
	return e1
}

func TestEdgeConcurrentEditsMerge(t *testing.T) {
	base := newTestEdge(t, actorA, testEdge())
	a, err := base.Fork(actorA)
	must(t, err)
	defer a.Close()
	b, err := base.Fork(actorB)
	must(t, err)
	defer b.Close()

	// a changes only the end of the validity, b only the start: the merge
	// keeps one replica's interval, never a reversed mix of the two.
	must(t, a.SetNotes("from a"))
	must(t, a.SetValidity(testEdge().ValidFrom, at("2025-01-15T00:00:00Z")))
	must(t, a.Commit("a"))
	must(t, b.SetStrength(0.1))
	must(t, b.SetValidity(at("2025-02-01T00:00:00Z"), time.Time{}))
	must(t, b.Commit("b"))

	got := mergeEdgesBothWays(t, a, b)
	if got.Notes != "from a" || got.Strength != 0.1 {
		t.Errorf("notes %q strength %v, want both replicas' edits", got.Notes, got.Strength)
	}
	fromA := got.ValidTo.Equal(at("2025-01-15T00:00:00Z")) && got.ValidFrom.Equal(testEdge().ValidFrom)
	fromB := got.ValidTo.IsZero() && got.ValidFrom.Equal(at("2025-02-01T00:00:00Z"))
	if !fromA && !fromB {
		t.Errorf("validity %v..%v mixes the two replicas", got.ValidFrom, got.ValidTo)
	}
	if len(got.Heads) != 2 {
		t.Errorf("heads = %q, want two", got.Heads)
	}
}

// TestEdgeMadeTwice checks that the same edge created independently on two
// machines merges into one.
func TestEdgeMadeTwice(t *testing.T) {
	e1 := testEdge()
	e2 := testEdge()
	e2.Notes, e2.Origin = "made on b", "manual"
	a := newTestEdge(t, actorA, e1)
	b := newTestEdge(t, actorB, e2)
	got := mergeEdgesBothWays(t, a, b)
	if got.ID != e1.ID || got.From != e1.From || got.Rel != e1.Rel || got.To != e1.To {
		t.Errorf("merged edge %+v lost its identity", got)
	}
	if got.Notes != e1.Notes && got.Notes != e2.Notes {
		t.Errorf("notes = %q, want one replica's", got.Notes)
	}
}

func TestEdgeMergeDifferentID(t *testing.T) {
	a := newTestEdge(t, actorA, testEdge())
	other := &model.Edge{ID: EdgeID("x", "rel", "y"), From: "x", Rel: "rel", To: "y"}
	b := newTestEdge(t, actorB, other)
	if err := a.Merge(b); !errors.Is(err, ErrIDMismatch) {
		t.Errorf("err = %v, want %v", err, ErrIDMismatch)
	}
}
