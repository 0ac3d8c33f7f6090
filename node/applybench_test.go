package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// BenchmarkWriteDuringPull measures a local write (ns/op) on a node that
// meanwhile applies a peer's documents without pause, frame after frame of
// 500, as a large pull does.
func BenchmarkWriteDuringPull(b *testing.B) {
	ctx := context.Background()
	src := testNode(b, "")
	seed := uint64(time.Now().UnixNano())
	b.Logf("seed %d", seed)
	rng := newRand(seed)
	for i := range 2000 {
		if _, err := src.Remember(ctx, api.RememberRequest{Content: fmt.Sprintf("from the peer %d %s", i, words(rng, 40))}); err != nil {
			b.Fatal(err)
		}
	}
	var docs []transport.Entry
	err := src.store.All(storage.KindMemory, func(rec storage.Record) error {
		doc, err := src.store.GetDoc(storage.KindMemory, rec.ID)
		docs = append(docs, transport.Entry{Kind: byte(storage.KindMemory), ID: rec.ID, Heads: rec.Heads, Doc: doc})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	dst := meshNodeWith(b, "", 1, nil, mesh.Config{SyncInterval: time.Hour})
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i = (i + 500) % len(docs) {
			if err := dst.mesh.Apply(src.DeviceID(), docs[i:min(i+500, len(docs))]); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	b.ResetTimer()
	for i := range b.N {
		if _, err := dst.Remember(ctx, api.RememberRequest{Content: fmt.Sprintf("a local write during the pull %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
}
