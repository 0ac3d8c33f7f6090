package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/memmesh/memmesh/internal/mutate"
)

// FuzzReadFrame: any bytes, arriving in pieces of any sizes, either
// decode to frames within the cap or fail with an error; a decoded frame
// re-encodes to the bytes it came from, and its buffer is no larger than
// twice its payload plus a chunk (it grew with the bytes that arrived).
func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	WriteFrame(&buf, FrameDocs, AppendEntries(nil, []Entry{{Kind: 'm', ID: "abc", Heads: []string{"h1"}, Doc: []byte{1, 2, 3}}}))
	WriteFrame(&buf, FrameWantEnd, nil)
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 3, 5, 1})
	mutate.Seeds(f, 300, buf.Bytes())
	big := binary.BigEndian.AppendUint32(nil, 3*frameChunk+1)
	f.Add(append(append(big, FrameDocs), make([]byte, 3*frameChunk)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		pieces := &piecesReader{r: r, sizes: data}
		for {
			start := len(data) - r.Len()
			typ, p, err := ReadFrame(pieces, 4*frameChunk)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrMalformed) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if cap(p) > 2*len(p)+frameChunk {
				t.Fatalf("a payload of %d bytes holds a buffer of %d", len(p), cap(p))
			}
			var out bytes.Buffer
			if err := WriteFrame(&out, typ, p); err != nil {
				t.Fatal(err)
			}
			if end := len(data) - r.Len(); !bytes.Equal(out.Bytes(), data[start:end]) {
				t.Fatalf("frame re-encodes to %x, read from %x", out.Bytes(), data[start:end])
			}
		}
	})
}

// piecesReader returns r's bytes in pieces of 1 to 24,736 bytes, their
// sizes cycling through sizes.
type piecesReader struct {
	r     io.Reader
	sizes []byte
	i     int
}

func (p *piecesReader) Read(b []byte) (int, error) {
	n := len(b)
	if len(p.sizes) > 0 {
		n = min(n, 1+int(p.sizes[p.i%len(p.sizes)])*97)
		p.i++
	}
	return p.r.Read(b[:n])
}

// FuzzHello: any bytes either decode to a hello that re-encodes to them,
// or fail; negotiation never picks a version outside both ranges.
func FuzzHello(f *testing.F) {
	f.Add(hello{Type: StreamSync, Min: 1, Max: 1, Device: "DEVICE"}.appendTo(nil))
	f.Add(hello{Type: 99, Min: 3, Max: 200}.appendTo(nil))
	f.Add([]byte("MMSH"))
	f.Add(appendReply(nil, helloRefused, 0, "no"))
	mutate.Seeds(f, 300, hello{Type: StreamSync, Min: 1, Max: 1, Device: "DEVICE"}.appendTo(nil), appendReply(nil, helloOK, 1, ""))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := readHello(bytes.NewReader(data))
		if err == nil {
			if enc := h.appendTo(nil); !bytes.Equal(enc, data[:len(enc)]) {
				t.Fatalf("hello %+v re-encodes to %x, read from %x", h, enc, data)
			}
			if v, err := negotiate(h); err == nil && (v < h.Min || v > h.Max || v < MinVersion || v > MaxVersion) {
				t.Fatalf("negotiated %d for %d..%d", v, h.Min, h.Max)
			}
		}
		readReply(bytes.NewReader(data)) // must not panic
	})
}

// FuzzSyncMessages: every decoder accepts or rejects any payload without
// panicking or allocating beyond it, and what it accepts round-trips.
func FuzzSyncMessages(f *testing.F) {
	f.Add(AppendEntries(nil, []Entry{{Kind: 'm', ID: "abcdef", Heads: []string{"00ff", "11ee"}, Doc: []byte("doc")}, {Kind: 'e', ID: "x"}}))
	f.Add(AppendPull(nil, &PullRequest{Since: Position{Seq: 42}}))
	f.Add(AppendJoin(nil, &JoinRequest{Name: "laptop"}))
	f.Add(AppendJoined(nil, &JoinReply{Addrs: []string{"127.0.0.1:7420", "[::1]:7420"}}))
	f.Add(AppendPosition(nil, Position{Seq: 1 << 40}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	mutate.Seeds(f, 300,
		AppendEntries(nil, []Entry{{Kind: 'm', ID: "abcdef", Heads: []string{"00ff"}, Doc: []byte("doc")}}),
		AppendJoin(nil, &JoinRequest{Name: "laptop"}),
		AppendJoined(nil, &JoinReply{Addrs: []string{"127.0.0.1:7420"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if es, err := DecodeEntries(data); err == nil {
			again, err := DecodeEntries(AppendEntries(nil, es))
			if err != nil || !reflect.DeepEqual(normalize(again), normalize(es)) {
				t.Fatalf("entries do not round-trip: %v %+v %+v", err, es, again)
			}
		}
		if p, err := DecodePull(data); err == nil {
			if again, err := DecodePull(AppendPull(nil, &p)); err != nil || again != p {
				t.Fatalf("pull request does not round-trip: %v", err)
			}
		}
		if j, err := DecodeJoin(data); err == nil {
			if again, err := DecodeJoin(AppendJoin(nil, &j)); err != nil || again != j {
				t.Fatalf("join request does not round-trip: %v", err)
			}
		}
		if r, err := DecodeJoined(data); err == nil {
			if again, err := DecodeJoined(AppendJoined(nil, &r)); err != nil || !reflect.DeepEqual(again, r) {
				t.Fatalf("join reply does not round-trip: %v", err)
			}
		}
		DecodePosition(data)
	})
}

// normalize makes empty and nil slices compare equal.
func normalize(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		if len(e.Heads) == 0 {
			e.Heads = nil
		}
		if len(e.Doc) == 0 {
			e.Doc = nil
		}
		out[i] = e
	}
	return out
}
