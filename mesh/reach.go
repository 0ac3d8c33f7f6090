package mesh

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/memmesh/memmesh/transport"
)

// How a peer is reached. memberlist (v0.7.0) keeps whether it suspects a
// node to itself: the exported Node.State it hands out is never set. So
// the mesh tracks it: memberlist's ping delegate tells of every direct
// probe a peer answered, and each node tells the others, every retry
// interval, which peers answered its own probes lately (a reach report).
// A peer memberlist holds alive is then
//   - reached directly when it answered a direct probe lately (or joined
//     lately, before a probe, or a report of a peer that reaches it, could
//     tell: joinGrace);
//   - reached through others when it did not, but a peer we reach reports
//     that it does (memberlist's indirect probes through that peer keep it
//     alive: a machine behind NAT, a broken route);
//   - suspect when neither: it fails probes, and memberlist will declare
//     it dead unless it answers.

// Bounds of a reach report, which is one memberlist packet: the devices
// it lists, and its encoded size.
const (
	maxReachReport = 16
	maxReportBytes = 1000
)

// reachReport is what a node tells the others of its peers: the ones that
// answered its direct probes lately, and digest sums (digestSum), its own
// and the ones their devices sent it lately, so that a node learns
// whether a peer it cannot reach holds what it holds.
type reachReport struct {
	From   string            `json:"f"`
	Direct []string          `json:"d"`
	Sums   map[string]string `json:"s,omitempty"` // device -> digest sum
}

// heard is a reach report as received, with when.
type heard struct {
	at     time.Time
	direct []string
	sum    string // the sender's own digest sum
}

// digestSum sums the 256 buckets of the digest two devices compare
// (Mesh.Digest, which leaves out local-only namespaces): two replicas
// with equal sums hold the same versions of the documents they share.
func digestSum(d [256][32]byte) string {
	h := sha256.New()
	for i := range d {
		h.Write(d[i][:])
	}
	return base64.RawStdEncoding.EncodeToString(h.Sum(nil)[:16])
}

// sumOf returns the digest sum of the device: the one it sent, or else
// one a peer relayed, within the report TTL. Callers hold m.mu.
func (m *Mesh) sumOf(device string, now time.Time) string {
	if h, ok := m.heard[device]; ok && now.Sub(h.at) < m.reportTTL() && h.sum != "" {
		return h.sum
	}
	if r, ok := m.relayed[device]; ok && now.Sub(r.at) < m.reportTTL() {
		return r.sum
	}
	return ""
}

// probeWindow is how long a peer may go without answering a direct probe
// and still count as reached directly: two of memberlist's probe rounds
// (it probes one member per interval, in turn) and a probe's timeout.
// Callers hold m.mu.
func (m *Mesh) probeWindow() time.Duration {
	members := 1
	for _, p := range m.peers {
		if p.state == "alive" {
			members++
		}
	}
	return time.Duration(2*members)*m.cfg.ProbeInterval + m.cfg.ProbeInterval/2
}

// reportTTL is how long a reach report counts: three of its periods.
func (m *Mesh) reportTTL() time.Duration { return 3 * m.cfg.RetryInterval }

// joinGrace is how long a peer that joined, and has answered no direct
// probe since, counts as reached directly: long enough for a peer that
// reaches it to probe it (a probe window) and to tell in a reach report
// (a report TTL). A shorter grace shows a peer reached only through
// others as suspect for a moment after every join. Callers hold m.mu.
func (m *Mesh) joinGrace() time.Duration { return m.probeWindow() + m.reportTTL() }

// reachedDirectly reports whether the peer answered a direct probe within
// the probe window, or joined within the join grace and answered none
// since. Callers hold m.mu.
func (m *Mesh) reachedDirectly(p *peerState, now time.Time) bool {
	if p.direct.After(p.joined) {
		return now.Sub(p.direct) < m.probeWindow()
	}
	return now.Sub(p.joined) < m.joinGrace()
}

// reach is how the peer device is reached, as Peers shows it: its state
// (memberlist's, or suspect) and, when it is reached only through others,
// their device ids. Callers hold m.mu.
func (m *Mesh) reach(device string, p *peerState, now time.Time) (state string, via []string) {
	if p.state != "alive" || m.reachedDirectly(p, now) {
		return p.state, nil
	}
	for from, h := range m.heard {
		if from == device || now.Sub(h.at) >= m.reportTTL() || !slices.Contains(h.direct, device) {
			continue
		}
		if q := m.peers[from]; q != nil && q.state == "alive" && m.reachedDirectly(q, now) {
			via = append(via, from)
		}
	}
	if len(via) == 0 {
		return "suspect", nil
	}
	slices.Sort(via)
	return "alive", via
}

// reachReport is this node's reach report, trimmed to maxReportBytes:
// relayed sums go first, then listed peers.
func (m *Mesh) reachReport() []byte {
	now := m.clock.Now()
	r := reachReport{From: m.self, Direct: []string{}, Sums: map[string]string{}}
	if d, err := m.Digest(); err == nil {
		r.Sums[m.self] = digestSum(d)
	}
	m.mu.Lock()
	for device, p := range m.peers {
		if p.state == "alive" && now.Sub(p.direct) < m.probeWindow() && len(r.Direct) < maxReachReport {
			r.Direct = append(r.Direct, device)
		}
	}
	for from, h := range m.heard {
		if h.sum != "" && now.Sub(h.at) < m.reportTTL() && len(r.Sums) < maxReachReport {
			r.Sums[from] = h.sum
		}
	}
	m.mu.Unlock()
	slices.Sort(r.Direct)
	for {
		b, _ := json.Marshal(r)
		if len(b) <= maxReportBytes {
			return b
		}
		trimmed := false
		for device := range r.Sums {
			if device != m.self {
				delete(r.Sums, device)
				trimmed = true
				break
			}
		}
		if !trimmed {
			r.Direct = r.Direct[:len(r.Direct)-1]
		}
	}
}

// tellReach sends this node's reach report to every member it reaches.
func (m *Mesh) tellReach() {
	msg := m.reachReport()
	for _, member := range m.memberAddrs() {
		if err := m.ml.Load().SendToAddress(memberlist.Address{Addr: member.addr, Name: member.device}, msg); err != nil {
			m.log.Debug("sending a reach report", "peer", member.device, "err", err)
		}
	}
}

// heardReach records a peer's reach report.
func (m *Mesh) heardReach(msg []byte) {
	var r reachReport
	if json.Unmarshal(msg, &r) != nil || r.From == m.self || len(r.Direct) > maxReachReport {
		return
	}
	if m.Authorize(r.From) != nil {
		return
	}
	if len(r.Sums) > maxReachReport {
		return
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heard[r.From] = heard{at: now, direct: r.Direct, sum: r.Sums[r.From]}
	for device, sum := range r.Sums {
		if _, member := m.devices[device]; member && device != r.From && device != m.self {
			m.relayed[device] = relayedSum{at: now, sum: sum}
		}
	}
}

// relayedSum is a device's digest sum as another device relayed it.
type relayedSum struct {
	at  time.Time
	sum string
}

// meshPing hears of each direct probe a peer answered.
type meshPing struct{ m *Mesh }

func (meshPing) AckPayload() []byte { return nil }

func (d meshPing) NotifyPingComplete(node *memberlist.Node, rtt time.Duration, payload []byte) {
	m := d.m
	defer m.evMu.RUnlock()
	if !m.live() {
		return
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.peers[node.Name]; p != nil {
		p.direct = now
	}
}

func headsKey(heads []string) string { return strings.Join(slices.Sorted(slices.Values(heads)), ",") }

// pushedReplica is the replica as a push sees it: it keeps the documents
// it was given to apply, for relay.
type pushedReplica struct {
	replica
	docs []transport.Entry
}

func (r *pushedReplica) Apply(peer string, docs []transport.Entry) error {
	err := r.replica.Apply(peer, docs)
	for _, d := range docs {
		r.docs = append(r.docs, transport.Entry{Kind: d.Kind, ID: d.ID})
	}
	return err
}

// relay passes documents that the device from pushed here on to the live
// peers that from cannot reach directly (as its last reach report says),
// so that a write crosses a partial partition (a cannot reach b, both
// reach c) in a push, not at c's next anti-entropy pull from a. A mesh
// where every node reaches every other relays nothing. What is relayed is
// this node's stored version of each document, under its own policy.
func (m *Mesh) relay(from string, pushed []transport.Entry) {
	if len(pushed) == 0 || m.cfg.NoRelay {
		return
	}
	now := m.clock.Now()
	alive := m.aliveDevices()
	m.mu.Lock()
	h, ok := m.heard[from]
	var targets []string
	for _, device := range alive {
		p := m.peers[device]
		if ok && now.Sub(h.at) < m.reportTTL() && device != from && p != nil && m.reachedDirectly(p, now) && !slices.Contains(h.direct, device) {
			targets = append(targets, device)
		}
	}
	m.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	batch, err := replica{m}.Docs(from, pushed)
	if err != nil || len(batch) == 0 {
		if err != nil {
			m.log.Warn("reading documents to relay", "err", err)
		}
		return
	}
	m.log.Debug("relaying a push", "from", from, "to", targets, "documents", len(batch))
	m.relays.Add(int64(len(targets)))
	m.queuePush(batch, targets)
}
