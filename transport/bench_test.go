package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
)

// BenchmarkStreamFrames: frames of 1 MiB, as a pull sends documents,
// from one endpoint to another over loopback QUIC, read whole.
func BenchmarkStreamFrames(b *testing.B) {
	ends := make([]*Endpoint, 2)
	for i := range ends {
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		cert, err := Certificate(key)
		if err != nil {
			b.Fatal(err)
		}
		e, err := Listen(Config{Listen: "127.0.0.1:0", Key: key, Cert: cert, Authorize: func(string) error { return nil }})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		ends[i] = e
	}
	ctx := context.Background()
	payload := make([]byte, 1<<20)
	done := make(chan error, 1)
	go func() {
		s, err := ends[1].Accept(ctx)
		if err != nil {
			done <- err
			return
		}
		defer s.Close()
		for range b.N {
			if _, _, err := s.ReadFrame(MaxFrame); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	s, err := ends[0].Open(ctx, ends[1].Addr().String(), StreamSync)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for range b.N {
		if err := s.WriteFrame(FrameDocs, payload); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
