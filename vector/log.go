package vector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
)

// The vectors file is a header and then records, each a whole Put or
// Delete call, appended and fsynced before the call returns:
//
//	header:  "memmesh vectors\n" | u32 version | u32 dims | u64 generation |
//	         u16 tag length | tag | u32 CRC-32C of the header before it
//	record:  u32 payload length | u32 CRC-32C of the payload | payload
//	payload: op (1 put, 2 delete) | u32 count | count items
//	put:     u16 id length | id | u64 sum | f32 scale | dims int8 values
//	delete:  u16 id length | id
//
// All integers are little-endian. The generation is drawn anew for each
// file written, so that the graph file can tell which file (and which
// prefix of it, by offset and a chain of the records' CRCs) it indexes.
const (
	logMagic   = "memmesh vectors\n"
	logVersion = 1
	opPut      = 1
	opDelete   = 2
	// MaxBatch bounds the items of one Put or Delete call, and so the
	// size of a record: 10000 items of 4096 values make 41 MB.
	MaxBatch = 10000
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt marks a record or header that cannot be what was written.
var errCorrupt = errors.New("vector: corrupt data")

// change is one item of a record.
type change struct {
	op    byte
	id    string
	sum   uint64
	scale float32
	code  []int8
}

func itemSize(op byte, id string, dims int) int {
	if op == opDelete {
		return 2 + len(id)
	}
	return 2 + len(id) + 8 + 4 + dims
}

func maxRecord(dims int) int {
	return 5 + MaxBatch*itemSize(opPut, string(make([]byte, MaxIDLen)), dims)
}

// encodeRecord frames changes of one op as a record.
func encodeRecord(op byte, cs []change, dims int) []byte {
	n := 5
	for _, c := range cs {
		n += itemSize(op, c.id, dims)
	}
	b := make([]byte, 8, 8+n)
	b = append(b, op)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(cs)))
	for _, c := range cs {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(c.id)))
		b = append(b, c.id...)
		if op == opPut {
			b = binary.LittleEndian.AppendUint64(b, c.sum)
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(c.scale))
			for _, x := range c.code {
				b = append(b, byte(x))
			}
		}
	}
	binary.LittleEndian.PutUint32(b, uint32(n))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b
}

// decodePayload parses a record's payload, every length checked against
// the bytes there; the changes' codes alias p.
func decodePayload(p []byte, dims int) (byte, []change, error) {
	if len(p) < 5 || (p[0] != opPut && p[0] != opDelete) {
		return 0, nil, fmt.Errorf("%w: bad record op", errCorrupt)
	}
	op, count := p[0], binary.LittleEndian.Uint32(p[1:])
	if count == 0 || count > MaxBatch {
		return 0, nil, fmt.Errorf("%w: %d items in a record", errCorrupt, count)
	}
	p = p[5:]
	cs := make([]change, 0, count)
	for range count {
		if len(p) < 2 {
			return 0, nil, fmt.Errorf("%w: record ends in an item", errCorrupt)
		}
		n := int(binary.LittleEndian.Uint16(p))
		if n == 0 || n > MaxIDLen || len(p) < itemSize(op, string(p[:0]), dims)+n {
			return 0, nil, fmt.Errorf("%w: bad item length", errCorrupt)
		}
		c := change{op: op, id: string(p[2 : 2+n])}
		p = p[2+n:]
		if op == opPut {
			c.sum = binary.LittleEndian.Uint64(p)
			c.scale = math.Float32frombits(binary.LittleEndian.Uint32(p[8:]))
			if !(c.scale > 0 && c.scale <= 1) { // a unit vector's peak/127
				return 0, nil, fmt.Errorf("%w: bad scale %v", errCorrupt, c.scale)
			}
			c.code = int8s(p[12 : 12+dims])
			p = p[12+dims:]
		}
		cs = append(cs, c)
	}
	if len(p) != 0 {
		return 0, nil, fmt.Errorf("%w: %d bytes after the items", errCorrupt, len(p))
	}
	return op, cs, nil
}

func int8s(b []byte) []int8 {
	out := make([]int8, len(b))
	for i, x := range b {
		out[i] = int8(x)
	}
	return out
}

func encodeHeader(dims int, tag string, gen uint64) []byte {
	b := []byte(logMagic)
	b = binary.LittleEndian.AppendUint32(b, logVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(dims))
	b = binary.LittleEndian.AppendUint64(b, gen)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(tag)))
	b = append(b, tag...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// readHeader reads a header; it returns errCorrupt for one that is not
// whole or fails its CRC.
func readHeader(r io.Reader) (dims int, tag string, gen uint64, size int64, err error) {
	fixed := make([]byte, len(logMagic)+4+4+8+2)
	if _, err := io.ReadFull(r, fixed); err != nil {
		return 0, "", 0, 0, fmt.Errorf("%w: short header", errCorrupt)
	}
	if string(fixed[:len(logMagic)]) != logMagic {
		return 0, "", 0, 0, fmt.Errorf("%w: not a vectors file", errCorrupt)
	}
	rest := fixed[len(logMagic):]
	version := binary.LittleEndian.Uint32(rest)
	tagLen := int(binary.LittleEndian.Uint16(rest[16:]))
	if version != logVersion || tagLen > MaxTagLen {
		return 0, "", 0, 0, fmt.Errorf("%w: version %d, tag of %d bytes", errCorrupt, version, tagLen)
	}
	tail := make([]byte, tagLen+4)
	if _, err := io.ReadFull(r, tail); err != nil {
		return 0, "", 0, 0, fmt.Errorf("%w: short header", errCorrupt)
	}
	whole := append(fixed, tail[:tagLen]...)
	if crc32.Checksum(whole, castagnoli) != binary.LittleEndian.Uint32(tail[tagLen:]) {
		return 0, "", 0, 0, fmt.Errorf("%w: header CRC", errCorrupt)
	}
	return int(binary.LittleEndian.Uint32(rest[4:])), string(tail[:tagLen]),
		binary.LittleEndian.Uint64(rest[8:]), int64(len(whole) + 4), nil
}

// replay reads records from r, which starts at offset off, calling fn
// with each record's end offset, chained CRC and changes. It stops at
// the end or at the first record that is not whole and intact, and
// returns the offset of the end of the last good record and why it
// stopped early (nil at a clean end).
func replay(r io.Reader, off int64, fileSize int64, dims int, fn func(end int64, chain uint32, op byte, cs []change)) (int64, uint32, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var frame [8]byte
	var chain uint32
	buf := []byte{}
	for {
		if _, err := io.ReadFull(br, frame[:]); err != nil {
			if err == io.EOF {
				return off, chain, nil
			}
			return off, chain, fmt.Errorf("%w: torn record frame", errCorrupt)
		}
		n := int64(binary.LittleEndian.Uint32(frame[:]))
		// The announced length is believed only as far as the file
		// and the largest record allow.
		if n > int64(maxRecord(dims)) || off+8+n > fileSize {
			return off, chain, fmt.Errorf("%w: record of %d bytes at %d, file of %d", errCorrupt, n, off, fileSize)
		}
		buf = slicesGrow(buf, int(n))
		if _, err := io.ReadFull(br, buf); err != nil {
			return off, chain, fmt.Errorf("%w: torn record", errCorrupt)
		}
		if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(frame[4:]) {
			return off, chain, fmt.Errorf("%w: record CRC at %d", errCorrupt, off)
		}
		op, cs, err := decodePayload(buf, dims)
		if err != nil {
			return off, chain, fmt.Errorf("at %d: %w", off, err)
		}
		off += 8 + n
		chain = crc32.Update(chain, castagnoli, frame[4:])
		fn(off, chain, op, cs)
	}
}

func slicesGrow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// writeFileSync writes a file whole under a temporary name, fsyncs it and
// renames it over path, so that path holds the old or the new content.
func writeFileSync(path string, write func(w io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
