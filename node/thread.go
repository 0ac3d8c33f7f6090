package node

import (
	"fmt"
	"strings"

	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// A session's memories form a thread, in the order they were learned: an
// agent's session works on one thing at a time, so what was learned just
// before or after a memory is its context. The thread is derived from each
// memory's provenance (every node derives the same one) and kept as an
// ordered storage term, "thread" = session, separator, creation time.
const (
	fieldThread = "thread"
	threadSep   = "\x1f"
	// maxThreadSession bounds the session id a thread is kept for, well
	// inside a storage term.
	maxThreadSession = 256
)

// threadTerm returns the thread term of m; none when m has no session or
// is deleted.
func threadTerm(m *model.Memory) (storage.Term, bool) {
	s := m.Provenance.Session
	if s == "" || m.Status == model.StatusDeleted || strings.ContainsAny(s, "\x00"+threadSep) || len(s) > maxThreadSession {
		return storage.Term{}, false
	}
	return storage.Term{Field: fieldThread, Value: fmt.Sprintf("%s%s%019d", s, threadSep, m.Provenance.CreatedAt.UnixNano())}, true
}

// thread returns the ids of a session's memories in the order they were
// learned.
func (n *Node) thread(session string) ([]string, error) {
	var ids []string
	err := n.store.ScanPrefix(storage.KindMemory, fieldThread, session+threadSep, func(_ storage.Term, id string) error {
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("thread of session %s: %w", session, err)
	}
	return ids, nil
}
