package crdt

import (
	"maps"
	"slices"
	"testing"

	"github.com/automerge/automerge-go"
)

// automergeAuthors is what Automerge itself says of a saved document:
// each actor's highest sequence number.
func automergeAuthors(tb testing.TB, data []byte) map[string]uint64 {
	tb.Helper()
	am, err := automerge.Load(data)
	if err != nil {
		tb.Fatal(err)
	}
	changes, err := am.Changes()
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]uint64)
	for _, ch := range changes {
		out[ch.ActorID()] = max(out[ch.ActorID()], ch.ActorSeq())
	}
	return out
}

// editedTwice returns a memory made by a, edited by b (three changes,
// the last two concurrent with one by a), and merged: a document of two
// actors whose changes depend on each other's.
func editedTwice(tb testing.TB) (data []byte, memID string) {
	tb.Helper()
	m := testMemory()
	da := newTestDoc(tb, actorA, m)
	defer da.Close()
	db, err := LoadMemoryDoc(actorB, da.Save())
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	for _, tag := range []string{"one", "two", "three"} {
		if err := db.AddTags(tag); err != nil {
			tb.Fatal(err)
		}
		if err := db.Commit("tag"); err != nil {
			tb.Fatal(err)
		}
	}
	if err := da.SetTitle("edited by a meanwhile"); err != nil {
		tb.Fatal(err)
	}
	if err := da.Commit("title"); err != nil {
		tb.Fatal(err)
	}
	if err := da.Merge(db); err != nil {
		tb.Fatal(err)
	}
	if err := da.AddTags("after the merge"); err != nil {
		tb.Fatal(err)
	}
	if err := da.Commit("tag"); err != nil {
		tb.Fatal(err)
	}
	return da.Save(), m.ID
}

func TestAuthorsAsAutomergeSays(t *testing.T) {
	data, _ := editedTwice(t)
	got, err := Authors(data)
	if err != nil {
		t.Fatal(err)
	}
	want := automergeAuthors(t, data)
	if !maps.Equal(got, want) {
		t.Fatalf("Authors = %v, Automerge says %v", got, want)
	}
	if got[actorA] != 3 || got[actorB] != 3 {
		t.Fatalf("Authors = %v, want 3 changes by each actor", got)
	}
}

func TestAuthorsRefusesWhatIsNoDocument(t *testing.T) {
	data, _ := editedTwice(t)
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"truncated": data[:len(data)/2],
		"header":    data[:9],
	} {
		if _, err := Authors(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestWithoutDropsDependents(t *testing.T) {
	data, id := editedTwice(t)
	// Dropping b's second change drops its third, and a's change made
	// after the merge, which depends on it; a's title edit stays.
	out, dropped, err := Without(data, func(actor string, seq uint64) bool { return actor == actorB && seq >= 2 })
	if err != nil {
		t.Fatal(err)
	}
	if dropped != 3 {
		t.Fatalf("dropped %d changes, want 3", dropped)
	}
	if got, want := automergeAuthors(t, out), map[string]uint64{actorA: 2, actorB: 1}; !maps.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	d, err := LoadMemoryDoc(actorC, out)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, err := d.Materialize()
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != id || m.Title != "edited by a meanwhile" {
		t.Fatalf("left memory %s titled %q", m.ID, m.Title)
	}
	for _, tag := range m.Tags {
		if tag == "two" || tag == "three" || tag == "after the merge" {
			t.Fatalf("tag %q survived its change", tag)
		}
	}
	if !slices.Contains(m.Tags, "one") {
		t.Fatalf("tags %v lost the change that was kept", m.Tags)
	}
}

func TestWithoutKeepsOrEmpties(t *testing.T) {
	data, _ := editedTwice(t)
	out, dropped, err := Without(data, func(string, uint64) bool { return false })
	if err != nil || dropped != 0 || &out[0] != &data[0] {
		t.Fatalf("nothing to drop: %d dropped, same bytes %v, %v", dropped, len(out) > 0 && &out[0] == &data[0], err)
	}
	// The first change made the document: all the rest depend on it.
	out, dropped, err = Without(data, func(actor string, seq uint64) bool { return actor == actorA && seq == 1 })
	if err != nil || out != nil || dropped != 6 {
		t.Fatalf("dropping the first change: %d bytes left, %d dropped, %v", len(out), dropped, err)
	}
}
