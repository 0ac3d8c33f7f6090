package node

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/storage"
)

// TestDigestIsARecount runs the simulation's random events (writes,
// concurrent edits, forgets, purges, links, namespace settings,
// partitions, lost and repeated pushes, pulls, crashes, backups and
// restores) and after each compares every node's digests with a recount
// from its records: the store's, which it keeps in memory and brings up
// to date at each commit, with every document's share; the mesh's, which
// leaves the private share out, with the share of every document it
// compares with peers (mayGo).
func TestDigestIsARecount(t *testing.T) {
	t.Parallel()
	first := uint64(time.Now().UnixNano())
	t.Logf("first seed %d", first)
	for seed := first; seed < first+6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0xd16e57))
			s := newSim(t, seed, rng, 2+rng.IntN(3))
			defer s.close()
			for s.event = 0; s.event < 60; s.event++ {
				s.now = s.now.Add(time.Second)
				s.step()
				for i, sn := range s.nodes {
					if err := recountDigests(sn.n); err != nil {
						t.Fatalf("seed %d, event %d, node %d: %v\ntrace:\n%s", seed, s.event, i, err, strings.Join(s.trace[max(0, len(s.trace)-20):], "\n"))
					}
				}
			}
		})
	}
}

// recountDigests compares n's digests with a recount from its records.
func recountDigests(n *Node) error {
	var all, compared [256][32]byte
	for _, kind := range []storage.Kind{storage.KindMesh, storage.KindPurge, storage.KindMemory, storage.KindEdge} {
		err := n.store.All(kind, func(rec storage.Record) error {
			b, h := storage.Bucket(kind, rec.ID), storage.DocHash(kind, rec.ID, rec.Heads)
			for i := range h {
				all[b][i] ^= h[i]
				if mayGo(n, rec) {
					compared[b][i] ^= h[i]
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if d, err := n.store.Digest(); err != nil || d != all {
		return fmt.Errorf("the store's digest is not the recount of its records (%v)", err)
	}
	if d, err := n.mesh.Digest(); err != nil || d != compared {
		return fmt.Errorf("the mesh's digest is not the recount of the documents it compares (%v)", err)
	}
	return nil
}
