package node

import (
	"context"
	"strings"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/wordsim"
	"github.com/memmesh/memmesh/sessions"
	"github.com/memmesh/memmesh/transcript"
)

// SessionsConfig makes a node read agents' transcripts.
type SessionsConfig = sessions.Config

// IngestSession stores what a transcript reader returned of one session
// (sessions.Sessions.IngestSession).
func (n *Node) IngestSession(ctx context.Context, s transcript.Session, ns string) (api.Session, error) {
	return n.sessions.IngestSession(ctx, s, ns)
}

// IngestTranscript reads what is new in the transcript at path, written
// by client, and ingests it (sessions.Sessions.IngestTranscript).
func (n *Node) IngestTranscript(ctx context.Context, client, path string) (api.IngestReport, error) {
	return n.sessions.IngestTranscript(ctx, client, path)
}

// IngestAll reads what is new in every transcript the readers find.
func (n *Node) IngestAll(ctx context.Context) ([]api.IngestReport, error) {
	return n.sessions.IngestAll(ctx)
}

// Ingest reads transcripts as req asks: now (Wait), or in the background.
func (n *Node) Ingest(ctx context.Context, req api.IngestRequest) ([]api.IngestReport, error) {
	return n.sessions.Ingest(ctx, req)
}

// Sessions lists the sessions of every machine, newest first.
func (n *Node) Sessions(ctx context.Context, req api.SessionsRequest) ([]api.Session, error) {
	return n.sessions.List(ctx, req)
}

// Session returns one session by its id or a unique prefix of it, with its
// turns when they are on this machine.
func (n *Node) Session(ctx context.Context, ref string) (api.SessionDetail, error) {
	return n.sessions.Session(ctx, ref)
}

// SearchSessions finds the turns of this machine's sessions that hold
// every word of the query.
func (n *Node) SearchSessions(ctx context.Context, req api.SessionSearchRequest) ([]api.SessionHit, error) {
	return n.sessions.SearchSessions(ctx, req)
}

// sessionsHost is the node as sessions see it: summaries and lessons are
// written through the service, with its rules.
type sessionsHost struct{ *Node }

var _ sessions.Memories = sessionsHost{}

// Update takes a stored id as its shown form, so that what it says of
// the memory names it as the service does.
func (h sessionsHost) Update(ctx context.Context, ref string, req api.UpdateRequest) (api.Memory, error) {
	if crdt.ValidID(ref) {
		ref = DisplayID(ref)
	}
	return h.Node.Update(ctx, ref, req)
}

func (h sessionsHost) Peek(id string) (api.Memory, error) {
	m, err := h.load(strings.TrimPrefix(id, IDPrefix))
	if err != nil {
		return api.Memory{}, err
	}
	return h.view(m), nil
}

func (h sessionsHost) Repeat(req api.RememberRequest, similarity float64) (string, error) {
	m, _, err := h.newMemory(req)
	if err != nil {
		return "", err
	}
	if dup, err := h.findDuplicate(m.Namespace, contentHash(m.Namespace, m.Content)); err != nil || dup != "" {
		return dup, err
	}
	similar, err := h.findSimilar(m.Namespace, wordsim.Words(m.Content))
	if err != nil {
		return "", err
	}
	for _, s := range similar {
		if s.Similarity >= similarity {
			return strings.TrimPrefix(s.ID, IDPrefix), nil
		}
	}
	return "", nil
}

func (h sessionsHost) NormalizeNamespace(ns string) (string, error) { return NormalizeNamespace(ns) }

func (h sessionsHost) DeviceName(device string) string { return h.deviceName(device) }
