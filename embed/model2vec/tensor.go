package model2vec

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// chunkBytes is how much of a tensor is read at a time, so that a large
// matrix is converted as it arrives instead of held twice.
const chunkBytes = 1 << 20

// readFloats reads a float tensor as float32 values (F16 and F64 are
// converted).
func readFloats(r io.ReaderAt, t tensor) ([]float32, error) {
	var size int64
	var conv func([]byte) float32
	switch t.DType {
	case "F32":
		size, conv = 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
	case "F16":
		size, conv = 2, func(b []byte) float32 { return float16(binary.LittleEndian.Uint16(b)) }
	case "F64":
		size, conv = 8, func(b []byte) float32 { return float32(math.Float64frombits(binary.LittleEndian.Uint64(b))) }
	default:
		return nil, fmt.Errorf("dtype %s not supported (F32, F16 or F64)", t.DType)
	}
	out := make([]float32, 0, t.Len/size)
	err := readChunks(r, t, size, func(b []byte) { out = append(out, conv(b)) })
	return out, err
}

// readInts reads an integer tensor (a token mapping) as ints.
func readInts(r io.ReaderAt, t tensor) ([]int64, error) {
	var size int64
	var conv func([]byte) int64
	switch t.DType {
	case "I64":
		size, conv = 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }
	case "I32":
		size, conv = 4, func(b []byte) int64 { return int64(int32(binary.LittleEndian.Uint32(b))) }
	default:
		return nil, fmt.Errorf("dtype %s not supported (I64 or I32)", t.DType)
	}
	out := make([]int64, 0, t.Len/size)
	err := readChunks(r, t, size, func(b []byte) { out = append(out, conv(b)) })
	return out, err
}

// readChunks reads t's bytes a chunk at a time and calls each with every
// element of size bytes.
func readChunks(r io.ReaderAt, t tensor, size int64, each func([]byte)) error {
	buf := make([]byte, min(t.Len, chunkBytes/size*size))
	for done := int64(0); done < t.Len; {
		b := buf[:min(int64(len(buf)), t.Len-done)]
		if _, err := r.ReadAt(b, t.Offset+done); err != nil {
			return fmt.Errorf("reading tensor data: %w", err)
		}
		for i := 0; i < len(b); i += int(size) {
			each(b[i : i+int(size)])
		}
		done += int64(len(b))
	}
	return nil
}

// float16 converts an IEEE 754 half-precision value.
func float16(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0: // zero
		return math.Float32frombits(sign)
	default: // subnormal: frac × 2^-24
		v := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			return -v
		}
		return v
	}
}
