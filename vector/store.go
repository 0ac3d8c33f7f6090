package vector

import (
	"fmt"
	"math"
)

// store holds the vectors in slots, each as dims int8 values and one
// float32 scale: a stored vector is scale·code, normalised before it was
// quantised. A freed slot is reused by the next new id, so slot numbers
// stay dense and follow from the order of the changes alone (the graph
// file relies on that).
type store struct {
	dims   int
	codes  []int8    // slot i holds codes[i*dims:(i+1)*dims]
	scales []float32 // 0 in a free slot
	ids    []string  // "" in a free slot
	sums   []uint64
	free   []uint32 // free slots, the last one reused first
	slots  map[string]uint32
}

func newStore(dims int) *store {
	return &store{dims: dims, slots: map[string]uint32{}}
}

func (s *store) len() int                { return len(s.slots) }
func (s *store) cap() int                { return len(s.ids) }
func (s *store) live(slot uint32) bool   { return s.ids[slot] != "" }
func (s *store) code(slot uint32) []int8 { return s.codes[int(slot)*s.dims : (int(slot)+1)*s.dims] }

// put stores a quantised vector under id, in id's slot if it has one,
// and returns the slot.
func (s *store) put(id string, sum uint64, scale float32, code []int8) uint32 {
	slot, ok := s.slots[id]
	switch {
	case ok:
	case len(s.free) > 0:
		slot = s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
	default:
		slot = uint32(len(s.ids))
		s.ids = append(s.ids, "")
		s.sums = append(s.sums, 0)
		s.scales = append(s.scales, 0)
		s.codes = append(s.codes, make([]int8, s.dims)...)
	}
	s.slots[id] = slot
	s.ids[slot], s.sums[slot], s.scales[slot] = id, sum, scale
	copy(s.code(slot), code)
	return slot
}

// remove frees id's slot; it reports the slot and whether id was stored.
func (s *store) remove(id string) (uint32, bool) {
	slot, ok := s.slots[id]
	if !ok {
		return 0, false
	}
	delete(s.slots, id)
	s.ids[slot], s.sums[slot], s.scales[slot] = "", 0, 0
	s.free = append(s.free, slot)
	return slot, true
}

// sim is the cosine of two stored vectors.
func (s *store) sim(a, b uint32) float32 {
	return s.scales[a] * s.scales[b] * float32(dotInt8(s.code(a), s.code(b)))
}

// query is a search's vector, quantised as stored ones are, so that its
// cosine to a stored vector is one integer dot product.
type query struct {
	scale float32
	code  []int8
}

func (s *store) score(q *query, slot uint32) float32 {
	return q.scale * s.scales[slot] * float32(dotInt8(q.code, s.code(slot)))
}

// quantise checks v, normalises it and maps it to int8 with one scale
// (its largest magnitude maps to 127), so that the cosine of two vectors
// is sa·sb·Σ qa·qb, within about 1% (see the package comment).
func quantise(v []float32, dims int, code []int8) (float32, error) {
	if len(v) != dims {
		return 0, fmt.Errorf("%w: %d values, want %d", ErrBadVector, len(v), dims)
	}
	var sum float64
	var peak float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%w: a value is not a finite number", ErrBadVector)
		}
		sum += f * f
		peak = max(peak, math.Abs(f))
	}
	if sum == 0 {
		return 0, fmt.Errorf("%w: zero vector", ErrBadVector)
	}
	// Normalised, the peak is peak/norm; the scale maps it to 127.
	scale := peak / math.Sqrt(sum) / 127
	for i, x := range v {
		code[i] = int8(math.Round(float64(x) / peak * 127))
	}
	return float32(scale), nil
}

// dotInt8Go is Σ a·b in Go, four sums at a time so that the loads
// overlap.
func dotInt8Go(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += int32(aa[0])*int32(bb[0]) + int32(aa[4])*int32(bb[4])
		s1 += int32(aa[1])*int32(bb[1]) + int32(aa[5])*int32(bb[5])
		s2 += int32(aa[2])*int32(bb[2]) + int32(aa[6])*int32(bb[6])
		s3 += int32(aa[3])*int32(bb[3]) + int32(aa[7])*int32(bb[7])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}
