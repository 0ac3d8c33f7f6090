// Package mutate adds damaged copies of seed inputs to a fuzz target's
// corpus, so that a plain `go test` run, which only runs the corpus,
// exercises a decoder with a few hundred broken inputs and not just the
// well-formed seeds. `go test -fuzz` then explores from there.
package mutate

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// Seeds adds n mutations of seeds to f's corpus: a byte flipped, the input
// cut short, a stretch duplicated, or high bits set in two places. The
// same arguments always give the same inputs.
func Seeds(f *testing.F, n int, seeds ...[]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		b := bytes.Clone(seeds[i%len(seeds)])
		if len(b) == 0 {
			continue
		}
		switch rng.IntN(4) {
		case 0:
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		case 1:
			b = b[:rng.IntN(len(b))]
		case 2:
			at := rng.IntN(len(b))
			b = append(b[:at:at], b[at:]...)
			b = append(b, b[at:]...)
		case 3:
			b[rng.IntN(len(b))] = 0xff
			b[rng.IntN(len(b))] = 0x80
		}
		f.Add(b)
	}
}
