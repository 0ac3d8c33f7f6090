package transport

import (
	"fmt"
	"slices"
	"time"
)

// What one peer may make an endpoint hold. A member's keys may be stolen,
// so every figure bounds what a member can cost, not only a stranger; the
// package doc explains each from what the mesh uses.
const (
	// streamIdle is how long a read or a write on a stream may wait
	// without progress: a peer that stops sending mid-frame or between
	// frames, or stops reading what it is sent, is dropped after it. It
	// moves with every read and every writeChunk written, in either
	// direction, so a long pull that keeps moving is never cut.
	streamIdle = 30 * time.Second
	// writeChunk is how much of a write must go out before its deadline
	// moves on.
	writeChunk = 256 << 10

	// maxConnsPerDevice bounds a device's mesh connections: a new one
	// beyond it closes the device's oldest.
	maxConnsPerDevice = 4
	// maxJoinConns bounds the join connections open at once, from any
	// devices (whose keys cost nothing to make).
	maxJoinConns = 8
	// maxStreamsPerConn is QUIC's bound on the streams a peer may have
	// open on one connection, its hellos included.
	maxStreamsPerConn = 16
	// Flow control: the bytes a peer may have in flight, unread, on one
	// stream and on one connection.
	maxStreamWindow = 4 << 20
	maxConnWindow   = 8 << 20
)

// streamCap is how many streams of a type one device may have open at
// once, over all its connections. A stream over it is refused after its
// hello, before any frame is read.
func streamCap(t StreamType) int {
	switch t {
	case StreamSync:
		// One pull at a time from a device, and the next may open
		// before the last one's server has closed.
		return 2
	case StreamPush:
		// One sender per peer, and a push it gave up on may still be
		// applied here when its retry arrives.
		return 2
	case StreamMembership:
		// memberlist's periodic push-pull, a join and a fallback probe
		// may overlap.
		return 4
	}
	return 1
}

// slot is a stream type of one device, counted against streamCap.
type slot struct {
	device string
	typ    StreamType
}

// acquire takes a slot for a stream of type typ from device, or refuses
// it when the device has streamCap(typ) open. release gives it back; it
// may be called more than once.
func (e *Endpoint) acquire(device string, typ StreamType) (release func(), err error) {
	k := slot{device, typ}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.open[k] >= streamCap(typ) {
		return nil, fmt.Errorf("%w: %d %v streams open, the most a device may have", ErrBusy, e.open[k], typ)
	}
	e.open[k]++
	released := false
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if !released {
			released = true
			if e.open[k]--; e.open[k] == 0 {
				delete(e.open, k)
			}
		}
	}, nil
}

// addConn counts a new mesh connection of its device and returns the
// device's oldest connection when that makes one too many. The caller
// holds e.mu.
func (e *Endpoint) addConn(pc *peerConn) (oldest *peerConn) {
	conns := append(e.byDevice[pc.device], pc)
	if len(conns) > maxConnsPerDevice {
		oldest, conns = conns[0], conns[1:]
	}
	e.byDevice[pc.device] = conns
	return oldest
}

// dropConn forgets a mesh connection that ended. The caller holds e.mu.
func (e *Endpoint) dropConn(pc *peerConn) {
	conns := slices.DeleteFunc(e.byDevice[pc.device], func(c *peerConn) bool { return c == pc })
	if len(conns) == 0 {
		delete(e.byDevice, pc.device)
	} else {
		e.byDevice[pc.device] = conns
	}
}
