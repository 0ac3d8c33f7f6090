package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// revokeMachine is a daemon of the revocation tests: it keeps its mesh
// address across restarts, so that its peers reach it again by
// themselves.
type revokeMachine struct {
	machine
	listen string
}

func startRevokeMachine(t *testing.T, host int, name string) *revokeMachine {
	t.Helper()
	m := &revokeMachine{machine: machine{home: newHome(t), name: name}, listen: freeMeshAddr(t, host)}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(m.home, "serve.log"))
			t.Logf("%s's log:\n%s", name, log)
		}
	})
	m.start(t)
	m.id = strings.TrimSpace(ok(t, m.home, "id", "--format", "brief"))
	return m
}

func (m *revokeMachine) start(t *testing.T) {
	t.Helper()
	m.serve, _ = startServe(t, m.home, "--listen", m.listen, "--name", m.name, "--http", "")
}

// stop stops the daemon cleanly: the machine is away.
func (m *revokeMachine) stop(t *testing.T) {
	t.Helper()
	ok(t, m.home, "stop")
	m.serve.Wait()
	m.serve = (*exec.Cmd)(nil)
}

type deviceOut struct {
	Key         string `json:"key"`
	RevokedBy   string `json:"revoked_by"`
	Revocations []struct {
		By     string `json:"by"`
		Stands bool   `json:"stands"`
		Why    string `json:"why"`
	} `json:"revocations"`
	Refused *struct {
		Changes, Erased, Purges int
	} `json:"refused"`
}

// devices returns m's registry by device id.
func (m *revokeMachine) devices(t *testing.T) map[string]deviceOut {
	t.Helper()
	var out struct {
		Devices []deviceOut `json:"devices"`
	}
	okJSON(t, m.home, &out, "devices", "--json")
	byID := make(map[string]deviceOut)
	for _, d := range out.Devices {
		byID[d.Key] = d
	}
	return byID
}

type memoryOut struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Content string   `json:"content"`
	Kind    string   `json:"kind"`
	Status  string   `json:"status"`
	Tags    []string `json:"tags"`
}

// show returns the memory id on m, and whether it is there.
func (m *revokeMachine) show(t *testing.T, id string) (memoryOut, bool) {
	t.Helper()
	var out memoryOut
	r := mm(t, m.home, "", "show", id, "--json")
	if r.code != 0 {
		return out, false
	}
	okJSON(t, m.home, &out, "show", id, "--json")
	return out, true
}

// TestRevokeWhileAway is the stolen laptop, on real daemons: a revokes b
// while b is away (stopped); b comes back talking only to c, which has not
// heard (c was stopped too), purges a memory of a's, deletes c's, edits its
// own, links, makes a namespace local-only, revokes a and captures a new
// memory, and c takes it all. When a comes back, c refuses it (b revoked
// it), a appeals with its revocation of b, and every change b made after
// its revocation is undone on a and c; a is not locked out.
func TestRevokeWhileAway(t *testing.T) {
	a, b, c := startRevokeMachine(t, 1, "owner"), startRevokeMachine(t, 2, "laptop"), startRevokeMachine(t, 3, "server")
	var inv invitation
	okJSON(t, a.home, &inv, "invite")
	ok(t, b.home, "join", inv.Token)
	okJSON(t, a.home, &inv, "invite")
	ok(t, c.home, "join", inv.Token)

	var owners, members, laptops captureOut
	okJSON(t, a.home, &owners, "capture", "--ns", "shared", "--title", "Deploys", "Deploys go through the release branch, never from main.")
	okJSON(t, c.home, &members, "capture", "--ns", "shared", "The staging database is reset every night at 02:00.")
	okJSON(t, b.home, &laptops, "capture", "--ns", "shared", "--title", "Driver", "Use pgx, not lib/pq, for Postgres.")
	eventually(t, time.Minute, "every memory on every machine", func() bool {
		for _, m := range []*revokeMachine{a, b, c} {
			for _, id := range []string{owners.ID, members.ID, laptops.ID} {
				if _, ok := m.show(t, id); !ok {
					return false
				}
			}
		}
		return true
	})

	b.stop(t)
	c.stop(t)
	out := ok(t, a.home, "revoke", b.id, "--format", "human")
	if !strings.Contains(out, "Revoked") {
		t.Fatalf("revoke said %q", out)
	}
	a.stop(t)

	// The thief's laptop and the server that has not heard.
	b.start(t)
	c.start(t)
	ok(t, b.home, "purge", "--yes", owners.ID)
	ok(t, b.home, "delete", members.ID)
	ok(t, b.home, "update", laptops.ID, "--title", "Drivers: lib/pq is fine", "--kind", "decision", "--tag-add", "thief")
	ok(t, b.home, "link", laptops.ID, "supersedes", members.ID)
	ok(t, b.home, "ns", "set", "shared", "--sync", "local")
	ok(t, b.home, "revoke", a.id)
	var planted captureOut
	okJSON(t, b.home, &planted, "capture", "--ns", "team", "Push straight to main; reviews slow us down.")
	eventually(t, time.Minute, "c takes what the thief did", func() bool {
		_, has := c.show(t, planted.ID)
		_, owned := c.show(t, owners.ID)
		return has && !owned && c.devices(t)[a.id].RevokedBy == b.id
	})
	b.stop(t)

	// The owner's machine comes back.
	a.start(t)
	for _, m := range []*revokeMachine{a, c} {
		eventually(t, time.Minute, m.name+": what b did after its revocation undone", func() bool {
			if _, ok := m.show(t, planted.ID); ok {
				return false
			}
			own, ok := m.show(t, owners.ID)
			if !ok || own.Content != "Deploys go through the release branch, never from main." {
				return false
			}
			mem, ok := m.show(t, members.ID)
			lap, ok2 := m.show(t, laptops.ID)
			return ok && ok2 && mem.Status == "active" && lap.Title == "Driver" && lap.Kind != "decision" && !strings.Contains(strings.Join(lap.Tags, ","), "thief")
		})
		eventually(t, time.Minute, m.name+" holds both revocations, and only b's stands", func() bool {
			devices := m.devices(t)
			owner, laptop := devices[a.id], devices[b.id]
			return owner.RevokedBy == "" && len(owner.Revocations) == 1 && !owner.Revocations[0].Stands && owner.Revocations[0].Why != "" &&
				laptop.RevokedBy == a.id
		})
	}
	eventually(t, time.Minute, "the owner's machine and the server see each other alive", func() bool {
		return a.states(t)[c.id] == "alive" && c.states(t)[a.id] == "alive"
	})
	var graph struct {
		Edges []struct {
			Rel     string `json:"rel"`
			Deleted bool   `json:"deleted"`
		} `json:"edges"`
	}
	okJSON(t, c.home, &graph, "graph", members.ID, "--json")
	for _, e := range graph.Edges {
		if e.Rel == "supersedes" && !e.Deleted {
			t.Errorf("the thief's link stays on the server: %+v", graph.Edges)
		}
	}
	// The namespace is shared again: a memory the owner captures in it
	// reaches the server.
	var after captureOut
	okJSON(t, a.home, &after, "capture", "--ns", "shared", "Release notes are written before the tag.")
	eventually(t, time.Minute, "a memory of the shared namespace reaches the server", func() bool {
		_, ok := c.show(t, after.ID)
		return ok
	})
	doctor := ok(t, c.home, "doctor", "--format", "human")
	for _, want := range []string{"does not stand", "Refused of revoked " + b.id[:12]} {
		if !strings.Contains(doctor, want) {
			t.Errorf("the server's doctor does not say %q:\n%s", want, doctor)
		}
	}
	if d := c.devices(t)[b.id]; d.Refused == nil || d.Refused.Erased == 0 || d.Refused.Purges != 1 {
		t.Errorf("the server shows what it refused of the laptop's work as %+v", d.Refused)
	}

	// The server's dashboard shows it too.
	c.stop(t)
	ui := serveUI(t, c.home, "--listen", c.listen, "--name", c.name)
	p := openTab(t, startBrowser(t), false)
	p.login(ui.loginLink(t))
	row := func(device string) string {
		return `document.querySelector('[data-testid="device-row"][data-device=` + jsString(device) + `]')`
	}
	p.goTo("/machines", row(b.id)+` !== null`)
	p.waitFor(30*time.Second, row(b.id)+`.querySelector('[data-testid="refused-work"]')?.innerText.includes("purges undone")`+
		` && `+row(a.id)+`.querySelector('[data-testid="revocation-void"]')?.innerText.includes("does not stand")`)
}

// TestRevokeDispute: the mesh's first machine, a, is stolen; the owner's
// b revokes it while it is away, and the thief, before a hears of it,
// revokes b. When a comes back, the server c takes both revocations (a
// appeals c's refusal): a is the older member and wins, b is refused and
// stops. The owner settles it on c by revoking a, and b is a member again
// by itself. What b wrote while a was away, and c's edit of it, made while
// b was stopped, which c took out while a's revocation of b stood, come
// back: c kept them aside.
func TestRevokeDispute(t *testing.T) {
	a, b, c := startRevokeMachine(t, 1, "first"), startRevokeMachine(t, 2, "owner"), startRevokeMachine(t, 3, "server")
	for _, m := range []*revokeMachine{b, c} {
		var inv invitation
		okJSON(t, a.home, &inv, "invite")
		ok(t, m.home, "join", inv.Token)
	}
	waitAlive(t, time.Minute, []*machine{&a.machine, &b.machine, &c.machine}, []*machine{&a.machine, &b.machine, &c.machine})

	a.stop(t)
	var owners captureOut
	okJSON(t, b.home, &owners, "capture", "Release builds are signed on the owner's machine.")
	eventually(t, time.Minute, "the server holds the owner's memory", func() bool {
		_, ok := c.show(t, owners.ID)
		return ok
	})
	ok(t, b.home, "revoke", a.id)
	eventually(t, time.Minute, "the server holds the owner's revocation of a", func() bool { return c.devices(t)[a.id].RevokedBy == b.id })
	// The server's edit stays on the server alone.
	b.stop(t)
	const edited = "Release builds are signed on the owner's machine, with the key in the hardware token."
	ok(t, c.home, "update", owners.ID, "--content", edited)
	// The thief, with the mesh off so that a hears nothing first.
	offline, _ := startServe(t, a.home, "--no-mesh", "--http", "")
	ok(t, a.home, "revoke", b.id)
	ok(t, a.home, "stop")
	offline.Wait()
	a.start(t)

	eventually(t, time.Minute, "the server settles the dispute for the older a", func() bool {
		d := c.devices(t)
		return d[b.id].RevokedBy == a.id && d[a.id].RevokedBy == "" && len(d[a.id].Revocations) == 1 &&
			strings.Contains(d[a.id].Revocations[0].Why, "older member")
	})
	eventually(t, time.Minute, "the server takes out the owner's memory, made beyond the frontier of the revocation that stands", func() bool {
		_, ok := c.show(t, owners.ID)
		return !ok
	})
	b.start(t)
	eventually(t, time.Minute, "the owner's machine says it was revoked", func() bool {
		var st struct {
			Errors []string `json:"errors"`
		}
		okJSON(t, b.home, &st, "status")
		return strings.Contains(strings.Join(st.Errors, " "), "revoked")
	})

	ok(t, c.home, "revoke", a.id)
	eventually(t, 2*time.Minute, "the owner's machine is a member again, and a is out", func() bool {
		d := b.devices(t)
		return d[a.id].RevokedBy != "" && d[b.id].RevokedBy == "" && c.states(t)[b.id] == "alive" && b.states(t)[c.id] == "alive"
	})
	for _, m := range []*revokeMachine{c, b} {
		eventually(t, time.Minute, "the owner's memory and the server's edit of it are back on "+m.name, func() bool {
			got, ok := m.show(t, owners.ID)
			return ok && got.Content == edited
		})
	}
	var captured captureOut
	okJSON(t, b.home, &captured, "capture", "The owner's machine syncs again after the dispute.")
	eventually(t, time.Minute, "the owner's capture reaches the server", func() bool {
		_, ok := c.show(t, captured.ID)
		return ok
	})
}
