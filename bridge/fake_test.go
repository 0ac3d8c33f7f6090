package bridge

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/model"
)

// store is a namespace in memory standing for the mesh in unit tests: the
// bridges of two "machines" share one. Revisions keep their parents, so
// fork makes a sync conflict as two machines editing at once do.
type store struct {
	mu   sync.Mutex
	n    int
	mems map[string]*api.Memory
}

var _ Service = (*store)(nil)

func newStore() *store { return &store{mems: map[string]*api.Memory{}} }

func (s *store) List(_ context.Context, req api.ListRequest) ([]api.Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []api.Memory
	for _, m := range s.mems {
		if m.Namespace == req.Namespace && slices.Contains(req.Statuses, m.Status) && (len(req.Tags) == 0 || slices.Contains(m.Tags, req.Tags[0])) {
			out = append(out, *m)
		}
	}
	return out, nil
}

func (s *store) Remember(_ context.Context, req api.RememberRequest) (api.RememberResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	content, _ := secrets.Scrub(req.Content)
	for _, m := range s.mems {
		if m.Namespace == req.Namespace && m.Content == content {
			return api.RememberResult{ID: m.ID, DuplicateOf: m.ID}, nil
		}
	}
	s.n++
	id := fmt.Sprintf("m-%026d", s.n)
	m := &api.Memory{ID: id}
	m.Namespace, m.Content, m.Tags, m.Tier, m.Status = req.Namespace, content, req.Tags, req.Tier, model.StatusActive
	m.Provenance = model.Provenance{Agent: req.Agent, Session: req.Session, UpdatedAt: time.Now()}
	m.Revisions = []model.Revision{{ID: id + "-1", Text: content}}
	s.mems[id] = m
	return api.RememberResult{ID: id}, nil
}

func (s *store) Update(_ context.Context, ref string, req api.UpdateRequest) (api.Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.mems[ref]
	if !ok {
		return api.Memory{}, api.ErrNotFound
	}
	if m.Status == model.StatusDeleted { // as the node: restore it first
		return api.Memory{}, api.ErrNotFound
	}
	if req.Content != nil {
		content, _ := secrets.Scrub(*req.Content)
		last := m.Revisions[len(m.Revisions)-1]
		rev := model.Revision{ID: fmt.Sprintf("%s-%d", m.ID, len(m.Revisions)+1), Text: content, Parent: last.ID}
		m.Content, m.Conflict = content, nil // a new revision resolves every leaf
		if req.Base != "" && req.Base != last.ID && len(m.Conflict) == 0 {
			// made from an older revision: a leaf beside the newer one
			rev.Parent = req.Base
			m.Conflict = []model.Revision{rev, last}
		}
		m.Revisions = append(m.Revisions, rev)
	}
	if req.Status != nil {
		m.Status = *req.Status
	}
	for _, tag := range req.AddTags {
		if !slices.Contains(m.Tags, tag) {
			m.Tags = append(m.Tags, tag)
		}
	}
	m.Provenance.UpdatedAt = time.Now()
	return *m, nil
}

// fork makes two concurrent versions of a memory, as when two machines
// edit it before they meet: newer wins as the content, both are leaves.
func (s *store) fork(id, older, newer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mems[id]
	base := m.Revisions[len(m.Revisions)-1].ID
	a := model.Revision{ID: id + "-a", Text: older, Parent: base}
	b := model.Revision{ID: id + "-b", Text: newer, Parent: base}
	m.Revisions = append(m.Revisions, a, b)
	m.Content, m.Conflict = newer, []model.Revision{a, b}
}

func (s *store) byContent(t *testing.T, content string) api.Memory {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.byContentLocked(content)
	if id == "" {
		t.Fatalf("no memory holds %q", content)
	}
	return *s.mems[id]
}

func (s *store) byContentLocked(content string) string {
	for id, m := range s.mems {
		if m.Content == content {
			return id
		}
	}
	return ""
}

// machine is one machine's Claude Code home and bridge state.
type machine struct {
	home    string // stands for ~
	project string // the project's working tree
	bridge  *Bridge
}

// newMachine makes a home with a Claude Code project whose working tree
// (a git repository at project, under the home) has remote as its
// origin, and a bridge that maps the remote to its namespace.
func newMachine(t *testing.T, project, remote string) *machine {
	t.Helper()
	home := t.TempDir()
	m := &machine{home: home, project: filepath.Join(home, project)}
	gitInit(t, m.project, remote)
	dir := filepath.Join(home, ".claude", "projects", EncodePath(m.project))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(`{"type":"user","sessionId":"s1","cwd":%q,"message":{"role":"user","content":"hi"}}`+"\n", m.project)
	if err := os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(`{"type":"summary","summary":"x"}`+"\n"+line), 0o644); err != nil {
		t.Fatal(err)
	}
	m.bridge = New(Config{ClaudeHome: filepath.Join(home, ".claude"), StateDir: filepath.Join(home, ".memmesh", "bridge"),
		Namespace: func(path, remote string) string { return "app" }})
	return m
}

func gitInit(t *testing.T, dir, remote string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := [][]string{{"init", "-q"}}
	if remote != "" {
		args = append(args, []string{"remote", "add", "origin", remote})
	}
	for _, a := range args {
		if out, err := exec.Command("git", append([]string{"-C", dir}, a...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", a, err, out)
		}
	}
}

func (m *machine) memDir() string {
	return filepath.Join(m.home, ".claude", "projects", EncodePath(m.project), "memory")
}

func (m *machine) write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.MkdirAll(m.memDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.memDir(), name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *machine) read(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(m.memDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (m *machine) run(t *testing.T, svc Service) ProjectReport {
	t.Helper()
	reps, err := m.bridge.Run(context.Background(), svc, Options{})
	if err != nil {
		t.Fatalf("bridge pass: %v", err)
	}
	if len(reps) != 1 {
		t.Fatalf("bridge pass: %d projects, want 1: %+v", len(reps), reps)
	}
	return reps[0]
}

func (s *store) has(content string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byContentLocked(content) != ""
}
