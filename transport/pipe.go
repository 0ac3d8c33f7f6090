package transport

import (
	"errors"
	"io"
)

// FrameStream is what the sync protocol (Pull, ServePull, Push, ServePush,
// SendDocs) needs of a stream: frames both ways, a half-close, and an
// abort that a context can fire. *Stream is one over QUIC; Pipe makes an
// in-memory pair, so that the protocol runs without I/O in tests.
type FrameStream interface {
	// ReadFrame reads one frame of at most limit bytes (see the package
	// ReadFrame); a clean end of the peer's side before a frame is io.EOF.
	ReadFrame(limit int) (typ byte, payload []byte, err error)
	// WriteFrame writes one frame.
	WriteFrame(typ byte, payload []byte) error
	// CloseWrite ends the sending side: the peer reads io.EOF after the
	// last frame.
	CloseWrite() error
	// Close ends the stream in both directions.
	Close() error
	// Abort ends both directions at once, failing a ReadFrame or
	// WriteFrame in progress on either side. It may be called from any
	// goroutine, at any time, more than once.
	Abort()
	// PeerDevice is the device at the other end.
	PeerDevice() string
}

var (
	_ FrameStream = (*Stream)(nil)
	_ FrameStream = (*PipeEnd)(nil)
)

// ErrAborted is what a read or write of a PipeEnd returns once either end
// aborted the stream.
var ErrAborted = errors.New("transport: stream aborted")

// PipeEnd is one end of an in-memory stream made by Pipe. Like a QUIC
// stream, its sides close separately; unlike one, a write waits until the
// other end has read it all, which makes the protocol's ordering strict.
type PipeEnd struct {
	r    *io.PipeReader
	w    *io.PipeWriter
	peer string
}

// Pipe returns the two ends of an in-memory stream between the devices a
// and b: the first end is a's (its PeerDevice is b), the second b's.
func Pipe(a, b string) (*PipeEnd, *PipeEnd) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	return &PipeEnd{r: ar, w: aw, peer: b}, &PipeEnd{r: br, w: bw, peer: a}
}

// Read reads bytes the other end wrote.
func (p *PipeEnd) Read(b []byte) (int, error) { return p.r.Read(b) }

// Write writes raw bytes, frames or not, for the other end to read.
func (p *PipeEnd) Write(b []byte) (int, error) { return p.w.Write(b) }

// ReadFrame reads one frame of at most limit bytes.
func (p *PipeEnd) ReadFrame(limit int) (byte, []byte, error) { return ReadFrame(p.r, limit) }

// WriteFrame writes one frame.
func (p *PipeEnd) WriteFrame(typ byte, payload []byte) error { return WriteFrame(p.w, typ, payload) }

// CloseWrite ends this end's sending side.
func (p *PipeEnd) CloseWrite() error { return p.w.Close() }

// Close ends both directions: the other end's writes fail, its reads end
// with io.EOF.
func (p *PipeEnd) Close() error {
	p.r.CloseWithError(ErrClosed)
	return p.w.Close()
}

// Abort fails reads and writes in progress on both ends: the other end's
// with ErrAborted, this end's with io.ErrClosedPipe.
func (p *PipeEnd) Abort() {
	p.r.CloseWithError(ErrAborted)
	p.w.CloseWithError(ErrAborted)
}

// PeerDevice is the device at the other end.
func (p *PipeEnd) PeerDevice() string { return p.peer }
