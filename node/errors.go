package node

import (
	"errors"
	"fmt"

	"github.com/memmesh/memmesh/storage"
)

// Errors returned by the service API. Callers test them with errors.Is; the
// wrapped message says what was wrong and what to do instead.
var (
	// ErrInvalid reports input that breaks a rule; nothing was changed.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound reports a reference that matches no memory.
	ErrNotFound = errors.New("not found")
	// ErrPurged reports a memory that was purged: erased on every machine.
	// Errors that match it match ErrNotFound too, and say when the memory
	// was purged and by which device.
	ErrPurged = fmt.Errorf("purged: %w", ErrNotFound)
	// ErrAmbiguous reports a short id that matches several memories.
	ErrAmbiguous = errors.New("ambiguous id")
	// ErrClosed reports a call on a node that has been closed.
	ErrClosed = errors.New("node closed")
	// ErrNoMesh reports a mesh operation on a node that runs without the
	// mesh.
	ErrNoMesh = errors.New("the mesh is not running on this node (the daemon runs with --no-mesh, or its UDP port was taken: see its log)")
	// ErrDiskFull reports a write refused because the disk of the home has
	// less free space than the node keeps in reserve (Config.MinFreeSpace);
	// nothing was changed, reads still work, and writes succeed again once
	// space is freed. The error says how much is free and needed.
	ErrDiskFull = storage.ErrDiskFull
)

// writeFailed wraps the error of a failed write with what was being
// written, except a full disk's: its message already says all the user
// needs (how much space, where, what to do).
func writeFailed(what string, err error) error {
	if errors.Is(err, ErrDiskFull) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}
