package brief

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// testStore holds the records a brief's index is built from, and the
// brief's local data.
type testStore struct {
	recs  []storage.Record
	local map[string][]byte
}

func (s *testStore) DurableSeq() uint64 { return 0 }

func (s *testStore) All(kind storage.Kind, fn func(storage.Record) error) error {
	for _, r := range s.recs {
		if r.Kind == kind {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *testStore) Changes(after uint64, limit int, fn func(storage.Record) error) (uint64, error) {
	return after, nil
}

func (s *testStore) GetLocal(key string) ([]byte, error) {
	if v, ok := s.local[key]; ok {
		return v, nil
	}
	return nil, storage.ErrNotFound
}

func (s *testStore) PutLocal(key string, value []byte) error {
	s.local[key] = value
	return nil
}

// testHost serves the memories of a testStore; gone ones read as not
// found, as a memory removed after it was ranked does.
type testHost struct {
	mems map[string]model.Memory
	gone map[string]bool
}

func (h *testHost) Memory(id string) (model.Memory, error) {
	if m, ok := h.mems[id]; ok && !h.gone[id] {
		return m, nil
	}
	return model.Memory{}, fmt.Errorf("memory %s: %w", id, storage.ErrNotFound)
}
func (h *testHost) ShortID(id string) string     { return api.IDPrefix + id[:8] }
func (h *testHost) Reads(string) int             { return 0 }
func (h *testHost) StaleDays(string) int         { return 0 }
func (h *testHost) Terms(text string) []string   { return strings.Fields(strings.ToLower(text)) }
func (h *testHost) CheckQuery(text string) error { return nil }
func (h *testHost) Search(context.Context, api.SearchRequest) (api.SearchResult, error) {
	return api.SearchResult{}, nil
}

// project builds a Maker over memories and edges, as of now, on device
// "here".
type project struct {
	t     *testing.T
	now   time.Time
	store *testStore
	host  *testHost
}

func newProject(t *testing.T, now time.Time) *project {
	return &project{t: t, now: now, store: &testStore{local: map[string][]byte{}}, host: &testHost{mems: map[string]model.Memory{}, gone: map[string]bool{}}}
}

// memory adds a memory of namespace "p" updated ago before now; its id
// starts with name.
func (p *project) memory(name, kind string, tier model.Tier, device string, ago time.Duration) string {
	id := (name + strings.Repeat("z", 26))[:26]
	m := model.Memory{ID: id, Namespace: "p", Content: "The memory called " + name + " says what it says.", Kind: kind, Tier: tier, Confidence: 0.8,
		Status: model.StatusActive, Provenance: model.Provenance{Device: device, CreatedAt: p.now.Add(-ago), UpdatedAt: p.now.Add(-ago)}}
	p.host.mems[id] = m
	p.record(storage.KindMemory, id, m)
	return id
}

// edge links memory from to memory to.
func (p *project) edge(from, rel, to, origin string) {
	p.link(from, rel, api.IDPrefix+to, origin)
}

// touches links memory id to a file.
func (p *project) touches(id string) {
	p.link(id, "touches", "file:deploy/alerts.yaml", "")
}

func (p *project) link(from, rel, to, origin string) {
	e := model.Edge{ID: from + rel + to, From: api.IDPrefix + from, Rel: rel, To: to, Origin: origin, Strength: 1, CreatedAt: p.now}
	p.record(storage.KindEdge, e.ID, e)
}

func (p *project) record(kind storage.Kind, id string, v any) {
	value, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	p.store.recs = append(p.store.recs, storage.Record{Kind: kind, ID: id, Value: value})
}

func (p *project) maker() *Maker {
	return New(Config{Store: p.store, Host: p.host, Device: "here", HalfLife: 180 * 24 * time.Hour, Now: func() time.Time { return p.now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func ids(items []api.BriefItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID[len(api.IDPrefix):][:4]
	}
	return out
}

// TestBriefSectionsAndOrder: conflicts come first, then what a peer
// wrote since this machine last asked, recent decisions, open tasks, and
// the others with human decisions and conventions before notes; a
// superseded memory is a stale alert that names its successor; near
// duplicates show once, counting the others; and once asked, a peer's
// memory is no longer news.
func TestBriefSectionsAndOrder(t *testing.T) {
	p := newProject(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	day := 24 * time.Hour
	note := p.memory("note", "note", model.TierHuman, "here", 2*day)
	conv := p.memory("conv", "convention", model.TierAgent, "here", 20*day)
	hdec := p.memory("hdec", "decision", model.TierHuman, "here", 40*day)
	recent := p.memory("rdec", "decision", model.TierAgent, "here", day)
	task := p.memory("task", "task", model.TierAgent, "here", 3*day)
	peer := p.memory("peer", "note", model.TierAgent, "there", time.Hour)
	old := p.memory("oldd", "decision", model.TierAgent, "here", 50*day)
	newer := p.memory("newd", "decision", model.TierAgent, "here", 45*day)
	p.edge(newer, "supersedes", old, "")
	left := p.memory("left", "note", model.TierAgent, "here", 5*day)
	right := p.memory("righ", "note", model.TierAgent, "here", 5*day)
	p.edge(left, "contradicts", right, "")
	dup := p.memory("dupa", "note", model.TierAgent, "here", 4*day)
	for _, d := range []string{"dupb", "dupc"} {
		p.edge(dup, "related_to", p.memory(d, "note", model.TierAgent, "here", 4*day), api.OriginAutoLink)
	}
	// Every memory but the contradiction's is linked, so that none is an
	// orphan.
	for _, id := range []string{note, conv, hdec, recent, task, peer} {
		p.touches(id)
	}
	mk := p.maker()
	b, err := mk.Brief(context.Background(), "p", api.ContextRequest{Namespace: "p"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(section string, got []api.BriefItem, want ...string) {
		t.Helper()
		if g := ids(got); strings.Join(g, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %v, want %v", section, g, want)
		}
	}
	check("conflicts", b.Conflicts, "left", "righ")
	check("from peers", b.FromPeers, "peer")
	check("decisions", b.Decisions, "rdec")
	check("tasks", b.Tasks, "task")
	check("active", b.Active, "hdec", "conv", "note", "newd", "dupa")
	check("stale alerts", b.StaleAlerts, "oldd")
	if len(b.StaleAlerts) == 1 && b.StaleAlerts[0].Reason != "superseded by "+api.IDPrefix+newer[:8] {
		t.Errorf("stale alert's reason %q", b.StaleAlerts[0].Reason)
	}
	if len(b.Active) == 5 && b.Active[4].Similar != 2 {
		t.Errorf("near duplicates: %+v, want one standing for 2 others", b.Active[4])
	}
	if b.Tokens != tokens.Count(b.Text()) || b.Tokens > b.Budget {
		t.Errorf("brief says %d tokens of %d; its text counts %d", b.Tokens, b.Budget, tokens.Count(b.Text()))
	}
	if b, err = mk.Brief(context.Background(), "p", api.ContextRequest{Namespace: "p"}); err != nil || len(b.FromPeers) != 0 {
		t.Errorf("asked again: from peers %v, %v; want none", ids(b.FromPeers), err)
	}
}

// TestBriefFillsItsBudget: in both formats a brief holds its budget by
// the tokenizer's count of its text and says that count; a memory gone
// since it was ranked is left out, and the others still shown. (That the
// parts it sums as it fills come within 2 % of the whole is held by
// node's TestBriefTokensAreCounted, on a generated project.)
func TestBriefFillsItsBudget(t *testing.T) {
	p := newProject(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	var all []string
	for i := range 300 {
		id := p.memory(fmt.Sprintf("m%03d", i), "note", model.TierAgent, "here", time.Duration(i)*time.Hour)
		p.touches(id)
		all = append(all, id)
	}
	p.host.gone[all[0]] = true
	mk := p.maker()
	for _, format := range []string{api.FormatMarkdown, api.FormatJSON} {
		for _, budget := range []int{100, 300, 2000, 8000} {
			b, err := mk.Brief(context.Background(), "p", api.ContextRequest{Namespace: "p", Budget: budget, Format: format})
			if err != nil {
				t.Fatal(err)
			}
			whole := tokens.Count(b.Text())
			if whole > budget || b.Tokens != whole {
				t.Errorf("%s, %d tokens: the brief says %d, its text counts %d", format, budget, b.Tokens, whole)
			}
			if budget >= 300 && len(b.Active) == 0 {
				t.Errorf("%s, %d tokens: nothing shown", format, budget)
			}
			for _, it := range b.Active {
				if it.ID == api.IDPrefix+all[0] {
					t.Errorf("%s, %d tokens: shows a memory that is gone", format, budget)
				}
			}
		}
	}
}

// TestBriefRefusesBadRequests: a format or budget out of range is an
// invalid request, and the brief's time is not recorded.
func TestBriefRefusesBadRequests(t *testing.T) {
	p := newProject(t, time.Now())
	p.memory("note", "note", model.TierAgent, "here", time.Hour)
	mk := p.maker()
	for _, req := range []api.ContextRequest{{Format: "html"}, {Budget: 99}, {Budget: maxBudget + 1}} {
		if _, err := mk.Brief(context.Background(), "p", req); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("%+v: %v, want an invalid request", req, err)
		}
	}
	if len(p.store.local) != 0 {
		t.Errorf("a refused brief wrote %v", p.store.local)
	}
}

// TestAimQuery: the search made of a prompt holds its words without
// quotes or overlong words, within the search's limits.
func TestAimQuery(t *testing.T) {
	if got := aimQuery(`switch to "lib/pq" ` + strings.Repeat("h", 65) + " now"); got != "switch to lib/pq now" {
		t.Errorf("aimQuery = %q", got)
	}
	long := aimQuery(strings.Repeat("word ", 1000))
	if n := len(strings.Fields(long)); n != 64 {
		t.Errorf("a long prompt gives %d words", n)
	}
	wide := aimQuery(strings.Repeat(strings.Repeat("w", 64)+" ", 100))
	if len(wide) > 4096 {
		t.Errorf("a wide prompt gives %d bytes", len(wide))
	}
}

// TestTitleRepeats: a title that the content starts with, or that was
// cut from it, is left out; another is kept.
func TestTitleRepeats(t *testing.T) {
	for _, tc := range []struct {
		title, content string
		want           bool
	}{
		{"", "anything", true},
		{"Release tags", "Tag from main after the smoke tests", false},
		{"Releases are tagged…", "# Releases are tagged from main", true},
		{"Releases are tagged", "  - Releases are tagged from main", true},
	} {
		if got := titleRepeats(tc.title, tc.content); got != tc.want {
			t.Errorf("titleRepeats(%q, %q) = %v", tc.title, tc.content, got)
		}
	}
}
