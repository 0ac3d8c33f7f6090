package transport

import (
	"encoding/binary"
	"fmt"
)

// Frame types of the sync, push and join streams. Only append to this list.
const (
	FramePull      byte = 1 // PullRequest
	FrameOffers    byte = 2 // []Entry: kind, id, heads
	FrameOffersEnd byte = 3 // OffersEnd: the responder's change-log position and digest
	FrameWant      byte = 4 // []Entry: kind, id
	FrameDocs      byte = 5 // []Entry: kind, id, heads, document
	FrameWantEnd   byte = 6 // empty: no more wants
	FrameError     byte = 7 // a UTF-8 message
	FrameJoin      byte = 8 // JoinRequest
	FrameJoined    byte = 9 // JoinReply
)

// Decoding caps, so that a hostile frame cannot make us allocate much
// more than its own size.
const (
	maxIDLen   = 1024
	maxHeads   = 256
	maxHeadLen = 128
	maxAddrs   = 64
)

// EpochSize is the size of a change-log epoch: a random id of one store's
// change log, which changes when the store is recreated.
const EpochSize = 16

// Entry is one document in an offer, a want or a batch of documents.
type Entry struct {
	Kind  byte
	ID    string
	Heads []string // offers and documents
	Doc   []byte   // documents only
}

// Position is a point in a peer's change log.
type Position struct {
	Epoch [EpochSize]byte
	Seq   uint64
}

// PullRequest starts an anti-entropy pull. Since is where the puller's
// last complete pull from this peer ended (zero: never). Digest holds the
// puller's 256 digest buckets.
type PullRequest struct {
	Since  Position
	Digest [256][32]byte
}

// OffersEnd ends a responder's offers: the point of its change log they
// reach, and its digest as it made them, which the puller compares with
// its own once it applied what it received. Digest is nil from a peer
// that sends none (versions before it did).
type OffersEnd struct {
	End    Position
	Digest *[256][32]byte
}

// JoinRequest proves an invite token's secret: Proof is
// HMAC-SHA256(secret, joiner device id).
type JoinRequest struct {
	Token [16]byte
	Proof [32]byte
	Name  string
}

// JoinReply welcomes a joined device: the member addresses to contact.
// The device registry follows as FrameDocs frames.
type JoinReply struct {
	Addrs []string
}

// The encodings (uv = unsigned varint; str = uv length, then bytes):
//
//	PullRequest  epoch(16) seq(uv) digest(8192)
//	Position     epoch(16) seq(uv)
//	OffersEnd    epoch(16) seq(uv) [digest(8192)] (older peers send no digest)
//	[]Entry      count(uv), then per entry:
//	             kind(1) id(str) nheads(uv) heads(str...) doc(str)
//	JoinRequest  token(16) proof(32) name(str)
//	JoinReply    count(uv) addrs(str...)
//
// Decoders ignore trailing bytes, for forward compatibility.

// AppendPull encodes a PullRequest.
func AppendPull(b []byte, p *PullRequest) []byte {
	b = AppendPosition(b, p.Since)
	for i := range p.Digest {
		b = append(b, p.Digest[i][:]...)
	}
	return b
}

// DecodePull decodes a PullRequest.
func DecodePull(b []byte) (PullRequest, error) {
	d := decoder{b: b}
	var p PullRequest
	p.Since = d.position()
	for i := range p.Digest {
		copy(p.Digest[i][:], d.bytes(32))
	}
	return p, d.done("pull request")
}

// AppendPosition encodes a Position.
func AppendPosition(b []byte, p Position) []byte {
	b = append(b, p.Epoch[:]...)
	return binary.AppendUvarint(b, p.Seq)
}

// DecodePosition decodes a Position.
func DecodePosition(b []byte) (Position, error) {
	d := decoder{b: b}
	p := d.position()
	return p, d.done("position")
}

// AppendOffersEnd encodes an OffersEnd.
func AppendOffersEnd(b []byte, e *OffersEnd) []byte {
	b = AppendPosition(b, e.End)
	if e.Digest != nil {
		for i := range e.Digest {
			b = append(b, e.Digest[i][:]...)
		}
	}
	return b
}

// DecodeOffersEnd decodes an OffersEnd.
func DecodeOffersEnd(b []byte) (OffersEnd, error) {
	d := decoder{b: b}
	e := OffersEnd{End: d.position()}
	if d.err == nil && len(d.b) >= 256*32 {
		e.Digest = new([256][32]byte)
		for i := range e.Digest {
			copy(e.Digest[i][:], d.bytes(32))
		}
	}
	return e, d.done("end of offers")
}

// AppendEntries encodes entries.
func AppendEntries(b []byte, es []Entry) []byte {
	b = binary.AppendUvarint(b, uint64(len(es)))
	for _, e := range es {
		b = append(b, e.Kind)
		b = appendStr(b, e.ID)
		b = binary.AppendUvarint(b, uint64(len(e.Heads)))
		for _, h := range e.Heads {
			b = appendStr(b, h)
		}
		b = appendStr(b, string(e.Doc))
	}
	return b
}

// EntrySize is the encoded size of e, to fill frames up to a size.
func EntrySize(e Entry) int {
	n := 1 + 2*binary.MaxVarintLen64 + len(e.ID) + len(e.Doc)
	for _, h := range e.Heads {
		n += binary.MaxVarintLen64 + len(h)
	}
	return n
}

// DecodeEntries decodes entries. Document bytes alias b.
func DecodeEntries(b []byte) ([]Entry, error) {
	d := decoder{b: b}
	// Every entry takes at least 4 bytes: this bounds the allocation.
	n := d.count(4)
	es := make([]Entry, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		e := Entry{Kind: d.byte()}
		e.ID = d.str(maxIDLen)
		nh := d.count(2)
		if nh > maxHeads {
			d.fail("%d heads, cap %d", nh, maxHeads)
		}
		for j := 0; j < nh && d.err == nil; j++ {
			e.Heads = append(e.Heads, d.str(maxHeadLen))
		}
		if doc := d.bytes(d.count(1)); len(doc) > 0 {
			e.Doc = doc
		}
		es = append(es, e)
	}
	return es, d.done("entries")
}

// AppendJoin encodes a JoinRequest.
func AppendJoin(b []byte, j *JoinRequest) []byte {
	b = append(b, j.Token[:]...)
	b = append(b, j.Proof[:]...)
	return appendStr(b, j.Name)
}

// DecodeJoin decodes a JoinRequest.
func DecodeJoin(b []byte) (JoinRequest, error) {
	d := decoder{b: b}
	var j JoinRequest
	copy(j.Token[:], d.bytes(16))
	copy(j.Proof[:], d.bytes(32))
	j.Name = d.str(256)
	return j, d.done("join request")
}

// AppendJoined encodes a JoinReply.
func AppendJoined(b []byte, r *JoinReply) []byte {
	b = binary.AppendUvarint(b, uint64(len(r.Addrs)))
	for _, a := range r.Addrs {
		b = appendStr(b, a)
	}
	return b
}

// DecodeJoined decodes a JoinReply.
func DecodeJoined(b []byte) (JoinReply, error) {
	d := decoder{b: b}
	n := d.count(1)
	if n > maxAddrs {
		d.fail("%d addresses, cap %d", n, maxAddrs)
	}
	var r JoinReply
	for i := 0; i < n && d.err == nil; i++ {
		r.Addrs = append(r.Addrs, d.str(256))
	}
	return r, d.done("join reply")
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads a message; the first error sticks and later reads return
// zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length or count whose items take at least unit bytes
// each, and checks it against the bytes left.
func (d *decoder) count(unit int) int {
	v := d.uvarint()
	if v > uint64(len(d.b)/unit) {
		d.fail("count %d exceeds the %d bytes left", v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail("truncated: want %d bytes, have %d", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if b := d.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) str(limit int) string {
	n := d.count(1)
	if n > limit {
		d.fail("string of %d bytes, cap %d", n, limit)
		return ""
	}
	return string(d.bytes(n))
}

func (d *decoder) position() Position {
	var p Position
	copy(p.Epoch[:], d.bytes(EpochSize))
	p.Seq = d.uvarint()
	return p
}

func (d *decoder) done(what string) error {
	if d.err != nil {
		return fmt.Errorf("%w: %s: %w", ErrMalformed, what, d.err)
	}
	return nil
}
