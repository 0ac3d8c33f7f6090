package bench

import (
	"context"
	"testing"
)

func TestSync(t *testing.T) {
	r, err := Sync(context.Background(), SyncOptions{Nodes: 3, Memories: 20, Samples: 5, Common: Common{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Propagation.P50 <= 0 || r.Propagation.P99 < r.Propagation.P50 {
		t.Errorf("propagation = %+v", r.Propagation)
	}
	if r.InitialStored <= 0 || r.InitialSearchable < r.InitialStored {
		t.Errorf("initial sync: stored after %v s, searchable after %v s", r.InitialStored, r.InitialSearchable)
	}
	if r.InitialCPU <= 0 {
		t.Errorf("initial sync used %v s of CPU, want more than 0", r.InitialCPU)
	}
	if p := r.InitialPull; p.Bytes <= 0 || p.RoundTrips < 1 || p.Documents < 20 {
		t.Errorf("initial pull = %+v: want the 20 memories, bytes and a round trip", p)
	}
	if r.InitialBytes < r.InitialPull.Bytes {
		t.Errorf("the fresh node's pulls took %d bytes, fewer than its catch-up pull's %d", r.InitialBytes, r.InitialPull.Bytes)
	}
}

func TestResync(t *testing.T) {
	r, err := Resync(context.Background(), ResyncOptions{Changes: 3, Memories: 10, Common: Common{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if r.DeadDetect <= 0 || r.Remerge <= 0 {
		t.Errorf("report = %+v", r)
	}
	if p := r.Pull; p.Bytes <= 0 || p.RoundTrips < 1 || p.Documents != 3 {
		t.Errorf("resync pull = %+v: want the 3 changed memories", p)
	}
}
