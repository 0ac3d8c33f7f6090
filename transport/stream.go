package transport

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// Stream is a typed stream with a peer, after the hello. A read or a
// write fails once streamIdle passes with no progress on the stream in
// either direction, whatever deadline its user set (which applies too,
// the earlier first): a write blocked while its peer sends (a puller's
// wants while the documents come) is not cut.
type Stream struct {
	*quic.Stream
	Type    StreamType
	Peer    string   // the peer's device id, proven by its certificate
	Addr    net.Addr // the peer's address
	Version byte     // the negotiated protocol version

	conn    *quic.Conn    // join streams own their connection
	release func()        // gives back an accepted stream's slot (acquire)
	idle    time.Duration // streamIdle
	// The deadlines the user set, in Unix nanoseconds (0: none).
	readBy, writeBy atomic.Int64
	// Reads and writes in progress.
	reading, writing atomic.Int32
}

// Read reads what has arrived, waiting at most streamIdle for a byte.
func (s *Stream) Read(b []byte) (int, error) {
	s.reading.Add(1)
	defer s.reading.Add(-1)
	s.Stream.SetReadDeadline(s.deadline(&s.readBy))
	n, err := s.Stream.Read(b)
	if n > 0 && s.writing.Load() > 0 {
		s.Stream.SetWriteDeadline(s.deadline(&s.writeBy))
	}
	return n, err
}

// Write writes b, failing when streamIdle passes without writeChunk
// bytes going out or any arriving (the peer stopped reading).
func (s *Stream) Write(b []byte) (int, error) {
	s.writing.Add(1)
	defer s.writing.Add(-1)
	n := 0
	for n < len(b) {
		s.Stream.SetWriteDeadline(s.deadline(&s.writeBy))
		k, err := s.Stream.Write(b[n:min(len(b), n+writeChunk)])
		n += k
		if err != nil {
			return n, err
		}
		if s.reading.Load() > 0 {
			s.Stream.SetReadDeadline(s.deadline(&s.readBy))
		}
	}
	return n, nil
}

// SetReadDeadline sets a deadline for reads, a read in progress
// included; the zero time leaves only streamIdle.
func (s *Stream) SetReadDeadline(t time.Time) error {
	s.readBy.Store(unixNano(t))
	return s.Stream.SetReadDeadline(s.deadline(&s.readBy))
}

// SetWriteDeadline sets a deadline for writes, like SetReadDeadline.
func (s *Stream) SetWriteDeadline(t time.Time) error {
	s.writeBy.Store(unixNano(t))
	return s.Stream.SetWriteDeadline(s.deadline(&s.writeBy))
}

// SetDeadline sets both deadlines.
func (s *Stream) SetDeadline(t time.Time) error {
	return errors.Join(s.SetReadDeadline(t), s.SetWriteDeadline(t))
}

// deadline is the earlier of now plus streamIdle and the deadline by.
func (s *Stream) deadline(by *atomic.Int64) time.Time {
	idle := time.Now().Add(s.idle)
	if t := by.Load(); t != 0 && t < idle.UnixNano() {
		return time.Unix(0, t)
	}
	return idle
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Close ends the stream in both directions; a join stream also closes its
// connection.
func (s *Stream) Close() error {
	s.CancelRead(codeStreamDone)
	err := s.Stream.Close()
	if s.conn != nil {
		s.conn.CloseWithError(codeClosing, "")
	}
	s.done()
	return err
}

// CloseWrite ends the sending side; the peer reads io.EOF after the last
// frame.
func (s *Stream) CloseWrite() error { return s.Stream.Close() }

// Abort resets the stream in both directions, failing a read or write in
// progress.
func (s *Stream) Abort() {
	s.CancelRead(codeStreamDone)
	s.CancelWrite(codeStreamDone)
	s.done()
}

// done gives back the stream's slot, if it holds one.
func (s *Stream) done() {
	if s.release != nil {
		s.release()
	}
}

// PeerDevice is the device at the other end (Peer).
func (s *Stream) PeerDevice() string { return s.Peer }

// WriteFrame writes one frame to the stream.
func (s *Stream) WriteFrame(typ byte, payload []byte) error {
	return WriteFrame(s, typ, payload)
}

// ReadFrame reads one frame of at most limit bytes.
func (s *Stream) ReadFrame(limit int) (byte, []byte, error) { return ReadFrame(s, limit) }

var _ io.ReadWriteCloser = (*Stream)(nil)
