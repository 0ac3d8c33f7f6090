package transport

import (
	"bytes"
	"compress/lzw"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
)

// memberlist (v0.7) allocates what a stream message announces before the
// bytes arrive: a push-pull's node count (up to a million node states,
// about 112 MB), its user state length and a reliable user message's
// (20 MiB each), the LZW-compressed form's output (40 MiB). So the
// transport reads the one message each side of a membership stream
// sends, checks every count and length in it against the bytes that
// follow, decompresses it itself, and gives memberlist only that.
//
// A message is a type byte, then MessagePack:
//
//	push-pull (6):  header {Nodes, UserStateLen, Join}, Nodes node states,
//	                then UserStateLen bytes of user state
//	ping (0), ack (2), error (13): one object
//	compressed (9): {Algo: 0, Buf: LZW (LSB, 8-bit literals) of a message
//	                of the types above}
//
// Other types (reliable user messages, labels, encryption) are not used
// by the mesh and are refused.
const (
	mlPing     = 0
	mlAck      = 2
	mlPushPull = 6
	mlCompress = 9
	mlError    = 13
)

// Caps on one memberlist message from a peer. A node state is at most
// about 700 bytes (a 52-character name, an address, at most 512 bytes of
// meta), so a mesh of a few dozen devices sends a few dozen KiB.
const (
	maxMembershipBytes = 256 << 10 // compressed or not
	maxMembershipNodes = 256
)

// errMembership is a memberlist message refused by the checks above.
var errMembership = fmt.Errorf("%w: memberlist message", ErrMalformed)

// readMembership reads the one memberlist message of a stream's side from
// r and returns it as memberlist may read it: uncompressed, whole, every
// count and length in it checked against the bytes that follow. It holds
// at most about twice the bytes that arrived.
func readMembership(r io.Reader) ([]byte, error) {
	p := &mpReader{r: r, max: maxMembershipBytes}
	typ, err := p.byte()
	if err != nil {
		return nil, err
	}
	if typ == mlCompress {
		plain, err := p.decompress()
		if err != nil {
			return nil, err
		}
		p = &mpReader{r: bytes.NewReader(plain), max: len(plain)}
		if typ, err = p.byte(); err != nil {
			return nil, err
		}
	}
	switch typ {
	case mlPushPull:
		err = p.pushPull()
	case mlPing, mlAck, mlError:
		err = p.skip(1)
	default:
		err = fmt.Errorf("%w: type %d", errMembership, typ)
	}
	if err != nil {
		return nil, err
	}
	return p.buf[:p.pos], nil
}

// mpReader walks MessagePack as its bytes arrive from r.
type mpReader struct {
	r   io.Reader
	buf []byte // what arrived; grows with it, doubling
	pos int    // what was walked
	max int    // the most buf may hold
}

// need makes n bytes after pos available, reading them as they arrive.
func (p *mpReader) need(n int) error {
	if n > p.max-p.pos {
		return fmt.Errorf("%w: over %d bytes", errMembership, p.max)
	}
	for len(p.buf) < p.pos+n {
		if len(p.buf) == cap(p.buf) {
			p.buf = slices.Grow(p.buf, min(p.max, max(2*len(p.buf), 512))-len(p.buf))
		}
		k, err := p.r.Read(p.buf[len(p.buf):min(cap(p.buf), p.max)])
		p.buf = p.buf[:len(p.buf)+k]
		if err != nil && len(p.buf) < p.pos+n {
			if len(p.buf) > 0 {
				err = unexpected(err) // io.EOF only before a message
			}
			return err
		}
	}
	return nil
}

// next returns the next n bytes.
func (p *mpReader) next(n int) ([]byte, error) {
	if err := p.need(n); err != nil {
		return nil, err
	}
	p.pos += n
	return p.buf[p.pos-n : p.pos], nil
}

func (p *mpReader) byte() (byte, error) {
	b, err := p.next(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// uintN reads a big-endian unsigned integer of n bytes (1, 2, 4 or 8).
func (p *mpReader) uintN(n int) (uint64, error) {
	b, err := p.next(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// skip walks n objects, checking every length and count against the
// bytes the cap leaves (an object takes a byte at least).
func (p *mpReader) skip(n uint64) error {
	for ; n > 0; n-- {
		if n > uint64(p.max-p.pos) {
			return fmt.Errorf("%w: %d objects in %d bytes", errMembership, n, p.max-p.pos)
		}
		c, err := p.byte()
		if err != nil {
			return err
		}
		more, size, err := p.object(c)
		if err != nil {
			return err
		}
		if _, err := p.next(size); err != nil {
			return err
		}
		n += more
	}
	return nil
}

// object reads what follows c up to an object's contents: how many
// objects it contains, or how many bytes.
func (p *mpReader) object(c byte) (objects uint64, size int, err error) {
	var v uint64
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return 0, 0, nil // fixint, nil, false, true
	case c&0xf0 == 0x80:
		return 2 * uint64(c&0x0f), 0, nil // fixmap
	case c&0xf0 == 0x90:
		return uint64(c & 0x0f), 0, nil // fixarray
	case c&0xe0 == 0xa0:
		return 0, int(c & 0x1f), nil // fixstr
	case c >= 0xcc && c <= 0xd3: // uint and int, 8 to 64 bits
		return 0, 1 << ((c - 0xcc) % 4), nil
	case c >= 0xd4 && c <= 0xd8: // fixext: a type byte and 1 to 16 bytes
		return 0, 1 + 1<<(c-0xd4), nil
	case c == 0xca:
		return 0, 4, nil
	case c == 0xcb:
		return 0, 8, nil
	case c == 0xc4 || c == 0xd9: // bin8, str8
		v, err = p.uintN(1)
	case c == 0xc5 || c == 0xda:
		v, err = p.uintN(2)
	case c == 0xc6 || c == 0xdb:
		v, err = p.uintN(4)
	case c >= 0xc7 && c <= 0xc9: // ext: length, type byte, data
		v, err = p.uintN(1 << (c - 0xc7))
		v++
	case c == 0xdc || c == 0xdd:
		v, err = p.uintN(2 << (c - 0xdc))
		return v, 0, err
	case c == 0xde || c == 0xdf:
		v, err = p.uintN(2 << (c - 0xde))
		return 2 * v, 0, err
	default: // 0xc1, never used
		return 0, 0, fmt.Errorf("%w: byte %#x", errMembership, c)
	}
	if err == nil && v > uint64(p.max-p.pos) {
		err = fmt.Errorf("%w: %d bytes announced, over %d", errMembership, v, p.max)
	}
	return 0, int(v), err
}

// mapLen reads a map's header.
func (p *mpReader) mapLen() (int, error) {
	c, err := p.byte()
	if err != nil {
		return 0, err
	}
	n, _, err := p.object(c)
	if err == nil && (c&0xf0 != 0x80 && c != 0xde && c != 0xdf) {
		err = fmt.Errorf("%w: byte %#x, want a map", errMembership, c)
	}
	return int(n / 2), err
}

// raw reads a string or a byte string.
func (p *mpReader) raw() ([]byte, error) {
	c, err := p.byte()
	if err != nil {
		return nil, err
	}
	switch {
	case c&0xe0 == 0xa0, c >= 0xc4 && c <= 0xc6, c >= 0xd9 && c <= 0xdb:
	default:
		return nil, fmt.Errorf("%w: byte %#x, want a string", errMembership, c)
	}
	_, size, err := p.object(c)
	if err != nil {
		return nil, err
	}
	return p.next(size)
}

// uint reads a non-negative integer, however encoded.
func (p *mpReader) uint() (uint64, error) {
	c, err := p.byte()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= 0x7f:
		return uint64(c), nil
	case c >= 0xcc && c <= 0xcf:
		return p.uintN(1 << (c - 0xcc))
	case c >= 0xd0 && c <= 0xd3:
		n := 1 << (c - 0xd0)
		v, err := p.uintN(n)
		if err == nil && v>>(8*n-1) != 0 {
			err = fmt.Errorf("%w: a negative count", errMembership)
		}
		return v, err
	}
	return 0, fmt.Errorf("%w: byte %#x, want an integer", errMembership, c)
}

// fields reads a map of the named fields, each at most once, calling
// read for each; any other key is refused, so that what memberlist
// decodes is what was checked.
func (p *mpReader) fields(read func(key string) error) error {
	n, err := p.mapLen()
	if err != nil {
		return err
	}
	var seen []string
	for range n {
		key, err := p.raw()
		if err != nil {
			return err
		}
		if slices.Contains(seen, string(key)) {
			return fmt.Errorf("%w: field %q twice", errMembership, key)
		}
		seen = append(seen, string(key))
		if err := read(string(key)); err != nil {
			return err
		}
	}
	return nil
}

// pushPull walks a push-pull's header, its node states and its user
// state.
func (p *mpReader) pushPull() error {
	var nodes, userState uint64
	err := p.fields(func(key string) (err error) {
		switch key {
		case "Nodes":
			nodes, err = p.uint()
		case "UserStateLen":
			userState, err = p.uint()
		case "Join":
			var c byte
			if c, err = p.byte(); err == nil && c != 0xc2 && c != 0xc3 {
				err = fmt.Errorf("%w: Join is byte %#x", errMembership, c)
			}
		default:
			err = fmt.Errorf("%w: push-pull field %q", errMembership, key)
		}
		return err
	})
	if err != nil {
		return err
	}
	if nodes > maxMembershipNodes {
		return fmt.Errorf("%w: %d node states, over %d", errMembership, nodes, maxMembershipNodes)
	}
	if err := p.skip(nodes); err != nil {
		return err
	}
	if userState > uint64(p.max-p.pos) {
		return fmt.Errorf("%w: %d bytes of user state, over %d", errMembership, userState, p.max)
	}
	_, err = p.next(int(userState))
	return err
}

// decompress reads a compressed message's envelope and returns the
// message it holds, of at most maxMembershipBytes.
func (p *mpReader) decompress() ([]byte, error) {
	var algo uint64
	var buf []byte
	err := p.fields(func(key string) (err error) {
		switch key {
		case "Algo":
			algo, err = p.uint()
		case "Buf":
			buf, err = p.raw()
		default:
			err = fmt.Errorf("%w: compressed message field %q", errMembership, key)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if algo != 0 {
		return nil, fmt.Errorf("%w: compression %d", errMembership, algo)
	}
	r := lzw.NewReader(bytes.NewReader(buf), lzw.LSB, 8)
	defer r.Close()
	plain, err := io.ReadAll(io.LimitReader(r, maxMembershipBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errMembership, err)
	}
	if len(plain) > maxMembershipBytes {
		return nil, fmt.Errorf("%w: decompresses to over %d bytes", errMembership, maxMembershipBytes)
	}
	if len(plain) > 0 && plain[0] == mlCompress {
		return nil, fmt.Errorf("%w: compressed twice", errMembership)
	}
	return plain, nil
}

// checkedConn is a membership stream as memberlist reads it: the peer's
// one message, checked (readMembership), then io.EOF.
type checkedConn struct {
	net.Conn
	refused func(error) // told of a message the checks refused
	in      *bytes.Reader
	err     error
}

func (c *checkedConn) Read(b []byte) (int, error) {
	if c.in == nil && c.err == nil {
		msg, err := readMembership(c.Conn)
		c.in, c.err = bytes.NewReader(msg), err
		if errors.Is(err, errMembership) && c.refused != nil {
			c.refused(err)
		}
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.in.Read(b)
}
