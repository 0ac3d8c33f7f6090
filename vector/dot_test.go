package vector

import (
	"math/rand/v2"
	"testing"
)

// TestDotInt8: the dot product used agrees with the Go loop at every
// length and at the extremes of int8, whatever the slices' alignment.
func TestDotInt8(t *testing.T) {
	r, _ := newSeeded(t)
	for n := range 300 {
		for _, off := range []int{0, 1, 7} {
			a, b := make([]int8, n+off), make([]int8, n+off+3)
			for i := range a {
				a[i] = int8(r.IntN(256) - 128)
			}
			for i := range b {
				b[i] = int8(r.IntN(256) - 128)
			}
			if got, want := dotInt8(a[off:], b[off:]), dotInt8Go(a[off:], b[off:]); got != want {
				t.Fatalf("n %d, offset %d: %d, want %d", n, off, got, want)
			}
		}
	}
	a, b := make([]int8, MaxDims), make([]int8, MaxDims)
	for i := range a {
		a[i], b[i] = -128, -128
	}
	if got, want := dotInt8(a, b), int32(MaxDims*128*128); got != want {
		t.Fatalf("largest: %d, want %d", got, want)
	}
}

func BenchmarkDotInt8(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, y := make([]int8, 768), make([]int8, 768)
	for i := range x {
		x[i], y[i] = int8(r.IntN(255)-127), int8(r.IntN(255)-127)
	}
	b.Run("used", func(b *testing.B) {
		for b.Loop() {
			dotInt8(x, y)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			dotInt8Go(x, y)
		}
	})
}
