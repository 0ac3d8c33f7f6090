package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/faultnet"
	"github.com/memmesh/memmesh/mesh"
)

// BenchmarkRelayTraffic measures what pushes cost per write on a in a
// mesh of 4 nodes (a, b, c, d): every node reaching every other ("full"),
// and a and d unable to reach each other ("cut"), with b and c passing
// a's pushes on to d ("relay") or not, d then getting them from one
// anti-entropy round ("norelay"). Each op is a write on a until every
// node holds it. The writes start once every node has probed every other
// (settledWait), except in "full-joined", where they start as soon as
// all are alive: a's reach reports then list only the peers that already
// answered its probes, and the others relay its pushes to the rest. It reports the pushes peers applied (relayed ones
// included) and their document bytes, the pushes queued to relay, and the
// bytes of pulls, per write, over all nodes.
func BenchmarkRelayTraffic(b *testing.B) {
	for _, tc := range []struct {
		name               string
		cut, relay, joined bool
	}{
		{"full-joined", false, true, true},
		{"full", false, true, false},
		{"cut-relay", true, true, false},
		{"cut-norelay", true, false, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			seed := uint64(time.Now().UnixNano())
			b.Logf("seed %d", seed)
			rng := newRand(seed)
			fn := faultnet.New(seed)
			mc := mesh.Config{ProbeInterval: 200 * time.Millisecond, RetryInterval: 500 * time.Millisecond, SyncInterval: time.Hour, NoRelay: !tc.relay}
			var nodes []*Node
			for host := 1; host <= 4; host++ {
				nodes = append(nodes, meshNodeWith(b, "", host, fn, mc))
			}
			a, d := nodes[0], nodes[3]
			if tc.cut {
				fn.Cut(addr(a), addr(d))
			}
			for _, n := range []*Node{a, nodes[2], d} {
				join(b, nodes[1], n)
			}
			waitUntil(b, "every node sees every other alive", func() bool {
				for _, n := range nodes {
					if alivePeers(n) != 3 {
						return false
					}
				}
				return true
			})
			if tc.cut {
				waitUntil(b, "a sees d through others", func() bool {
					state, via := peerView(b, a, d.DeviceID())
					return state == "alive" && len(via) > 0
				})
			}
			if !tc.joined {
				time.Sleep(settledWait)
			}
			counts := func() (pushes, pushBytes, relays, pullBytes int64) {
				for _, n := range nodes {
					p, pb, r := n.mesh.Pushed()
					pushes, pushBytes, relays, pullBytes = pushes+p, pushBytes+pb, relays+r, pullBytes+n.PulledBytes()
				}
				return pushes, pushBytes, relays, pullBytes
			}
			ctx := context.Background()
			p0, pb0, r0, pl0 := counts()
			b.ResetTimer()
			for i := range b.N {
				id := remember(b, a, api.RememberRequest{Content: fmt.Sprintf("write %d on a: %s", i, words(rng, 30))}).ID
				if !tc.relay && tc.cut {
					waitUntil(b, "the write on b and c", func() bool { return has(nodes[1], id) && has(nodes[2], id) })
					if err := d.Pull(ctx); err != nil {
						b.Log(err) // its pull from a fails: a is out of its reach
					}
				}
				waitUntil(b, "the write on every node", func() bool {
					for _, n := range nodes {
						if !has(n, id) {
							return false
						}
					}
					return true
				})
			}
			b.StopTimer()
			p1, pb1, r1, pl1 := counts()
			b.ReportMetric(float64(p1-p0)/float64(b.N), "pushes/write")
			b.ReportMetric(float64(r1-r0)/float64(b.N), "relays/write")
			b.ReportMetric(float64(pb1-pb0)/float64(b.N), "push-B/write")
			b.ReportMetric(float64(pl1-pl0)/float64(b.N), "pull-B/write")
		})
	}
}

// settledWait is how long the benchmark lets the nodes probe each other
// before it writes: many of memberlist's probe rounds at 200 ms, which a
// loaded machine stretches.
const settledWait = 5 * time.Second
