package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests of three real daemons, each in a network namespace of its own
// (see lab), under the faults of real networks.

// labMesh starts a daemon per name, each on a host of a new lab, and
// returns the lab's hosts and the daemons, in the order of names. The
// daemons do not form a mesh yet.
func labMesh(t *testing.T, names ...string) ([]*labHost, []*machine) {
	t.Helper()
	l := newLab(t)
	var hosts []*labHost
	var ms []*machine
	for _, name := range names {
		h := l.addHost(name)
		hosts = append(hosts, h)
		ms = append(ms, h.startMachine(t, name))
	}
	return hosts, ms
}

// join has each joiner join the mesh with an invite of inviter.
func join(t *testing.T, inviter *machine, joiners ...*machine) {
	t.Helper()
	for _, j := range joiners {
		var inv invitation
		okJSON(t, inviter.home, &inv, "invite")
		ok(t, j.home, "join", inv.Token)
	}
}

// waitAlive waits until each machine of watchers sees every other machine
// of ms alive.
func waitAlive(t *testing.T, timeout time.Duration, watchers, ms []*machine) {
	t.Helper()
	eventually(t, timeout, "the machines do not all see each other alive", func() bool {
		for _, w := range watchers {
			states := w.states(t)
			for _, m := range ms {
				if m != w && states[m.id] != "alive" {
					return false
				}
			}
		}
		return true
	})
}

// writer captures memories of distinct random text, from a logged seed.
type writer struct {
	rng   *rand.Rand
	n     int
	acked []string // ids of every capture that exited 0
}

func newWriter(t *testing.T) *writer {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return &writer{rng: rand.New(rand.NewPCG(seed, 14))}
}

var labWords = strings.Fields(`harbor lantern quartz meadow falcon copper orchid
glacier cinder velvet thistle ember walnut saffron tundra cobalt juniper
marble pepper willow comet basalt heron nectar`)

// capture writes a new memory on m and records it as acknowledged.
func (w *writer) capture(t *testing.T, m *machine) string {
	t.Helper()
	w.n++
	words := make([]string, 6)
	for i := range words {
		words[i] = labWords[w.rng.IntN(len(labWords))]
	}
	text := fmt.Sprintf("Note %d from %s: %s", w.n, m.name, strings.Join(words, " "))
	var out captureOut
	okJSON(t, m.home, &out, "capture", "--ns", "team", text)
	w.acked = append(w.acked, out.ID)
	return out.ID
}

// export is what `memmesh export` shows of a machine's knowledge: the
// memory ids, and every line but the header (which names the device and
// the time).
type export struct {
	ids  map[string]bool
	body string
}

func exportOf(t *testing.T, m *machine) export {
	t.Helper()
	out := ok(t, m.home, "export")
	e := export{ids: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 64<<20)
	var body strings.Builder
	for sc.Scan() {
		var line struct{ Type, ID string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("export of %s: %v in %q", m.name, err, sc.Text())
		}
		if line.Type == "header" {
			continue
		}
		if line.Type == "memory" {
			e.ids[line.ID] = true
		}
		body.WriteString(sc.Text())
		body.WriteByte('\n')
	}
	e.body = body.String()
	return e
}

// missing lists the acknowledged writes each machine lacks, and whether
// the machines' exports differ; empty when they have converged.
func missing(t *testing.T, acked []string, ms []*machine) string {
	t.Helper()
	var lacks []string
	var first export
	differ := false
	for i, m := range ms {
		e := exportOf(t, m)
		for _, id := range acked {
			if !e.ids[id] {
				lacks = append(lacks, m.name+" lacks "+id)
			}
		}
		if i == 0 {
			first = e
		} else if e.body != first.body {
			differ = true
		}
	}
	if differ && len(lacks) == 0 {
		lacks = append(lacks, "the exports differ")
	}
	return strings.Join(lacks, "; ")
}

// waitConverged waits until every machine has every acknowledged write
// and all exports are identical, and returns how long that took.
func waitConverged(t *testing.T, timeout time.Duration, acked []string, ms []*machine) time.Duration {
	t.Helper()
	timeout = bound(timeout)
	start := time.Now()
	for {
		lacks := missing(t, acked, ms)
		if lacks == "" {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("not converged after %s: %s", timeout, lacks)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLabPartitionHeals: three daemons converge; the link of one goes
// down, both sides write, the link comes back; every acknowledged write
// reaches every daemon and their exports are identical.
func TestLabPartitionHeals(t *testing.T) {
	t.Parallel()
	hosts, ms := labMesh(t, "a", "b", "c")
	a, b, c := ms[0], ms[1], ms[2]
	join(t, a, b, c)
	waitAlive(t, 30*time.Second, ms, ms)
	w := newWriter(t)
	for _, m := range ms {
		w.capture(t, m)
	}
	t.Logf("converged before the partition in %s", waitConverged(t, 30*time.Second, w.acked, ms))

	hosts[0].setLink(false)
	var majority []string // writes on b and c during the partition
	for range 3 {
		w.capture(t, a)
		majority = append(majority, w.capture(t, b), w.capture(t, c))
	}
	eventually(t, 30*time.Second, "the sides do not see each other dead while a's link is down", func() bool {
		sa := a.states(t)
		return b.states(t)[a.id] == "dead" && c.states(t)[a.id] == "dead" && sa[b.id] == "dead" && sa[c.id] == "dead"
	})
	t.Logf("b and c converged during the partition in %s", waitConverged(t, 30*time.Second, majority, []*machine{b, c}))
	w.capture(t, a)
	w.capture(t, b)

	hosts[0].setLink(true)
	healed := time.Now()
	waitAlive(t, 60*time.Second, ms, ms)
	t.Logf("all alive %s after healing", time.Since(healed).Round(time.Millisecond))
	waitConverged(t, 60*time.Second, w.acked, ms)
	t.Logf("converged %s after healing", time.Since(healed).Round(time.Millisecond))

	// A blip shorter than failure detection: nobody is seen dead.
	hosts[0].setLink(false)
	w.capture(t, a)
	w.capture(t, c)
	time.Sleep(time.Second)
	hosts[0].setLink(true)
	healed = time.Now()
	waitConverged(t, 60*time.Second, w.acked, ms)
	t.Logf("converged %s after a one-second blip", time.Since(healed).Round(time.Millisecond))
}

// TestLabLossyLinks: with a quarter of the packets every daemon receives
// dropped at random, and every link slowed to 1 Mbit/s (its queue delays
// bursts by up to 200 ms), the daemons still join, and writes on every
// daemon reach all of them.
func TestLabLossyLinks(t *testing.T) {
	t.Parallel()
	hosts, ms := labMesh(t, "a", "b", "c")
	for _, h := range hosts {
		h.loseReceived(25)
		h.slowLink("1mbit", "200ms")
	}
	start := time.Now()
	join(t, ms[0], ms[1], ms[2])
	waitAlive(t, 30*time.Second, ms, ms)
	t.Logf("joined and all alive in %s", time.Since(start).Round(time.Millisecond))
	w := newWriter(t)
	for range 5 {
		for _, m := range ms {
			w.capture(t, m)
		}
	}
	t.Logf("converged with 25%% loss on 1 Mbit/s links in %s", waitConverged(t, 60*time.Second, w.acked, ms).Round(time.Millisecond))
}

// TestLabPartialConnectivity: a and b cannot reach each other, and both
// reach c (a laptop behind NAT, a desktop, an always-on machine). A user
// relies on two things: a write on a reaches b through c, and the other
// way round; and `memmesh peers` on a and b gives a steady view of the
// peer they cannot reach, not one that flaps between dead and alive. The
// test records how long each write took and every state each of them
// showed for the other, and peers must say the other lacks nothing once
// both writes crossed.
func TestLabPartialConnectivity(t *testing.T) {
	t.Parallel()
	hosts, ms := labMesh(t, "a", "b", "c")
	a, b, c := ms[0], ms[1], ms[2]
	hosts[0].cut(hosts[1])
	join(t, c, a, b)
	waitAlive(t, 30*time.Second, []*machine{c}, ms)

	w := newWriter(t)
	start := time.Now()
	fromA, fromB := w.capture(t, a), w.capture(t, b)
	const window = 60 * time.Second
	const watch = 30 * time.Second       // at least, for flapping
	var reachedB, reachedA time.Duration // 0: not yet
	seen := map[string][]string{}        // "a sees b" -> the states, as they changed, with when
	last := map[string]string{}
	sample := func(who *machine, other *machine) {
		key := who.name + " sees " + other.name
		st := who.states(t)[other.id]
		if st != last[key] {
			last[key] = st
			seen[key] = append(seen[key], fmt.Sprintf("%s at %s", st, time.Since(start).Round(100*time.Millisecond)))
		}
	}
	for time.Since(start) < window {
		sample(a, b)
		sample(b, a)
		if reachedB == 0 && exportOf(t, b).ids[fromA] {
			reachedB = time.Since(start)
		}
		if reachedA == 0 && exportOf(t, a).ids[fromB] {
			reachedA = time.Since(start)
		}
		if reachedA != 0 && reachedB != 0 && time.Since(start) > watch {
			break // both crossed, and the peers view was watched long enough
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("a's write reached b after %s, b's reached a after %s (0: not within %s)", reachedB, reachedA, window)
	for _, key := range slices.Sorted(maps.Keys(seen)) {
		t.Logf("%s: %s", key, strings.Join(seen[key], ", "))
	}
	views := map[*machine]peersOut{}
	for _, m := range []*machine{a, b} {
		var out peersOut
		okJSON(t, m.home, &out, "peers", "--json")
		views[m] = out
		t.Logf("memmesh peers on %s: %+v", m.name, out.Peers)
	}
	if reachedB == 0 || reachedA == 0 {
		t.Errorf("writes do not cross c within %s: a's write on b after %s, b's on a after %s (0: never)", window, reachedB, reachedA)
	}
	for key, states := range seen {
		for len(states) > 0 && strings.HasPrefix(states[0], "unknown ") {
			states = states[1:] // not seen yet: the registry came first
		}
		if len(states) > 1 {
			t.Errorf("peers flaps: %s %s", key, strings.Join(states, ", "))
		}
	}
	// Each says the other is reached through c, and c that it reaches both
	// directly.
	for m, other := range map[*machine]*machine{a: b, b: a} {
		for _, p := range views[m].Peers {
			if p.Device == other.id && !slices.Equal(p.Via, []string{c.id}) {
				t.Errorf("peers on %s shows %s %s via %v, want via c (%s)", m.name, other.name, p.State, p.Via, c.id)
			}
		}
	}
	var fromC peersOut
	okJSON(t, c.home, &fromC, "peers", "--json")
	for _, p := range fromC.Peers {
		if p.Via != nil {
			t.Errorf("peers on c shows %s via %v, want reached directly", p.Name, p.Via)
		}
	}
	// behind counts the documents the peer really lacks: none, once
	// everything crossed through c.
	for m, other := range map[*machine]*machine{a: b, b: a} {
		for _, p := range views[m].Peers {
			if p.Device != other.id || p.Behind == 0 || reachedA == 0 || reachedB == 0 {
				continue
			}
			t.Errorf("peers on %s says %s is %d documents behind, though it has them all (through c)", m.name, other.name, p.Behind)
		}
	}
	if t.Failed() {
		t.Logf("c's view: %v", c.states(t))
	}
}

// TestLabPeerStates: `memmesh peers --json` on b shows a suspect while
// a's probes go unanswered (every packet a receives dropped, for less
// than the suspicion timeout), alive again once they are answered, c dead
// after it is killed, and a left after it stops cleanly (once a sees b
// alive: a clean stop tells the peers a is in touch with). On a failure
// the test logs a's debug log.
func TestLabPeerStates(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	// Probes every 250 ms, and memberlist keeps a peer failing them
	// suspect 20 times longer than by default before it declares it dead
	// (about 5 s with one other member to confirm): the mesh calls a
	// peer suspect once it missed its probes for about 1.6 s.
	// With the defaults (500 ms, 3) memberlist declares a dead after
	// about 2.4 s, before the mesh can call it suspect.
	const tuning = "log_level = \"debug\"\n[mesh]\nprobe_interval = \"250ms\"\nsuspicion_mult = 20\n"
	// A peer that joined counts as reached for a grace (two probe rounds
	// and three reach-report periods of 2 s, about 7.6 s here) until it
	// answers a probe: the drop starts once that grace is over, so that
	// it finds a member in its steady state whatever b probed first.
	const joinGrace = 8 * time.Second
	var hosts []*labHost
	var ms []*machine
	for _, name := range []string{"a", "b", "c"} {
		h := l.addHost(name)
		hosts = append(hosts, h)
		ms = append(ms, h.startMachineWith(t, name, tuning))
	}
	a, b, c := ms[0], ms[1], ms[2]
	join(t, a, b, c)
	waitAlive(t, 30*time.Second, ms, ms)
	time.Sleep(joinGrace)

	hosts[0].dropReceived()
	dropped := time.Now()
	eventually(t, 60*time.Second, "b does not see a suspect while a answers no probe", func() bool {
		st := b.states(t)[a.id]
		if st == "dead" {
			t.Fatalf("b sees a dead %s into the drop, before the suspicion timeout", time.Since(dropped).Round(time.Millisecond))
		}
		return st == "suspect"
	})
	t.Logf("b sees a suspect %s into the drop", time.Since(dropped).Round(time.Millisecond))
	hosts[0].heal()
	healed := time.Now()
	eventually(t, 60*time.Second, "b does not see a alive again once it answers", func() bool {
		st := b.states(t)[a.id]
		if st == "dead" {
			t.Fatal("b sees a dead after the drop ended")
		}
		return st == "alive"
	})
	t.Logf("b sees a alive %s after the drop ended", time.Since(healed).Round(time.Millisecond))

	c.serve.Process.Kill()
	c.serve.Wait()
	killed := time.Now()
	eventually(t, 120*time.Second, "b does not see c dead after SIGKILL", func() bool { return b.states(t)[c.id] == "dead" })
	t.Logf("b sees c dead %s after its kill", time.Since(killed).Round(time.Millisecond))

	// A clean stop tells the peers a is in touch with: a, deaf during the
	// drop, may have missed b's answer to its suspicion and since taken b
	// for dead, until they meet again.
	waitFor := time.Now()
	eventually(t, 60*time.Second, "a does not see b alive before its stop", func() bool { return a.states(t)[b.id] == "alive" })
	t.Logf("a sees b alive after %s", time.Since(waitFor).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(a.home, "serve.log"))
			t.Logf("a's log:\n%s", log)
		}
	})
	a.serve.Process.Signal(syscall.SIGTERM)
	a.serve.Wait()
	stopped := time.Now()
	seen := ""
	eventually(t, 60*time.Second, "b does not see a left after a clean stop", func() bool {
		if st := b.states(t)[a.id]; st != seen {
			t.Logf("b sees a %s %s after its stop", st, time.Since(stopped).Round(time.Millisecond))
			seen = st
		}
		return seen == "left"
	})
}
