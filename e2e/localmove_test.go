package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestMoveOutOfLocalNamespaceShipsNoPrivateHistory: a memory written and
// edited in a local-only namespace, then moved to a shared one, reaches the
// other machine as a new memory whose history starts at the move: nothing
// written while it was private is there.
func TestMoveOutOfLocalNamespaceShipsNoPrivateHistory(t *testing.T) {
	a, b := startMachine(t, 1, "a"), startMachine(t, 2, "b")
	var inv invitation
	okJSON(t, a.home, &inv, "invite")
	ok(t, b.home, "join", inv.Token)

	ok(t, a.home, "ns", "set", "private", "--sync", "local")
	var draft captureOut
	okJSON(t, a.home, &draft, "capture", "--ns", "private", "Draft: the vendor quote is 40k, do not share")
	ok(t, a.home, "update", draft.ID, "--content", "We picked the vendor with the lowest quote")
	var moved struct {
		ID       string `json:"id"`
		Replaces string `json:"replaces"`
	}
	okJSON(t, a.home, &moved, "update", draft.ID, "--ns", "team")
	if moved.ID == draft.ID || moved.Replaces != draft.ID {
		t.Fatalf("the move answered %+v, want a new memory replacing %s", moved, draft.ID)
	}

	eventually(t, 30*time.Second, "b does not get the moved memory", func() bool {
		return mm(t, b.home, "", "show", moved.ID).code == 0
	})
	got := ok(t, b.home, "show", moved.ID)
	if strings.Contains(got, "40k") || !strings.Contains(got, "lowest quote") {
		t.Errorf("b holds the private history of the moved memory:\n%s", got)
	}
	if r := mm(t, b.home, "", "show", draft.ID); r.code == 0 {
		t.Errorf("b holds the memory of the local-only namespace:\n%s", r.stdout)
	}
}
