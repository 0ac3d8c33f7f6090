package model2vec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// Bounds of a safetensors file, checked before anything is allocated.
const (
	// maxHeaderBytes caps the JSON header: a model's has a handful of
	// tensors and a little metadata, far below this.
	maxHeaderBytes = 1 << 20
	// maxTensorFile caps the whole file (the largest potion model,
	// 500k tokens × 256 dims in F32, is about 512 MiB).
	maxTensorFile = 2 << 30
	// maxTensors caps the entries of the header.
	maxTensors = 64
)

// errSafetensors marks every refusal of a safetensors file.
var errSafetensors = errors.New("bad safetensors")

// tensor is one entry of a safetensors header, its offsets checked
// against the data section and its size against its shape and dtype.
type tensor struct {
	DType  string
	Shape  []int
	Offset int64 // from the start of the file
	Len    int64 // bytes
}

// rawTensor is a header entry as written.
type rawTensor struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// dtypeSize is the size in bytes of the element types the file format
// names; a tensor of another dtype is refused.
var dtypeSize = map[string]int64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1,
	"U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
}

// readHeader reads the header of a safetensors file of size bytes: an
// 8-byte little-endian header length n, n bytes of JSON naming each
// tensor's dtype, shape and [begin, end) offsets within the data section
// that follows. n is checked against the file's real size and a cap
// before it is read, every offset against the data section.
func readHeader(r io.ReaderAt, size int64) (map[string]tensor, error) {
	if size < 8 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the 8-byte header length", errSafetensors, size)
	}
	if size > maxTensorFile {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", errSafetensors, size, int64(maxTensorFile))
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("%w: header length: %w", errSafetensors, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > uint64(size-8) {
		return nil, fmt.Errorf("%w: header of %d bytes beyond the file's %d", errSafetensors, n, size)
	}
	if n > maxHeaderBytes {
		return nil, fmt.Errorf("%w: header of %d bytes, at most %d", errSafetensors, n, maxHeaderBytes)
	}
	head := make([]byte, n)
	if _, err := r.ReadAt(head, 8); err != nil {
		return nil, fmt.Errorf("%w: header: %w", errSafetensors, err)
	}
	return parseHeader(head, 8+int64(n), size-8-int64(n))
}

// parseHeader decodes the JSON header; dataStart is where the data
// section begins in the file and dataLen its length.
func parseHeader(head []byte, dataStart, dataLen int64) (map[string]tensor, error) {
	head = bytes.TrimRight(head, " ") // the format pads the header with spaces
	if len(head) == 0 || head[0] != '{' {
		return nil, fmt.Errorf("%w: header is not a JSON object", errSafetensors)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(head, &raw); err != nil {
		return nil, fmt.Errorf("%w: header: %w", errSafetensors, err)
	}
	delete(raw, "__metadata__")
	if len(raw) > maxTensors {
		return nil, fmt.Errorf("%w: %d tensors, at most %d", errSafetensors, len(raw), maxTensors)
	}
	out := make(map[string]tensor, len(raw))
	for name, msg := range raw {
		var rt rawTensor
		if err := json.Unmarshal(msg, &rt); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %w", errSafetensors, name, err)
		}
		t, err := checkTensor(rt, dataLen)
		if err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %w", errSafetensors, name, err)
		}
		t.Offset += dataStart
		out[name] = t
	}
	return out, nil
}

// checkTensor checks one entry: a known dtype, offsets inside the data
// section, and shape × dtype size equal to the bytes the offsets span.
func checkTensor(rt rawTensor, dataLen int64) (tensor, error) {
	size, ok := dtypeSize[rt.DType]
	if !ok {
		return tensor{}, fmt.Errorf("unknown dtype %q", rt.DType)
	}
	begin, end := rt.DataOffsets[0], rt.DataOffsets[1]
	if begin < 0 || end < begin || end > dataLen {
		return tensor{}, fmt.Errorf("offsets [%d, %d) outside the data section of %d bytes", begin, end, dataLen)
	}
	shape := make([]int, len(rt.Shape))
	want := uint64(size)
	for i, d := range rt.Shape {
		if d < 0 || d > math.MaxInt32 {
			return tensor{}, fmt.Errorf("dimension %d of shape %v out of range", i, rt.Shape)
		}
		hi, lo := bits.Mul64(want, uint64(d))
		if hi != 0 || lo > uint64(dataLen) {
			return tensor{}, fmt.Errorf("shape %v of %s is larger than the data section", rt.Shape, rt.DType)
		}
		want = lo
		shape[i] = int(d)
	}
	if want != uint64(end-begin) {
		return tensor{}, fmt.Errorf("shape %v of %s needs %d bytes, offsets [%d, %d) span %d", rt.Shape, rt.DType, want, begin, end, end-begin)
	}
	return tensor{DType: rt.DType, Shape: shape, Offset: begin, Len: end - begin}, nil
}
