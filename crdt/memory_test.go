package crdt

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/memmesh/memmesh/model"
)

var (
	actorA = ActorID("device-a")
	actorB = ActorID("device-b")
	actorC = ActorID("device-c")
)

// at returns a time with the millisecond precision documents store.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC().Truncate(time.Millisecond)
}

func testMemory() *model.Memory {
	return &model.Memory{
		ID:         NewID(),
		Namespace:  "memmesh",
		Title:      "Pebble batches are synced",
		Content:    "Every acknowledged mutation is one Pebble batch committed with pebble.Sync.",
		Kind:       "convention",
		Tags:       []string{"storage", "durability", "pebble"},
		Touches:    []string{"storage/db.go"},
		Tier:       model.TierAgent,
		Confidence: 0.75,
		Status:     model.StatusActive,
		ExpiresAt:  at("2026-03-01T00:00:00.123Z"),
		Provenance: model.Provenance{
			Device:    "device-a",
			Agent:     "claude-code",
			Session:   "s-1",
			CreatedAt: at("2025-12-01T10:00:00.5Z"),
			UpdatedAt: at("2025-12-01T10:00:00.5Z"),
		},
	}
}

func newTestDoc(tb testing.TB, actor string, m *model.Memory) *MemoryDoc {
	tb.Helper()
	d, err := NewMemoryDoc(actor, m)
	if err != nil {
		tb.Fatalf("NewMemoryDoc: %v", err)
	}
	tb.Cleanup(d.Close)
	return d
}

func materialize(tb testing.TB, d *MemoryDoc) model.Memory {
	tb.Helper()
	m, err := d.Materialize()
	if err != nil {
		tb.Fatalf("Materialize: %v", err)
	}
	return m
}

func fork(tb testing.TB, d *MemoryDoc, actor string) *MemoryDoc {
	tb.Helper()
	f, err := d.Fork(actor)
	if err != nil {
		tb.Fatalf("Fork: %v", err)
	}
	tb.Cleanup(f.Close)
	return f
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// wantCreated is what Materialize returns for a document just made from in.
func wantCreated(in *model.Memory, got model.Memory) model.Memory {
	want := *in
	want.Tags = slices.Sorted(slices.Values(in.Tags))
	want.Touches = slices.Sorted(slices.Values(in.Touches))
	want.Revisions = []model.Revision{{
		ID:     got.Revisions[0].ID,
		Text:   in.Content,
		Device: in.Provenance.Device,
		Agent:  in.Provenance.Agent,
		At:     in.Provenance.CreatedAt,
	}}
	want.Heads = got.Heads
	return want
}

func TestMemoryRoundTrip(t *testing.T) {
	full := testMemory()
	compacted := testMemory()
	compacted.Status = model.StatusCompacted
	compacted.CompactedInto = NewID()
	compacted.Evergreen = true
	compacted.Tier = model.TierHuman
	compacted.Confidence = 1
	minimal := &model.Memory{ID: NewID(), Tier: model.TierAuto, Status: model.StatusActive}

	for _, tt := range []struct {
		name string
		in   *model.Memory
	}{
		{"full", full},
		{"compacted", compacted},
		{"minimal", minimal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newTestDoc(t, actorA, tt.in)
			got := materialize(t, d)
			if len(got.Revisions) != 1 || !ValidID(got.Revisions[0].ID) {
				t.Fatalf("Revisions = %+v, want one with a valid id", got.Revisions)
			}
			if len(got.Heads) != 1 || len(got.Heads[0]) != 64 {
				t.Fatalf("Heads = %q, want one sha256 hex", got.Heads)
			}
			if want := wantCreated(tt.in, got); !reflect.DeepEqual(got, want) {
				t.Errorf("Materialize:\n got %+v\nwant %+v", got, want)
			}

			loaded, err := LoadMemoryDoc(actorB, d.Save())
			if err != nil {
				t.Fatalf("LoadMemoryDoc: %v", err)
			}
			defer loaded.Close()
			if again := materialize(t, loaded); !reflect.DeepEqual(again, got) {
				t.Errorf("after Save and Load:\n got %+v\nwant %+v", again, got)
			}
		})
	}
}

func TestMemorySetters(t *testing.T) {
	d := newTestDoc(t, actorA, testMemory())
	into := NewID()
	updated := at("2025-12-02T08:00:00Z")
	must(t, d.SetTitle("new title"))
	must(t, d.SetNamespace("other"))
	must(t, d.SetKind("decision"))
	must(t, d.SetTier(model.TierHuman))
	must(t, d.SetConfidence(0.5))
	must(t, d.SetEvergreen(true))
	must(t, d.SetStatus(model.StatusCompacted, into))
	must(t, d.SetExpiresAt(time.Time{}))
	must(t, d.SetUpdated(updated))
	must(t, d.AddTags("zeta", "alpha", "storage"))
	must(t, d.RemoveTags("pebble", "absent"))
	must(t, d.AddTouches("node/node.go"))
	must(t, d.RemoveTouches("storage/db.go"))
	must(t, d.Commit("edit"))

	got := materialize(t, d)
	want := model.Memory{
		Namespace: "other", Title: "new title", Kind: "decision",
		Tags:    []string{"alpha", "durability", "storage", "zeta"},
		Touches: []string{"node/node.go"},
		Tier:    model.TierHuman, Confidence: 0.5, Evergreen: true,
		Status: model.StatusCompacted, CompactedInto: into,
	}
	got.ID, got.Content, got.Provenance, got.Revisions, got.Heads = "", "", model.Provenance{}, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after setters:\n got %+v\nwant %+v", got, want)
	}
	if p := materialize(t, d).Provenance; !p.UpdatedAt.Equal(updated) || p.UpdatedAt.Location() != time.UTC {
		t.Errorf("UpdatedAt = %v, want %v in UTC", p.UpdatedAt, updated)
	}
}

func TestMemoryConfirmed(t *testing.T) {
	d := newTestDoc(t, actorA, testMemory())
	if p := materialize(t, d).Provenance; !p.ConfirmedAt.IsZero() || p.ConfirmedBy != "" {
		t.Fatalf("a new memory is confirmed: %+v", p)
	}
	confirmed := at("2025-12-03T09:00:00Z")
	must(t, d.SetConfirmed(confirmed, "ana"))
	must(t, d.Commit("confirm"))
	p := materialize(t, d).Provenance
	if !p.ConfirmedAt.Equal(confirmed) || p.ConfirmedBy != "ana" {
		t.Fatalf("after SetConfirmed: %+v", p)
	}
	if err := d.SetConfirmed(confirmed, "\xff"); !errors.Is(err, ErrInvalidString) {
		t.Fatalf("SetConfirmed by a name that is not UTF-8: %v", err)
	}
	// A memory written with a confirmation (an import) keeps it.
	m := testMemory()
	m.Provenance.ConfirmedAt, m.Provenance.ConfirmedBy = confirmed, "ana"
	if p := materialize(t, newTestDoc(t, actorA, m)).Provenance; !p.ConfirmedAt.Equal(confirmed) || p.ConfirmedBy != "ana" {
		t.Fatalf("created confirmed: %+v", p)
	}
}

func TestMemorySettersUnchangedMakeNoChange(t *testing.T) {
	in := testMemory()
	d := newTestDoc(t, actorA, in)
	heads := d.Heads()
	must(t, d.SetTitle(in.Title))
	must(t, d.SetConfidence(in.Confidence))
	must(t, d.SetExpiresAt(in.ExpiresAt))
	must(t, d.AddTags(in.Tags...))
	must(t, d.RemoveTags("absent"))
	must(t, d.Commit("nothing"))
	if got := d.Heads(); !slices.Equal(got, heads) {
		t.Errorf("heads changed from %q to %q", heads, got)
	}
}

func TestMemoryInvalidInput(t *testing.T) {
	d := newTestDoc(t, actorA, testMemory())
	before := materialize(t, d)
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"tier", func() error { return d.SetTier("root") }, ErrInvalidTier},
		{"empty tier", func() error { return d.SetTier("") }, ErrInvalidTier},
		{"status", func() error { return d.SetStatus("gone", "") }, ErrInvalidStatus},
		{"compacted without target", func() error { return d.SetStatus(model.StatusCompacted, "") }, ErrInvalidID},
		{"compacted into bad id", func() error { return d.SetStatus(model.StatusCompacted, "m-abc") }, ErrInvalidID},
		{"target without compacted", func() error { return d.SetStatus(model.StatusStale, NewID()) }, ErrInvalidStatus},
		{"confidence NaN", func() error { return d.SetConfidence(math.NaN()) }, ErrInvalidNumber},
		{"confidence negative", func() error { return d.SetConfidence(-0.1) }, ErrInvalidNumber},
		{"confidence above 1", func() error { return d.SetConfidence(1.5) }, ErrInvalidNumber},
		{"confidence +Inf", func() error { return d.SetConfidence(math.Inf(1)) }, ErrInvalidNumber},
		{"title not UTF-8", func() error { return d.SetTitle("bad \xff") }, ErrInvalidString},
		{"empty tag", func() error { return d.AddTags("ok", "") }, ErrInvalidString},
		{"tag not UTF-8", func() error { return d.AddTags("\xfe") }, ErrInvalidString},
		{"remove empty touch", func() error { return d.RemoveTouches("") }, ErrInvalidString},
		{"revision not UTF-8", func() error { _, err := d.AppendRevision("\xff", "dev", "", time.Now()); return err }, ErrInvalidString},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	must(t, d.Commit("nothing"))
	if after := materialize(t, d); !reflect.DeepEqual(after, before) {
		t.Errorf("invalid input changed the document:\n got %+v\nwant %+v", after, before)
	}
}

// TestCommitMessageNotUTF8: a commit message that is not UTF-8 is refused
// as an invalid string, and the edits stay pending for the next commit.
func TestCommitMessageNotUTF8(t *testing.T) {
	d := newTestDoc(t, actorA, testMemory())
	heads := d.Heads()
	must(t, d.SetTitle("renamed"))
	if err := d.Commit("bad \xff"); !errors.Is(err, ErrInvalidString) {
		t.Fatalf("Commit: err = %v, want %v", err, ErrInvalidString)
	}
	must(t, d.Commit("rename"))
	if m := materialize(t, d); m.Title != "renamed" || slices.Equal(m.Heads, heads) {
		t.Fatalf("after the commit: title %q, heads %v (were %v)", m.Title, m.Heads, heads)
	}
}

func TestNewMemoryDocInvalid(t *testing.T) {
	tests := []struct {
		name   string
		actor  string
		change func(m *model.Memory)
		want   error
	}{
		{"id", actorA, func(m *model.Memory) { m.ID = "nope" }, ErrInvalidID},
		{"empty id", actorA, func(m *model.Memory) { m.ID = "" }, ErrInvalidID},
		{"tier", actorA, func(m *model.Memory) { m.Tier = "" }, ErrInvalidTier},
		{"status", actorA, func(m *model.Memory) { m.Status = "" }, ErrInvalidStatus},
		{"compacted_into", actorA, func(m *model.Memory) { m.CompactedInto = NewID() }, ErrInvalidStatus},
		{"confidence", actorA, func(m *model.Memory) { m.Confidence = math.NaN() }, ErrInvalidNumber},
		{"content", actorA, func(m *model.Memory) { m.Content = "\xff" }, ErrInvalidString},
		{"agent", actorA, func(m *model.Memory) { m.Provenance.Agent = "\xff" }, ErrInvalidString},
		{"tag", actorA, func(m *model.Memory) { m.Tags = []string{""} }, ErrInvalidString},
		{"actor empty", "", func(*model.Memory) {}, ErrInvalidActor},
		{"actor odd", "abc", func(*model.Memory) {}, ErrInvalidActor},
		{"actor not hex", "zz", func(*model.Memory) {}, ErrInvalidActor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMemory()
			tt.change(m)
			d, err := NewMemoryDoc(tt.actor, m)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if d != nil {
				t.Error("got a document with the error")
			}
		})
	}
}

// mergeBothWays merges a and b into fresh copies in both orders, checks the
// copies agree on state and heads, and returns the merged state.
func mergeBothWays(t *testing.T, a, b *MemoryDoc) model.Memory {
	t.Helper()
	ab := fork(t, a, actorC)
	must(t, ab.Merge(b))
	ba := fork(t, b, actorC)
	must(t, ba.Merge(a))
	m1, m2 := materialize(t, ab), materialize(t, ba)
	if !reflect.DeepEqual(m1, m2) {
		t.Fatalf("merge order matters:\na+b %+v\nb+a %+v", m1, m2)
	}
	if len(m1.Heads) != 2 {
		t.Errorf("heads = %q, want the two concurrent changes", m1.Heads)
	}
	return m1
}

func TestMemoryConcurrentEditsMerge(t *testing.T) {
	in := testMemory()
	in.Tags = []string{"keep", "x", "y"}
	base := newTestDoc(t, actorA, in)
	a := fork(t, base, actorA)
	b := fork(t, base, actorB)

	must(t, a.SetTitle("title from a"))
	must(t, a.SetConfidence(0.9))
	must(t, a.AddTags("from-a", "both"))
	must(t, a.RemoveTags("x"))
	must(t, a.SetUpdated(at("2025-12-02T00:00:00Z")))
	must(t, a.Commit("a"))

	must(t, b.SetKind("decision"))
	must(t, b.SetEvergreen(true))
	must(t, b.AddTags("from-b", "both"))
	must(t, b.RemoveTags("y"))
	must(t, b.AddTouches("web/server.go"))
	must(t, b.RemoveTouches("storage/db.go"))
	must(t, b.Commit("b"))

	got := mergeBothWays(t, a, b)
	checks := []struct {
		name      string
		got, want any
	}{
		{"title", got.Title, "title from a"},
		{"kind", got.Kind, "decision"},
		{"confidence", got.Confidence, 0.9},
		{"evergreen", got.Evergreen, true},
		{"tags", got.Tags, []string{"both", "from-a", "from-b", "keep"}},
		{"touches", got.Touches, []string{"web/server.go"}},
		{"updated", got.Provenance.UpdatedAt, at("2025-12-02T00:00:00Z")},
		{"content", got.Content, in.Content},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestMemoryConcurrentAddAndRemoveTag(t *testing.T) {
	base := newTestDoc(t, actorA, testMemory())
	a := fork(t, base, actorA)
	b := fork(t, base, actorB)
	must(t, a.RemoveTags("storage"))
	must(t, a.Commit("a"))
	must(t, b.RemoveTags("storage"))
	must(t, b.AddTags("storage"))
	must(t, b.Commit("b"))
	if got := mergeBothWays(t, a, b); !slices.Contains(got.Tags, "storage") {
		t.Errorf("tags = %q: a re-add concurrent with a remove was lost", got.Tags)
	}
}

// TestMemoryConcurrentStatus checks that status and compacted_into, set on
// two replicas at once, merge to one replica's pair, whichever replica
// made more operations first.
func TestMemoryConcurrentStatus(t *testing.T) {
	into := NewID()
	tests := []struct {
		name         string
		extraA       int // title edits a makes before its status change
		extraB       int
		statA, statB model.Status
	}{
		{"same start", 0, 0, model.StatusCompacted, model.StatusArchived},
		{"a later", 3, 0, model.StatusCompacted, model.StatusArchived},
		{"b later", 0, 3, model.StatusCompacted, model.StatusArchived},
		{"reverse", 2, 0, model.StatusArchived, model.StatusCompacted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := newTestDoc(t, actorA, testMemory())
			a := fork(t, base, actorA)
			b := fork(t, base, actorB)
			for i, side := range []struct {
				d     *MemoryDoc
				extra int
				st    model.Status
			}{{a, tt.extraA, tt.statA}, {b, tt.extraB, tt.statB}} {
				for j := range side.extra {
					must(t, side.d.SetTitle(strings.Repeat("t", i*10+j+1)))
				}
				target := ""
				if side.st == model.StatusCompacted {
					target = into
				}
				must(t, side.d.SetStatus(side.st, target))
				must(t, side.d.Commit("status"))
			}
			got := mergeBothWays(t, a, b)
			switch {
			case got.Status == model.StatusCompacted && got.CompactedInto == into:
			case got.Status == model.StatusArchived && got.CompactedInto == "":
			default:
				t.Errorf("merged to status %q compacted_into %q: a mix of both sides", got.Status, got.CompactedInto)
			}
		})
	}
}

func TestMemoryRevisionConflict(t *testing.T) {
	in := testMemory()
	base := newTestDoc(t, actorA, in)
	first := materialize(t, base).Revisions[0]
	a := fork(t, base, actorA)
	b := fork(t, base, actorB)

	ra, err := a.AppendRevision("edit on a", "device-a", "", at("2025-12-02T10:00:00Z"))
	must(t, err)
	must(t, a.Commit("edit"))
	rb, err := b.AppendRevision("edit on b", "device-b", "", at("2025-12-02T10:00:01Z"))
	must(t, err)
	must(t, b.Commit("edit"))
	if ra.Parent != first.ID || rb.Parent != first.ID || ra.Merges != nil || rb.Merges != nil {
		t.Fatalf("revisions %+v and %+v should both have parent %s and no merges", ra, rb, first.ID)
	}

	merged := mergeBothWays(t, a, b)
	if want := []model.Revision{first, ra, rb}; !reflect.DeepEqual(merged.Revisions, want) {
		t.Errorf("Revisions = %+v, want %+v", merged.Revisions, want)
	}
	if want := []model.Revision{rb, ra}; !reflect.DeepEqual(merged.Conflict, want) {
		t.Errorf("Conflict = %+v, want %+v (newest first)", merged.Conflict, want)
	}
	if merged.Content != "edit on b" {
		t.Errorf("Content = %q, want the newest leaf's text", merged.Content)
	}

	// An edit made while the conflict is shown resolves it.
	must(t, a.Merge(b))
	rc, err := a.AppendRevision("resolved", "device-a", "", at("2025-12-02T11:00:00Z"))
	must(t, err)
	must(t, a.Commit("resolve"))
	if rc.Parent != rb.ID || !slices.Equal(rc.Merges, []string{ra.ID}) {
		t.Errorf("resolving revision parent %q merges %q, want parent %q merges [%q]", rc.Parent, rc.Merges, rb.ID, ra.ID)
	}
	resolved := materialize(t, a)
	if resolved.Conflict != nil || resolved.Content != "resolved" {
		t.Errorf("after resolving: Content %q Conflict %+v, want %q and no conflict", resolved.Content, resolved.Conflict, "resolved")
	}
	if got := resolved.Revisions[len(resolved.Revisions)-1]; !reflect.DeepEqual(got, rc) {
		t.Errorf("stored revision %+v, want %+v", got, rc)
	}

	// The other replica agrees once it has the change.
	must(t, b.Merge(a))
	if got := materialize(t, b); !reflect.DeepEqual(got, resolved) {
		t.Errorf("b after merge:\n got %+v\nwant %+v", got, resolved)
	}
}

func TestMemoryRevisionTieBreak(t *testing.T) {
	base := newTestDoc(t, actorA, testMemory())
	a := fork(t, base, actorA)
	b := fork(t, base, actorB)
	same := at("2025-12-02T10:00:00Z")
	ra, err := a.AppendRevision("a", "device-a", "", same)
	must(t, err)
	rb, err := b.AppendRevision("b", "device-b", "", same)
	must(t, err)
	must(t, a.Commit(""))
	must(t, b.Commit(""))
	newest := ra
	if rb.ID > ra.ID {
		newest = rb
	}
	if got := mergeBothWays(t, a, b); got.Content != newest.Text || got.Conflict[0].ID != newest.ID {
		t.Errorf("Content %q, Conflict %+v: want the larger id %s first", got.Content, got.Conflict, newest.ID)
	}
}

func TestMemorySequentialRevisions(t *testing.T) {
	d := newTestDoc(t, actorA, testMemory())
	var last model.Revision
	for i, text := range []string{"two", "three", "four"} {
		r, err := d.AppendRevision(text, "device-a", "", at("2025-12-03T00:00:00Z").Add(time.Duration(i)*time.Second))
		must(t, err)
		must(t, d.Commit("edit"))
		if last.ID != "" && r.Parent != last.ID {
			t.Errorf("revision %q parent %q, want %q", text, r.Parent, last.ID)
		}
		last = r
	}
	m := materialize(t, d)
	if m.Content != "four" || m.Conflict != nil || len(m.Revisions) != 4 {
		t.Errorf("Content %q, Conflict %v, %d revisions; want four, none, 4", m.Content, m.Conflict, len(m.Revisions))
	}
}

// TestMemoryRevisionsAfterTheirAncestors: the revisions are listed
// oldest first, each after the one it was built on, when edits share a
// millisecond (their ids then decide nothing) or when an edit's clock is
// behind its parent's.
func TestMemoryRevisionsAfterTheirAncestors(t *testing.T) {
	d := newTestDoc(t, actorA, testMemory())
	same := at("2025-12-03T00:00:00Z")
	texts := []string{"two", "three", "four", "five", "six", "seven", "eight", "nine"}
	for _, text := range texts {
		_, err := d.AppendRevision(text, "device-a", "", same)
		must(t, err)
	}
	_, err := d.AppendRevision("behind", "device-b", "", same.Add(-time.Hour))
	must(t, err)
	must(t, d.Commit("edits"))
	want := append(append([]string{testMemory().Content}, texts...), "behind")
	check := func(how string, m model.Memory) {
		t.Helper()
		var got []string
		for i, r := range m.Revisions {
			got = append(got, r.Text)
			if i > 0 && r.Parent != m.Revisions[i-1].ID {
				t.Errorf("%s: revision %d (%q) is built on %s, not on the one before it", how, i, r.Text, r.Parent)
			}
		}
		if !slices.Equal(got, want) || m.Content != "behind" || m.Conflict != nil {
			t.Errorf("%s: revisions %q, content %q, conflict %v; want %q, behind, none", how, got, m.Content, m.Conflict, want)
		}
	}
	check("Materialize", materialize(t, d))
	loaded, err := LoadMemoryDoc(actorB, d.Save())
	must(t, err)
	defer loaded.Close()
	check("loaded", materialize(t, loaded))
}

func TestMemoryMergeDifferentID(t *testing.T) {
	a := newTestDoc(t, actorA, testMemory())
	b := newTestDoc(t, actorB, testMemory())
	if err := a.Merge(b); !errors.Is(err, ErrIDMismatch) {
		t.Errorf("Merge of another memory: err = %v, want %v", err, ErrIDMismatch)
	}
	must(t, a.Merge(a))
}

// TestMemoryMergeSameActorRefused: two copies that edited as one actor
// (a device restored from an older backup that edits again) cannot merge,
// in either order. Automerge applies the peer's changes up to the one it
// refuses, so the refused merge closes the document rather than leave it
// holding part of the peer's history.
func TestMemoryMergeSameActorRefused(t *testing.T) {
	base := newTestDoc(t, actorA, testMemory())
	local := fork(t, base, actorA)
	peer := fork(t, base, actorB)
	must(t, peer.SetTitle("the peer's own edit"))
	must(t, peer.Commit("b"))
	must(t, peer.am.SetActorID(actorA))
	must(t, peer.SetKind("an edit as the local actor"))
	must(t, peer.Commit("a on the peer"))
	must(t, local.SetNamespace("local"))
	must(t, local.Commit("a"))
	stored, sent := local.Save(), peer.Save()

	for _, order := range [][2][]byte{{stored, sent}, {sent, stored}} {
		into, err := LoadMemoryDoc(actorC, order[0])
		must(t, err)
		other, err := LoadMemoryDoc(actorC, order[1])
		must(t, err)
		if err := into.Merge(other); !errors.Is(err, ErrUnmergeable) {
			t.Fatalf("merging two histories of one actor: err = %v, want %v", err, ErrUnmergeable)
		}
		if _, err := into.Materialize(); !errors.Is(err, ErrClosed) {
			t.Errorf("after a refused merge: Materialize err = %v, want %v", err, ErrClosed)
		}
		other.Close()
	}
}

// TestMemoryMergeRefusedCommitsOther: Automerge commits the other
// document's pending edits even when it refuses the merge, so the other
// document has nothing left to commit, and Commit must not fail on an
// empty change.
func TestMemoryMergeRefusedCommitsOther(t *testing.T) {
	base := newTestDoc(t, actorA, testMemory())
	into, other := fork(t, base, actorA), fork(t, base, actorA)
	must(t, into.SetTitle("one"))
	must(t, other.SetTitle("two"))
	if err := into.Merge(other); !errors.Is(err, ErrUnmergeable) {
		t.Fatalf("merging two histories of one actor: err = %v, want %v", err, ErrUnmergeable)
	}
	must(t, other.Commit("after the refused merge"))
	if m := materialize(t, other); m.Title != "two" {
		t.Fatalf("title %q, want the pending edit", m.Title)
	}
}

func TestMemoryCommitAndHeads(t *testing.T) {
	d := newTestDoc(t, actorA, testMemory())
	h1 := d.Heads()
	must(t, d.Commit("nothing pending"))
	if h := d.Heads(); !slices.Equal(h, h1) {
		t.Fatalf("empty Commit changed heads")
	}
	must(t, d.SetTitle("changed"))
	must(t, d.Commit("title"))
	h2 := d.Heads()
	if len(h2) != 1 || slices.Equal(h2, h1) {
		t.Errorf("heads after a commit = %q, want one new head", h2)
	}
	// Pending operations are committed by Save.
	must(t, d.SetTitle("changed again"))
	saved := d.Save()
	must(t, d.Commit("nothing pending"))
	loaded, err := LoadMemoryDoc(actorB, saved)
	must(t, err)
	defer loaded.Close()
	if got := materialize(t, loaded).Title; got != "changed again" {
		t.Errorf("saved title = %q, want pending edit included", got)
	}
}

func TestMemoryClosed(t *testing.T) {
	d, err := NewMemoryDoc(actorA, testMemory())
	must(t, err)
	other := newTestDoc(t, actorB, testMemory())
	d.Close()
	d.Close()
	for name, err := range map[string]error{
		"SetTitle":    d.SetTitle("x"),
		"SetStatus":   d.SetStatus(model.StatusStale, ""),
		"SetUpdated":  d.SetUpdated(time.Now()),
		"AddTags":     d.AddTags("x"),
		"Commit":      d.Commit("x"),
		"Merge":       d.Merge(other),
		"Merge into":  other.Merge(d),
		"Materialize": func() error { _, err := d.Materialize(); return err }(),
		"Fork":        func() error { _, err := d.Fork(actorB); return err }(),
		"Append":      func() error { _, err := d.AppendRevision("x", "d", "", time.Now()); return err }(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: err = %v, want %v", name, err, ErrClosed)
		}
	}
	if d.Save() != nil || d.Heads() != nil {
		t.Error("Save or Heads after Close returned data")
	}
}

func TestNewMemoryDocWithRevisions(t *testing.T) {
	r1 := model.Revision{ID: NewID(), Text: "first", Device: "device-a", At: at("2025-01-01T00:00:00Z")}
	r2 := model.Revision{ID: NewID(), Parent: r1.ID, Text: "on a", Device: "device-a", At: at("2025-01-02T00:00:00Z")}
	r3 := model.Revision{ID: NewID(), Parent: r1.ID, Text: "on b", Device: "device-b", At: at("2025-01-03T00:00:00Z")}
	in := testMemory()
	in.Content = "ignored"
	in.Revisions = []model.Revision{r3, r1, r2}
	got := materialize(t, newTestDoc(t, actorA, in))
	if want := []model.Revision{r1, r2, r3}; !reflect.DeepEqual(got.Revisions, want) {
		t.Errorf("Revisions = %+v, want %+v", got.Revisions, want)
	}
	if want := []model.Revision{r3, r2}; got.Content != "on b" || !reflect.DeepEqual(got.Conflict, want) {
		t.Errorf("Content %q Conflict %+v, want the imported conflict kept", got.Content, got.Conflict)
	}

	a, b := NewID(), NewID()
	tests := []struct {
		name string
		revs []model.Revision
	}{
		{"bad id", []model.Revision{{ID: "r1"}}},
		{"duplicate id", []model.Revision{{ID: a}, {ID: a}}},
		{"bad parent", []model.Revision{{ID: a, Parent: "r0"}}},
		{"bad merge", []model.Revision{{ID: a, Merges: []string{"x,y"}}}},
		{"cycle", []model.Revision{{ID: a, Parent: b}, {ID: b, Parent: a}}},
		{"text not UTF-8", []model.Revision{{ID: a, Text: "\xff"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMemory()
			m.Revisions = tt.revs
			if _, err := NewMemoryDoc(actorA, m); !errors.Is(err, ErrInvalidID) && !errors.Is(err, ErrInvalidString) {
				t.Errorf("err = %v, want an invalid id or string error", err)
			}
		})
	}
}

// TestCreateMemoryIsWhatMaterializeReads: the memory CreateMemory builds
// from its input equals what Materialize reads from the document, for
// random memories: times below a millisecond, repeated and unsorted tags
// and touches, statuses, TTLs, given revisions that merge and conflict.
func TestCreateMemoryIsWhatMaterializeReads(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	when := func() time.Time { return base.Add(time.Duration(rng.Int64N(int64(400 * 24 * time.Hour)))) }
	words := []string{"pebble", "bleve", "quic", "sync", "retry", "pebble", "Índice", "a,b"}
	pick := func() []string {
		var out []string
		for range rng.IntN(5) {
			out = append(out, words[rng.IntN(len(words))])
		}
		return out
	}
	for i := range 200 {
		m := testMemory()
		m.Tags, m.Touches = pick(), pick()
		m.Confidence = rng.Float64()
		m.Evergreen = rng.IntN(2) == 0
		m.Provenance.CreatedAt, m.Provenance.UpdatedAt = when(), when()
		m.ExpiresAt = time.Time{}
		if rng.IntN(2) == 0 {
			m.ExpiresAt = when()
		}
		m.Status = []model.Status{model.StatusActive, model.StatusStale, model.StatusArchived, model.StatusCompacted, model.StatusDeleted}[rng.IntN(5)]
		m.CompactedInto = ""
		if m.Status == model.StatusCompacted {
			m.CompactedInto = NewID()
		}
		if rng.IntN(2) == 0 {
			var revs []model.Revision
			for j := range 1 + rng.IntN(4) {
				r := model.Revision{ID: NewID(), Text: fmt.Sprintf("text %d", j), Device: "device-a", At: when()}
				if j > 0 {
					r.Parent = revs[rng.IntN(j)].ID
				}
				if j > 1 && rng.IntN(2) == 0 {
					r.Merges = []string{revs[rng.IntN(j)].ID}
				}
				revs = append(revs, r)
			}
			rng.Shuffle(len(revs), func(a, b int) { revs[a], revs[b] = revs[b], revs[a] })
			m.Revisions = revs
		}
		d, got, err := CreateMemory(actorA, m)
		if err != nil {
			t.Fatalf("memory %d: CreateMemory: %v", i, err)
		}
		want := materialize(t, d)
		d.Close()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("memory %d: CreateMemory returned\n%+v\nMaterialize reads\n%+v", i, got, want)
		}
	}
	if _, _, err := CreateMemory(actorA, &model.Memory{}); err == nil {
		t.Error("CreateMemory of an empty memory: no error")
	}
}

// TestEditRevisionFromAnOldBase: an edit made from a revision that was
// edited since is a sync conflict beside the newer edit; one made from
// the current revision continues it.
func TestEditRevisionFromAnOldBase(t *testing.T) {
	d := newTestDoc(t, actorA, testMemory())
	first := materialize(t, d).Revisions[0]
	r1, err := d.EditRevision(first.ID, "edit one", "device-a", "", at("2025-12-02T10:00:00Z"))
	must(t, err)
	if r1.Parent != first.ID || r1.Merges != nil {
		t.Fatalf("an edit of the current revision: %+v", r1)
	}
	r2, err := d.EditRevision(first.ID, "edit two, made from the first", "device-a", "", at("2025-12-02T10:00:01Z"))
	must(t, err)
	must(t, d.Commit("edits"))
	got := materialize(t, d)
	if r2.Parent != first.ID || len(got.Conflict) != 2 || got.Content != "edit two, made from the first" {
		t.Fatalf("an edit of an old revision: %+v; memory content %q conflict %+v", r2, got.Content, got.Conflict)
	}
	if _, err := d.EditRevision("aaaaaaaaaaaaaaaaaaaaaaaaaa", "x", "device-a", "", time.Now()); !errors.Is(err, ErrUnknownRevision) {
		t.Fatalf("an unknown base: %v", err)
	}
	// Editing from one leaf of the conflict settles it.
	r3, err := d.EditRevision(r1.ID, "settled", "device-a", "", at("2025-12-02T11:00:00Z"))
	must(t, err)
	must(t, d.Commit("settle"))
	if got := materialize(t, d); r3.Parent != r1.ID || !slices.Equal(r3.Merges, []string{r2.ID}) || got.Conflict != nil {
		t.Fatalf("settling: %+v, conflict %+v", r3, got.Conflict)
	}
}

// TestRevisionAgent: each revision records the agent that wrote it; the
// agents survive save, load and merges both ways.
func TestRevisionAgent(t *testing.T) {
	a := newTestDoc(t, actorA, testMemory())
	b := fork(t, a, actorB)
	_, err := a.AppendRevision("edit by codex", "device-a", "codex/0.9", at("2025-12-02T10:00:00Z"))
	must(t, err)
	must(t, a.Commit("edit"))
	_, err = b.AppendRevision("edit by a person", "device-b", "", at("2025-12-02T10:00:01Z"))
	must(t, err)
	must(t, b.Commit("edit"))
	b2 := fork(t, b, actorC)
	must(t, a.Merge(b))
	must(t, b2.Merge(a))
	for name, d := range map[string]*MemoryDoc{"a": a, "b": b2} {
		loaded, err := LoadMemoryDoc(actorA, d.Save())
		must(t, err)
		m := materialize(t, loaded)
		loaded.Close()
		var got []string
		for _, r := range m.Revisions {
			got = append(got, r.Agent)
		}
		if want := []string{"claude-code", "codex/0.9", ""}; !slices.Equal(got, want) {
			t.Errorf("replica %s: revisions' agents %q, want %q (the first from provenance)", name, got, want)
		}
	}
	if _, err := a.AppendRevision("x", "device-a", "\xff", time.Now()); !errors.Is(err, ErrInvalidString) {
		t.Errorf("an agent that is not UTF-8: %v", err)
	}
}

// TestRevisionAgentOldAndNewDocuments: a document written before
// revisions had an agent loads, shows its revisions with none and takes
// new revisions with one; a revision key that this version does not know
// (one a later version adds) is ignored, as an older node ignores the agent.
func TestRevisionAgentOldAndNewDocuments(t *testing.T) {
	id, rev := NewID(), NewID()
	for _, tt := range []struct {
		name  string
		extra map[string]any
	}{
		{"before agents", nil},
		{"a later key", map[string]any{"signed_by": "someone", "weight": int64(3)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			am := automerge.New()
			root := am.RootMap()
			for k, v := range map[string]any{keyType: typeMemory, keySchema: int64(schemaVersion), keyID: id,
				keyNamespace: "old", keyKind: "note", keyTier: "agent", keyStatus: "active", keyConfidence: 0.7} {
				must(t, root.Set(k, v))
			}
			sub := func(parent *automerge.Map, key string) *automerge.Map {
				m := automerge.NewMap()
				must(t, parent.Set(key, m))
				return m
			}
			prov := sub(root, keyProvenance)
			for k, v := range map[string]any{keyDevice: "device-old", keyAgent: "claude-code", keyCreatedAt: int64(1_700_000_000_000), keyUpdatedAt: int64(1_700_000_000_000)} {
				must(t, prov.Set(k, v))
			}
			sub(root, keyTags)
			sub(root, keyTouches)
			r := sub(sub(root, keyRevisions), rev)
			for k, v := range map[string]any{keyText: "written before agents", keyDevice: "device-old", keyAt: int64(1_700_000_000_000)} {
				must(t, r.Set(k, v))
			}
			for k, v := range tt.extra {
				must(t, r.Set(k, v))
			}
			_, err := am.Commit("old")
			must(t, err)
			d, err := LoadMemoryDoc(actorA, am.Save())
			must(t, err)
			defer d.Close()
			m := materialize(t, d)
			want := model.Revision{ID: rev, Text: "written before agents", Device: "device-old", At: time.UnixMilli(1_700_000_000_000).UTC()}
			if len(m.Revisions) != 1 || !reflect.DeepEqual(m.Revisions[0], want) || m.Provenance.Agent != "claude-code" {
				t.Fatalf("revisions %+v, provenance %+v; want %+v with no agent", m.Revisions, m.Provenance, want)
			}
			_, err = d.AppendRevision("edited now", "device-new", "codex/0.9", time.UnixMilli(1_800_000_000_000))
			must(t, err)
			must(t, d.Commit("edit"))
			if got := materialize(t, d); len(got.Revisions) != 2 || got.Revisions[1].Agent != "codex/0.9" || got.Revisions[0].Agent != "" {
				t.Errorf("after an edit: %+v", got.Revisions)
			}
		})
	}
}
