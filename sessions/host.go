package sessions

import (
	"context"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/storage"
)

// Memories is what sessions need of the node's memories: a session's
// summary and its lessons are memories, written and listed through the
// node's service with its rules. Ids are the service's ("m-" and the
// stored id) or, where said, the stored id alone.
type Memories interface {
	Remember(ctx context.Context, req api.RememberRequest) (api.RememberResult, error)
	// Update revises the memory ref names (its id, shown or stored).
	Update(ctx context.Context, ref string, req api.UpdateRequest) (api.Memory, error)
	List(ctx context.Context, req api.ListRequest) ([]api.Memory, error)
	// Peek returns the memory whose id (shown or stored) is id without
	// counting a read: a repeat, or a session's listing of its lessons,
	// is no recall. Its Memory.ID is the stored id.
	Peek(id string) (api.Memory, error)
	// Repeat returns the stored id of the memory that req repeats in its
	// namespace: the same text, or words at least similarity alike; ""
	// when none does.
	Repeat(req api.RememberRequest, similarity float64) (string, error)
	// NormalizeNamespace checks a namespace as the service does.
	NormalizeNamespace(ns string) (string, error)
	// DeviceName is the registry's name of a device, or "".
	DeviceName(device string) string
}

// Store is the local data (never replicated) sessions keep their turns,
// transcripts' cursors and lessons in.
type Store interface {
	GetLocal(key string) ([]byte, error)
	PutLocal(key string, value []byte) error
	PutLocalDurable(key string, value []byte) error
	ScanLocal(prefix string, fn func(key string, value []byte) error) error
	ScanLocalFrom(prefix, from string, fn func(key string, value []byte) error) error
	DeleteLocalPrefix(prefix string) error
}

var _ Store = (*storage.Store)(nil)
