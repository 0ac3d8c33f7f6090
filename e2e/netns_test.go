package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// A lab is a private network of hosts on this machine: one network
// namespace per host, each joined by a veth pair (eth0 inside the host) to
// a bridge in a switch namespace of its own, with an address on
// labSubnet. Nothing routes between the lab and the machine's own
// namespace, so lab traffic never leaves it. Faults are made per host:
// its link down, nft rules in its namespace that drop what it receives (at
// random, or from one other host), and a rate limit on what it sends.
//
// The kernel this runs on lacks sch_netem, so there is no fixed delay nor
// netem loss: the faults use the link state, nft and tc's tbf.
type lab struct {
	t     *testing.T
	name  string // prefix of the lab's namespace names
	sw    string // the switch namespace
	hosts []*labHost
}

// labHost is one host of a lab.
type labHost struct {
	lab  *lab
	ns   string // its network namespace
	ip   string // its address on labSubnet
	port string // its veth's name in the switch namespace
}

// labSubnet is the lab's /24; host i (from 0) has .i+1.
const labSubnet = "10.77.0."

// labSeq numbers the labs of this test process.
var labSeq atomic.Int32

// labRuleset is each host's nft table: the filter chain of what it
// receives, which the faults add rules to.
const labRuleset = `table inet lab {
	chain input { type filter hook input priority 0; policy accept; }
}
`

// installNft installs Debian's nftables when nft is missing, once per run,
// as the test command installs what it needs.
var installNft = sync.OnceValue(func() error {
	if _, err := exec.LookPath("nft"); err == nil {
		return nil
	}
	cmd := exec.Command("sh", "-c", "apt-get update -qq && apt-get install -y -qq nftables")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("install nftables: %w\n%s", err, out)
	}
	_, err := exec.LookPath("nft")
	return err
})

// newLab makes an empty lab, torn down (with every host) when the test
// ends, passed or not. It skips the test, saying why, on a machine that
// cannot make network namespaces (not root, no iproute2), and fails it
// when nft is missing and cannot be installed.
func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root; this test runs as uid", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network namespaces need iproute2's ip:", err)
	}
	if err := installNft(); err != nil {
		t.Fatal("the lab's faults need nft (Debian package nftables):", err)
	}
	sweepLabs(t)
	l := &lab{t: t, name: fmt.Sprintf("mmlab%d-%d", os.Getpid(), labSeq.Add(1))}
	l.sw = l.name + "-sw"
	if err := run(nil, "ip", "netns", "add", l.sw); err != nil {
		t.Skip("this machine cannot make a network namespace:", err)
	}
	t.Cleanup(l.teardown)
	l.must("ip", "-n", l.sw, "link", "add", "br0", "type", "bridge")
	l.must("ip", "-n", l.sw, "link", "set", "br0", "up")
	return l
}

// addHost adds a host named name to the lab, its link up and its address
// set.
func (l *lab) addHost(name string) *labHost {
	l.t.Helper()
	n := len(l.hosts)
	h := &labHost{lab: l, ns: l.name + "-" + name, ip: labSubnet + strconv.Itoa(n+1), port: "p" + strconv.Itoa(n)}
	l.must("ip", "netns", "add", h.ns)
	l.hosts = append(l.hosts, h)
	l.must("ip", "link", "add", "eth0", "netns", h.ns, "type", "veth", "peer", "name", h.port, "netns", l.sw)
	l.must("ip", "-n", l.sw, "link", "set", h.port, "master", "br0", "up")
	l.must("ip", "-n", h.ns, "addr", "add", h.ip+"/24", "dev", "eth0")
	l.must("ip", "-n", h.ns, "link", "set", "eth0", "up")
	l.must("ip", "-n", h.ns, "link", "set", "lo", "up")
	h.nft(labRuleset)
	return h
}

// teardown deletes the lab's namespaces, and with them their links and
// rules. Processes still inside them must be stopped first: the test's
// cleanups registered after newLab do that, as they run before.
func (l *lab) teardown() {
	for _, ns := range append(l.namespaces(), l.sw) {
		if err := run(nil, "ip", "netns", "del", ns); err != nil {
			l.t.Errorf("lab teardown: %v", err)
		}
	}
}

func (l *lab) namespaces() []string {
	var ns []string
	for _, h := range l.hosts {
		ns = append(ns, h.ns)
	}
	return ns
}

// must runs a command of the lab's setup and fails the test if it fails.
func (l *lab) must(argv ...string) {
	l.t.Helper()
	if err := run(nil, argv...); err != nil {
		l.t.Fatal(err)
	}
}

// labName matches the namespaces of a lab: the pid of the test process
// that made it comes first.
var labName = regexp.MustCompile(`^mmlab(\d+)-\d+-`)

// sweepLabs deletes the namespaces of labs whose test process is gone (it
// was killed before its cleanups ran).
func sweepLabs(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		ns, _, _ := strings.Cut(line, " ")
		m := labName.FindStringSubmatch(ns)
		if m == nil {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); syscall.Kill(pid, 0) == syscall.ESRCH {
			if err := run(nil, "ip", "netns", "del", ns); err != nil {
				t.Logf("sweeping a stale lab: %v", err)
			}
		}
	}
}

// run runs argv, with stdin when not nil, and returns its error with its
// output.
func run(stdin []byte, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// wrap is the command prefix that runs a command inside the host.
func (h *labHost) wrap() []string { return []string{"ip", "netns", "exec", h.ns} }

// nft loads nft commands or a ruleset into the host's namespace.
func (h *labHost) nft(rules string) {
	h.lab.t.Helper()
	if err := run([]byte(rules), append(h.wrap(), "nft", "-f", "-")...); err != nil {
		h.lab.t.Fatal(err)
	}
}

// setLink takes the host's link down or up: a cable pulled, or Wi-Fi off.
func (h *labHost) setLink(up bool) {
	h.lab.t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	h.lab.must("ip", "-n", h.ns, "link", "set", "eth0", state)
}

// loseReceived drops pct percent of the packets the host receives, at
// random.
func (h *labHost) loseReceived(pct int) {
	h.nft(fmt.Sprintf("add rule inet lab input iifname eth0 numgen random mod 100 < %d drop\n", pct))
}

// dropReceived drops every packet the host receives (its link stays up).
func (h *labHost) dropReceived() { h.nft("add rule inet lab input iifname eth0 drop\n") }

// heal removes every drop rule of the host: it receives all again.
func (h *labHost) heal() { h.nft("flush chain inet lab input\n") }

// cut drops every packet between the hosts h and other, silently (as on
// receipt: a drop on sending would fail the send with EPERM, which no
// real network does).
func (h *labHost) cut(other *labHost) {
	h.nft(fmt.Sprintf("add rule inet lab input ip saddr %s drop\n", other.ip))
	other.nft(fmt.Sprintf("add rule inet lab input ip saddr %s drop\n", h.ip))
}

// slowLink limits what the host sends to rate (tc's units, e.g. "1mbit"),
// queueing up to latency's worth before it drops: bursts wait in the
// queue. (A fixed delay needs sch_netem, which this kernel may lack.)
func (h *labHost) slowLink(rate, latency string) {
	h.lab.t.Helper()
	h.lab.must("tc", "-n", h.ns, "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "16kb", "latency", latency)
}

// startMachine runs `memmesh serve` inside the host, its mesh on the
// host's address, and returns it as a machine of the mesh tests.
func (h *labHost) startMachine(t *testing.T, name string) *machine {
	t.Helper()
	return h.startMachineWith(t, name, "")
}

// startMachineWith is startMachine with config as the home's config.toml.
func (h *labHost) startMachineWith(t *testing.T, name, config string) *machine {
	t.Helper()
	m := &machine{home: newHome(t), name: name}
	if config != "" {
		if err := os.WriteFile(filepath.Join(m.home, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m.serve, _ = startServeIn(t, h.wrap(), m.home, "--listen", h.ip+":7420", "--name", name, "--http", "")
	m.id = strings.TrimSpace(ok(t, m.home, "id", "--format", "brief"))
	return m
}
