package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// StreamType is the first byte of every stream. Only append to this list.
type StreamType byte

// The stream types.
const (
	StreamMembership StreamType = 1 // memberlist's streams (push/pull of member state)
	StreamSync       StreamType = 2 // anti-entropy: one pull of documents
	StreamPush       StreamType = 3 // changes pushed as they are committed
	StreamJoin       StreamType = 4 // a new device joining with an invite token
	StreamAppeal     StreamType = 5 // a device a member took for revoked: revocations both ways
)

func (t StreamType) String() string {
	switch t {
	case StreamMembership:
		return "membership"
	case StreamSync:
		return "sync"
	case StreamPush:
		return "push"
	case StreamJoin:
		return "join"
	case StreamAppeal:
		return "appeal"
	}
	return fmt.Sprintf("stream(%d)", byte(t))
}

// Protocol versions this build speaks.
const (
	MinVersion = 1
	MaxVersion = 1
)

// Frame size caps, checked before a frame's buffer is allocated.
const (
	// MaxFrame bounds every frame between members: a batch of documents,
	// or one document of up to 16 MiB with its framing.
	MaxFrame = 17 << 20
	// MaxJoinFrame bounds frames on join streams, whose peer is not yet
	// trusted.
	MaxJoinFrame = 64 << 10
)

// helloMagic starts every hello and hello reply.
var helloMagic = [4]byte{'M', 'M', 'S', 'H'}

// Hello reply status.
const (
	helloOK      = 0
	helloRefused = 1
)

var (
	// ErrUnknownMagic is a stream that does not start with a memmesh hello.
	ErrUnknownMagic = errors.New("transport: not a memmesh stream (bad magic)")
	// ErrVersion is a peer whose protocol versions do not overlap ours.
	ErrVersion = errors.New("transport: no common protocol version")
	// ErrRefused is a stream or connection the peer refused.
	ErrRefused = errors.New("transport: refused by peer")
	// ErrBusy is a stream or connection refused because its device
	// already has as many open as it may.
	ErrBusy = errors.New("transport: too many streams or connections")
	// ErrFrameTooLarge is a frame over the size cap.
	ErrFrameTooLarge = errors.New("transport: frame too large")
	// ErrBadCertificate is a peer certificate that proves no device id.
	ErrBadCertificate = errors.New("transport: bad certificate")
	// ErrUnauthorized is a device that is not a member of the mesh.
	ErrUnauthorized = errors.New("transport: device not authorised")
	// ErrRevoked is a device that was a member and was revoked. Unlike
	// other refused devices it is told so: a member closes its mesh
	// connections with codeRevoked, and its endpoint calls
	// Config.Revoked.
	ErrRevoked = fmt.Errorf("%w: revoked", ErrUnauthorized)
	// ErrMalformed is a frame or message that does not decode.
	ErrMalformed = errors.New("transport: malformed message")
	// ErrClosed is an endpoint that was closed.
	ErrClosed = errors.New("transport: closed")
)

// hello opens every stream:
//
//	type(1) magic(4) min(1) max(1) idlen(1) id(idlen)
type hello struct {
	Type     StreamType
	Min, Max byte
	Device   string
}

func (h hello) appendTo(b []byte) []byte {
	b = append(b, byte(h.Type))
	b = append(b, helloMagic[:]...)
	b = append(b, h.Min, h.Max, byte(len(h.Device)))
	return append(b, h.Device...)
}

// readHello reads a hello from r. It reads exactly the hello's bytes.
func readHello(r io.Reader) (hello, error) {
	var fixed [8]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return hello{}, fmt.Errorf("read hello: %w", err)
	}
	if [4]byte(fixed[1:5]) != helloMagic {
		return hello{}, ErrUnknownMagic
	}
	h := hello{Type: StreamType(fixed[0]), Min: fixed[5], Max: fixed[6]}
	if h.Min == 0 || h.Min > h.Max {
		return hello{}, fmt.Errorf("%w: hello versions %d..%d", ErrMalformed, h.Min, h.Max)
	}
	id := make([]byte, fixed[7])
	if _, err := io.ReadFull(r, id); err != nil {
		return hello{}, fmt.Errorf("read hello: %w", err)
	}
	h.Device = string(id)
	return h, nil
}

// negotiate picks the highest version both sides speak.
func negotiate(h hello) (byte, error) {
	v := min(h.Max, MaxVersion)
	if v < max(h.Min, MinVersion) {
		return 0, fmt.Errorf("%w: peer speaks %d..%d, we speak %d..%d", ErrVersion, h.Min, h.Max, MinVersion, MaxVersion)
	}
	return v, nil
}

// The hello reply:
//
//	magic(4) status(1) version(1) msglen(1) msg(msglen)
//
// status 0 accepts the stream at version; 1 refuses it, msg says why.
func appendReply(b []byte, status, version byte, msg string) []byte {
	if len(msg) > 255 {
		msg = msg[:255]
	}
	b = append(b, helloMagic[:]...)
	b = append(b, status, version, byte(len(msg)))
	return append(b, msg...)
}

func readReply(r io.Reader) (version byte, err error) {
	var fixed [7]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return 0, fmt.Errorf("read hello reply: %w", err)
	}
	if [4]byte(fixed[:4]) != helloMagic {
		return 0, ErrUnknownMagic
	}
	msg := make([]byte, fixed[6])
	if _, err := io.ReadFull(r, msg); err != nil {
		return 0, fmt.Errorf("read hello reply: %w", err)
	}
	switch fixed[4] {
	case helloOK:
		if fixed[5] < MinVersion || fixed[5] > MaxVersion {
			return 0, fmt.Errorf("%w: peer chose version %d", ErrVersion, fixed[5])
		}
		return fixed[5], nil
	case helloRefused:
		return 0, fmt.Errorf("%w: %s", ErrRefused, msg)
	}
	return 0, fmt.Errorf("%w: hello reply status %d", ErrMalformed, fixed[4])
}

// A frame is
//
//	length(4, big-endian) type(1) payload(length-1)
//
// length counts the type byte and the payload, so it is at least 1.

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload)+1 > MaxFrame {
		return fmt.Errorf("%w: %d bytes, cap %d", ErrFrameTooLarge, len(payload)+1, MaxFrame)
	}
	b := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)+1))
	b[4] = typ
	_, err := w.Write(append(b, payload...))
	return err
}

// frameChunk is the most ReadFrame allocates for a payload before its
// bytes arrive.
const frameChunk = 64 << 10

// ReadFrame reads one frame of at most limit bytes (type and payload). The
// length is checked against limit first; the payload's buffer then grows
// with the bytes that arrive (see readPayload), so that a peer that
// announces a large frame and sends little of it costs little. A clean
// end of stream before a frame is io.EOF.
func ReadFrame(r io.Reader, limit int) (typ byte, payload []byte, err error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:4]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[:4])
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: empty frame", ErrMalformed)
	}
	if uint64(n) > uint64(limit) {
		return 0, nil, fmt.Errorf("%w: %d bytes, cap %d", ErrFrameTooLarge, n, limit)
	}
	if _, err := io.ReadFull(r, head[4:]); err != nil {
		return 0, nil, unexpected(err)
	}
	if payload, err = readPayload(r, int(n-1)); err != nil {
		return 0, nil, unexpected(err)
	}
	return head[4], payload, nil
}

// readPayload reads n bytes into a buffer that starts at frameChunk at
// most and grows fourfold each time it fills: it never holds more than
// four times the bytes that arrived, plus frameChunk. (Doubling copied
// and cleared enough for 14 % more CPU in BenchmarkStreamFrames.)
func readPayload(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, frameChunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n, 4*len(buf))-len(buf))
		}
		k, err := io.ReadFull(r, buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// unexpected turns a clean EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
