package node

import (
	"errors"
	"fmt"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/storage"
)

// writeFailed wraps the error of a failed write with what was being
// written, except a full disk's: its message already says all the user
// needs (how much space, where, what to do).
func writeFailed(what string, err error) error {
	if errors.Is(err, storage.ErrDiskFull) {
		return diskFull{err}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// storeError returns err, made to match api.ErrDiskFull when the store
// refused a write for a full disk.
func storeError(err error) error {
	if errors.Is(err, storage.ErrDiskFull) {
		return diskFull{err}
	}
	return err
}

// diskFull is the store's refusal of a write for a full disk as the
// service returns it: the same message, matching api.ErrDiskFull too.
type diskFull struct{ error }

func (e diskFull) Unwrap() []error { return []error{e.error, api.ErrDiskFull} }
