package crdt

import "errors"

// Errors returned by this package. They are wrapped with details; test for
// them with errors.Is.
var (
	// ErrInvalidID: a memory, revision or edge id is not 26 lowercase
	// base32 characters, or an edge id does not match its endpoints.
	ErrInvalidID = errors.New("crdt: invalid id")
	// ErrInvalidActor: an actor id is not a non-empty, even-length hex string.
	ErrInvalidActor = errors.New("crdt: invalid actor id")
	// ErrInvalidStatus: a status is unknown, or compacted_into does not fit it.
	ErrInvalidStatus = errors.New("crdt: invalid status")
	// ErrInvalidTier: a trust tier is unknown.
	ErrInvalidTier = errors.New("crdt: invalid tier")
	// ErrInvalidNumber: a confidence or strength is NaN or outside [0, 1].
	ErrInvalidNumber = errors.New("crdt: number must be in [0, 1]")
	// ErrInvalidString: a string is not valid UTF-8, or a set element or
	// edge endpoint is empty or contains a NUL byte.
	ErrInvalidString = errors.New("crdt: invalid string")
	// ErrUnknownRevision: an edit names a base revision the memory lacks.
	ErrUnknownRevision = errors.New("crdt: unknown revision")
	// ErrInvalidValidity: an edge's valid_to is before its valid_from.
	ErrInvalidValidity = errors.New("crdt: valid_to before valid_from")

	// ErrEmpty: Load was given no bytes.
	ErrEmpty = errors.New("crdt: empty document")
	// ErrTooLarge: Load was given more than MaxDocSize bytes.
	ErrTooLarge = errors.New("crdt: document too large")
	// ErrNotAutomerge: the bytes do not start with the Automerge magic.
	ErrNotAutomerge = errors.New("crdt: not an automerge document")
	// ErrCorrupt: Automerge could not load the bytes.
	ErrCorrupt = errors.New("crdt: corrupt document")
	// ErrWrongType: the document is not of the expected type (memory or edge).
	ErrWrongType = errors.New("crdt: wrong document type")
	// ErrSchemaVersion: the document's schema version is missing or newer
	// than this package understands.
	ErrSchemaVersion = errors.New("crdt: unsupported schema version")
	// ErrMalformed: a field of the document has the wrong type or an
	// impossible value.
	ErrMalformed = errors.New("crdt: malformed document")
	// ErrIDMismatch: Merge was given a document with a different id.
	ErrIDMismatch = errors.New("crdt: merging documents with different ids")
	// ErrUnmergeable: Automerge refused to merge two histories (one
	// actor's sequence number used for two different changes).
	ErrUnmergeable = errors.New("crdt: histories cannot be merged")
	// ErrClosed: the document was used after Close.
	ErrClosed = errors.New("crdt: document closed")
)
