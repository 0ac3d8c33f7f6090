package e2e

import (
	"slices"
	"testing"
	"time"
)

// TestCopiesCapturedApartAreLinked: the same text captured on two machines
// before they meet becomes two memories (each machine deduplicates only
// against what it holds); after they sync, both machines hold one auto-link
// between the copies, from the later to the first, and the brief shows one
// of them.
func TestCopiesCapturedApartAreLinked(t *testing.T) {
	a, b := startMachine(t, 1, "a"), startMachine(t, 2, "b")
	const text = "Run the migrations with make migrate before starting the API"
	var onA, onB captureOut
	okJSON(t, a.home, &onA, "capture", "--ns", "team", text)
	time.Sleep(10 * time.Millisecond) // a later creation time on b
	okJSON(t, b.home, &onB, "capture", "--ns", "team", text)
	if onA.ID == onB.ID || onB.DuplicateOf != "" {
		t.Fatalf("captured apart: %+v and %+v, want two memories", onA, onB)
	}

	var inv invitation
	okJSON(t, a.home, &inv, "invite")
	ok(t, b.home, "join", inv.Token)

	type graphOut struct {
		Edges []struct {
			From   string `json:"from"`
			Rel    string `json:"rel"`
			To     string `json:"to"`
			Origin string `json:"origin"`
		} `json:"edges"`
	}
	for _, m := range []*machine{a, b} {
		eventually(t, 30*time.Second, m.name+" does not link the two copies", func() bool {
			var g graphOut
			r := mm(t, m.home, "", "graph", onA.ID)
			if r.code != 0 {
				return false // the other copy has not arrived yet
			}
			okJSON(t, m.home, &g, "graph", onA.ID)
			return len(g.Edges) == 1 && g.Edges[0].From == onB.ID && g.Edges[0].Rel == "related_to" &&
				g.Edges[0].To == onA.ID && g.Edges[0].Origin == "auto-link"
		})
	}
	type item struct {
		ID string `json:"id"`
	}
	var brief struct {
		Conflicts   []item `json:"conflicts"`
		FromPeers   []item `json:"from_peers"`
		Decisions   []item `json:"recent_decisions"`
		Tasks       []item `json:"open_tasks"`
		Active      []item `json:"active"`
		StaleAlerts []item `json:"stale_alerts"`
	}
	okJSON(t, b.home, &brief, "context", "--ns", "team")
	var shown []string
	for _, items := range [][]item{brief.Conflicts, brief.FromPeers, brief.Decisions, brief.Tasks, brief.Active, brief.StaleAlerts} {
		for _, it := range items {
			shown = append(shown, it.ID)
		}
	}
	if len(shown) != 1 || !slices.Contains([]string{onA.ID, onB.ID}, shown[0]) {
		t.Errorf("brief on b shows %v, want one of the two copies", shown)
	}
}
