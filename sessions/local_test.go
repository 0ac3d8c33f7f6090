package sessions

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transcript"
)

// listedMemories keeps the memories sessions write, and calls written
// with each one as soon as it is written.
type listedMemories struct {
	Memories // the rest is not called
	mems     []api.Memory
	written  func(api.Memory)
}

func (l *listedMemories) Remember(_ context.Context, req api.RememberRequest) (api.RememberResult, error) {
	id := fmt.Sprintf("m%d", len(l.mems))
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	m := api.Memory{ID: "m-" + id, Memory: model.Memory{ID: id, Namespace: req.Namespace, Title: req.Title, Content: req.Content, Kind: req.Kind,
		Provenance: model.Provenance{Device: "device", Agent: req.Agent, Session: req.Session, CreatedAt: at, UpdatedAt: at}}}
	l.mems = append(l.mems, m)
	l.written(m)
	return api.RememberResult{ID: m.ID}, nil
}

func (l *listedMemories) List(_ context.Context, req api.ListRequest) ([]api.Memory, error) {
	var out []api.Memory
	for _, m := range l.mems {
		if req.Kind == "" || m.Kind == req.Kind {
			out = append(out, m)
		}
	}
	return out, nil
}

func (l *listedMemories) Repeat(api.RememberRequest, float64) (string, error) { return "", nil }
func (l *listedMemories) NormalizeNamespace(ns string) (string, error)        { return ns, nil }
func (l *listedMemories) DeviceName(string) string                            { return "" }

// TestSessionLocalWhileRead: a session this machine reads is listed as
// held here from the moment its summary is written, never as held
// elsewhere while the read goes on (learning its lessons).
func TestSessionLocalWhileRead(t *testing.T) {
	store, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mem := &listedMemories{}
	ss := New(&Config{}, mem, store, "device", clock.System(), nil)
	var listed []api.Session
	mem.written = func(m api.Memory) {
		if m.Kind != api.KindSession {
			return
		}
		all, err := ss.List(context.Background(), api.SessionsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, all...)
	}
	at := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	_, err = ss.IngestSession(context.Background(), transcript.Session{Client: "claude-code", ID: "s1", Start: at, End: at.Add(time.Minute),
		Turns: []transcript.Turn{{Index: 0, Role: transcript.RoleUser, Text: "Fix the flaky retry test", Time: at}}}, "app")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ID != "s1" || !listed[0].Local {
		t.Fatalf("listed as the summary was written: %+v; want s1, held here", listed)
	}
}
