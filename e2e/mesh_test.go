package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// machine is a daemon of the mesh tests, standing for one machine.
type machine struct {
	home, name, id string
	serve          *exec.Cmd
}

// startMachine runs `memmesh serve` on a new home with the mesh on a free
// UDP port of 127.0.0.<host>, without MCP over HTTP.
func startMachine(t *testing.T, host int, name string) *machine {
	t.Helper()
	listen := freeMeshAddr(t, host)
	m := &machine{home: newHome(t), name: name}
	m.serve, _ = startServe(t, m.home, "--listen", listen, "--name", name, "--http", "")
	m.id = strings.TrimSpace(ok(t, m.home, "id", "--format", "brief"))
	return m
}

type invitation struct {
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
	Addrs   []string  `json:"addrs"`
}

type peersOut struct {
	Peers []struct {
		Device  string   `json:"device"`
		Name    string   `json:"name"`
		State   string   `json:"state"`
		Via     []string `json:"via"`
		Behind  int      `json:"behind"`
		LastErr string   `json:"last_error"`
	} `json:"peers"`
}

// states returns the state of each peer of m, by device id.
func (m *machine) states(t *testing.T) map[string]string {
	t.Helper()
	var out peersOut
	okJSON(t, m.home, &out, "peers", "--json")
	states := make(map[string]string)
	for _, p := range out.Peers {
		states[p.Device] = p.State
	}
	return states
}

// eventually polls cond until it holds, failing the test after timeout
// (at least testwait.Limit).
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	timeout = bound(timeout)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMeshThreeMachines connects three daemons with invites, checks that a
// memory written on one is found on another, that a killed daemon is seen
// dead, and that an invite token works only once.
func TestMeshThreeMachines(t *testing.T) {
	a, b, c := startMachine(t, 1, "a"), startMachine(t, 2, "b"), startMachine(t, 3, "c")

	var first, second invitation
	okJSON(t, a.home, &first, "invite")
	if !strings.HasPrefix(first.Token, "mmj1") || len(first.Addrs) == 0 {
		t.Fatalf("invite answered %+v", first)
	}
	ok(t, b.home, "join", first.Token)
	okJSON(t, a.home, &second, "invite", "--ttl", "10m")
	ok(t, c.home, "join", second.Token)

	ok(t, a.home, "ns", "set", "private", "--sync", "local")
	var secret, shared captureOut
	okJSON(t, a.home, &secret, "capture", "--ns", "private", "The spare key is under the blue flowerpot")
	okJSON(t, a.home, &shared, "capture", "--ns", "team", "Release branches are cut on Thursdays after the code freeze")
	eventually(t, 30*time.Second, "c does not find the memory captured on a", func() bool {
		var s searchOut
		okJSON(t, c.home, &s, "search", "--ns", "team", "release thursdays")
		return len(s.Results) == 1 && s.Results[0].ID == shared.ID
	})
	var s searchOut
	okJSON(t, c.home, &s, "search", "--all-ns", "flowerpot")
	if len(s.Results) != 0 {
		t.Errorf("a memory of a local namespace reached another machine: %+v", s)
	}

	eventually(t, 30*time.Second, "a does not see b and c alive", func() bool {
		states := a.states(t)
		return states[b.id] == "alive" && states[c.id] == "alive"
	})
	var st struct {
		Devices  int    `json:"devices"`
		Alive    int    `json:"peers_alive"`
		Memories int    `json:"memories"`
		Health   string `json:"health"`
	}
	okJSON(t, a.home, &st, "status")
	if st.Devices != 3 || st.Alive != 2 || st.Memories != 2 {
		t.Errorf("status on a = %+v, want 3 devices, 2 alive peers, 2 memories", st)
	}

	c.serve.Process.Kill()
	c.serve.Wait()
	eventually(t, 30*time.Second, "a does not see c dead after SIGKILL", func() bool {
		states := a.states(t)
		return states[c.id] == "dead" && states[b.id] == "alive"
	})

	d := startMachine(t, 4, "d")
	r := mm(t, d.home, "", "join", first.Token)
	if r.code == 0 || !strings.Contains(r.stderr, "used") {
		t.Fatalf("reusing an invite token: exit %d, stderr %q; want a refusal saying it was used", r.code, r.stderr)
	}
}

// TestDeviceID: `memmesh id` prints this machine's device id, which is the
// device that `memmesh devices` marks as this one.
func TestDeviceID(t *testing.T) {
	home := newHome(t)
	id := strings.TrimSpace(ok(t, home, "id", "--format", "brief"))
	if !regexp.MustCompile(`^[A-Z2-7]{52}$`).MatchString(id) {
		t.Fatalf("memmesh id printed %q, want 52 base32 characters", id)
	}
	var asJSON struct {
		DeviceID string `json:"device_id"`
	}
	okJSON(t, home, &asJSON, "id")
	if asJSON.DeviceID != id {
		t.Errorf("memmesh id as JSON: %q, want %q", asJSON.DeviceID, id)
	}
	ok(t, home, "invite") // puts this device in the registry
	var devices struct {
		Devices []struct {
			Key  string `json:"key"`
			Self bool   `json:"self"`
		} `json:"devices"`
	}
	okJSON(t, home, &devices, "devices", "--json")
	if len(devices.Devices) != 1 || !devices.Devices[0].Self || devices.Devices[0].Key != id {
		t.Fatalf("devices after an invite = %+v, want this device %s", devices, id)
	}
}
