package crdt

import (
	"crypto/rand"
	"strings"
	"testing"
)

func TestNewID(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		id := NewID()
		if !ValidID(id) {
			t.Fatalf("NewID() = %q, not valid", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"new", NewID(), true},
		{"edge", EdgeID("a", "rel", "b"), true},
		{"all letters", strings.Repeat("a", 26), true},
		{"digits 2-7", "234567234567234567234567aa", true},
		{"empty", "", false},
		{"short", strings.Repeat("a", 25), false},
		{"long", strings.Repeat("a", 27), false},
		{"uppercase", strings.Repeat("A", 26), false},
		{"digit 0", strings.Repeat("a", 25) + "0", false},
		{"digit 8", strings.Repeat("a", 25) + "8", false},
		{"padding", strings.Repeat("a", 25) + "=", false},
		{"newline", strings.Repeat("a", 25) + "\n", false},
		{"prefixed", "m-" + strings.Repeat("a", 24), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidID(tt.id); got != tt.want {
				t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

func TestEdgeID(t *testing.T) {
	id := EdgeID("aaaaaaaaaaaaaaaaaaaaaaaaaa", "supersedes", "file:main.go")
	if !ValidID(id) {
		t.Fatalf("EdgeID = %q, not a valid id", id)
	}
	if again := EdgeID("aaaaaaaaaaaaaaaaaaaaaaaaaa", "supersedes", "file:main.go"); again != id {
		t.Errorf("EdgeID not deterministic: %q then %q", id, again)
	}
	// Pinned: every node must compute the same id, in every version.
	if want := "row54eghmdu3oaw67nfv4is544"; EdgeID("a", "b", "c") != want {
		t.Errorf("EdgeID(a, b, c) = %q, want %q", EdgeID("a", "b", "c"), want)
	}
	differ := [][3]string{
		{"b", "rel", "a"},
		{"a", "rel2", "b"},
		{"a", "rel", "c"},
		{"", "rel", "b"},
	}
	base := EdgeID("a", "rel", "b")
	for _, d := range differ {
		if EdgeID(d[0], d[1], d[2]) == base {
			t.Errorf("EdgeID(%q, %q, %q) equals EdgeID(a, rel, b)", d[0], d[1], d[2])
		}
	}
}

func TestActorID(t *testing.T) {
	a := ActorID("device-1")
	if len(a) != 32 || checkActor(a) != nil {
		t.Fatalf("ActorID = %q, want 32 hex characters", a)
	}
	if ActorID("device-1") != a {
		t.Error("ActorID not stable")
	}
	if ActorID("device-2") == a {
		t.Error("ActorID same for different devices")
	}
}

// TestSessionActorID: each opening of a store writes under an actor of its
// own that starts with the device's.
func TestSessionActorID(t *testing.T) {
	a, err := SessionActorID("device-a", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SessionActorID("device-a", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || !strings.HasPrefix(a, ActorID("device-a")) || checkActor(a) != nil {
		t.Fatalf("session actors %q and %q of device-a (actor %q)", a, b, ActorID("device-a"))
	}
	d, err := newDocument(a)
	if err != nil {
		t.Fatalf("Automerge refuses the session actor %q: %v", a, err)
	}
	d.close()
}
