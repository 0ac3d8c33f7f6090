package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/web"
)

// claudeMachine is a daemon of the bridge tests with a Claude Code
// project: a git working tree at its own path under the home (which is
// HOME too), with the shared origin URL, and its folder under
// ~/.claude/projects with a transcript naming it.
type claudeMachine struct {
	home, listen, project string
	client                *web.Client
	serve                 *exec.Cmd
}

// startClaudeMachine starts `memmesh serve` on a new home with the mesh on
// 127.0.0.<host>, config.toml holding config, and a project at rel.
func startClaudeMachine(tb testing.TB, host int, rel, config string) *claudeMachine {
	tb.Helper()
	home, err := os.MkdirTemp("", "mmh")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(home) })
	ip := fmt.Sprintf("127.0.0.%d", host)
	conn, err := net.ListenPacket("udp", ip+":0")
	if err != nil {
		tb.Skipf("cannot listen on %s: %v", ip, err)
	}
	m := &claudeMachine{home: home, listen: conn.LocalAddr().String(), project: filepath.Join(home, rel)}
	conn.Close()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		tb.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", m.project}, {"-C", m.project, "remote", "add", "origin", "git@github.com:acme/shop.git"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	dir := filepath.Join(home, ".claude", "projects", regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(m.project, "-"))
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		tb.Fatal(err)
	}
	line := fmt.Sprintf(`{"type":"user","sessionId":"s1","cwd":%q,"message":{"role":"user","content":"hello"}}`+"\n", m.project)
	if err := os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(line), 0o644); err != nil {
		tb.Fatal(err)
	}
	m.start(tb, "--listen", m.listen)
	tb.Cleanup(func() { m.stop(tb) })
	return m
}

func (m *claudeMachine) start(tb testing.TB, flags ...string) {
	tb.Helper()
	m.serve, m.client = startServe(tb, m.home, append([]string{"--http", ""}, flags...)...)
}

func (m *claudeMachine) stop(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m.client.Shutdown(ctx)
	m.serve.Wait()
}

func (m *claudeMachine) memoryFile(name string) string {
	return filepath.Join(m.home, ".claude", "projects", regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(m.project, "-"), "memory", name)
}

func (m *claudeMachine) read(tb testing.TB, name string) string {
	data, err := os.ReadFile(m.memoryFile(name))
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return string(data)
}

func (m *claudeMachine) write(tb testing.TB, name, text string) {
	tb.Helper()
	if err := os.WriteFile(m.memoryFile(name), []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// joinPair joins b to a's mesh.
func joinPair(tb testing.TB, a, b *claudeMachine) {
	tb.Helper()
	ctx := context.Background()
	inv, err := a.client.Invite(ctx, 10*time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := b.client.Join(ctx, inv.Token); err != nil {
		tb.Fatal(err)
	}
}

// bridgePass runs `memmesh bridge claude-code` on m.
func (m *claudeMachine) bridgePass(t *testing.T) string {
	t.Helper()
	return ok(t, m.home, "bridge", "claude-code", "--format", "human")
}

// TestBridgeTwoMachines: two machines, the project at different paths,
// one remote. An entry written on A reaches B's MEMORY.md; a hand edit on
// B reaches A; an entry edited on both while apart is a sync conflict that
// doctor lists, and both texts are in both files.
func TestBridgeTwoMachines(t *testing.T) {
	a := startClaudeMachine(t, 1, "work/shop", "")
	b := startClaudeMachine(t, 2, "src/github/acme-shop", "")
	joinPair(t, a, b)

	out := ok(t, a.home, "bridge", "claude-code", "--list", "--format", "human")
	if !strings.Contains(out, a.project) || !strings.Contains(out, "github.com/acme/shop") || !strings.Contains(out, "acme-shop") {
		t.Fatalf("bridge --list on A:\n%s", out)
	}
	a.write(t, "MEMORY.md", "# Memory\n\n## Build\n- Use pnpm, not npm\n- The API tests need Redis on 6379\n")
	b.write(t, "MEMORY.md", "# Notes\n\nThe staging host is slow on Mondays.\n")
	if out := a.bridgePass(t); !strings.Contains(out, "2 new") {
		t.Fatalf("first pass on A:\n%s", out)
	}
	eventually(t, 30*time.Second, "B's MEMORY.md does not get A's entries", func() bool {
		b.bridgePass(t)
		got := b.read(t, "MEMORY.md")
		return strings.Contains(got, "- Use pnpm, not npm <!-- mm:m-") && strings.Contains(got, "Redis on 6379")
	})
	if got := b.read(t, "MEMORY.md"); !strings.HasPrefix(got, "# Notes\n\nThe staging host is slow on Mondays.\n") {
		t.Fatalf("B's own text changed:\n%s", got)
	}

	// A hand edit on B reaches A's own line.
	b.write(t, "MEMORY.md", strings.Replace(b.read(t, "MEMORY.md"), "Use pnpm, not npm", "Use pnpm 9, never npm", 1))
	if out := b.bridgePass(t); !strings.Contains(out, "1 edited") {
		t.Fatalf("pass on B after a hand edit:\n%s", out)
	}
	eventually(t, 30*time.Second, "B's edit does not reach A's file", func() bool {
		a.bridgePass(t)
		return strings.HasPrefix(a.read(t, "MEMORY.md"), "# Memory\n\n## Build\n- Use pnpm 9, never npm\n- The API tests need Redis on 6379\n")
	})
	if got := a.read(t, "MEMORY.md"); !strings.Contains(got, "The staging host is slow on Mondays. <!-- mm:m-") {
		t.Fatalf("B's own entry did not reach A:\n%s", got)
	}

	// Apart: B runs without the mesh; both edit the Redis entry.
	b.stop(t)
	b.start(t, "--no-mesh")
	a.write(t, "MEMORY.md", strings.Replace(a.read(t, "MEMORY.md"), "Redis on 6379", "Redis 7 on 6379", 1))
	a.bridgePass(t)
	b.write(t, "MEMORY.md", strings.Replace(b.read(t, "MEMORY.md"), "Redis on 6379", "Redis on port 6380", 1))
	b.bridgePass(t)
	b.stop(t)
	b.start(t, "--listen", b.listen)
	eventually(t, 60*time.Second, "doctor on A does not list the conflict", func() bool {
		var rep struct {
			Conflicts []string `json:"conflicts"`
		}
		okJSON(t, a.home, &rep, "doctor", "--json")
		return len(rep.Conflicts) == 1
	})
	if out := ok(t, a.home, "doctor", "--format", "human"); !strings.Contains(out, "memmesh update") {
		t.Errorf("doctor does not say how to settle a conflict:\n%s", out)
	}
	eventually(t, 30*time.Second, "both files do not show both versions", func() bool {
		for _, m := range []*claudeMachine{a, b} {
			m.bridgePass(t)
			got := m.read(t, "MEMORY.md")
			if !strings.Contains(got, "Redis 7 on 6379") || !strings.Contains(got, "Redis on port 6380") || !strings.Contains(got, "⟂") {
				return false
			}
		}
		return true
	})
}

// bridgeConfig turns the daemon's bridge on.
const bridgeConfig = "[bridge]\nclaude_code = true\ninterval = \"1m\"\n"

// TestBridgeDaemon: with [bridge] claude_code, the daemons mirror on
// their own: an entry written on A reaches B's file, and B's edit of it
// reaches A's, with no command run.
func TestBridgeDaemon(t *testing.T) {
	a := startClaudeMachine(t, 1, "work/shop", bridgeConfig)
	b := startClaudeMachine(t, 2, "src/shop", bridgeConfig)
	joinPair(t, a, b)
	a.write(t, "MEMORY.md", "# Memory\n- Releases are tagged from main\n")
	eventually(t, 30*time.Second, "A's entry does not reach B's file", func() bool {
		return strings.Contains(b.read(t, "MEMORY.md"), "- Releases are tagged from main <!-- mm:m-")
	})
	b.write(t, "MEMORY.md", strings.Replace(b.read(t, "MEMORY.md"), "from main", "from main, signed", 1))
	eventually(t, 30*time.Second, "B's edit does not reach A's file", func() bool {
		return a.read(t, "MEMORY.md") == "# Memory\n- Releases are tagged from main, signed\n"
	})
}

// BenchmarkBridgePropagation measures an edit of A's MEMORY.md until it
// is in B's, both daemons mirroring on their own ([bridge] claude_code,
// interval 1m: a pass runs within 250 ms of a change to a memory
// directory, or to a memory of auto memory in the store).
//
//	go test -run '^$' -bench BridgePropagation -benchtime 20x ./e2e
func BenchmarkBridgePropagation(b *testing.B) {
	ma := startClaudeMachine(b, 1, "work/shop", bridgeConfig)
	mb := startClaudeMachine(b, 2, "src/shop", bridgeConfig)
	joinPair(b, ma, mb)
	ma.write(b, "MEMORY.md", "# Memory\n")
	samples := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		line := fmt.Sprintf("- fact %d of the benchmark run %d", i, time.Now().UnixNano())
		ma.write(b, "MEMORY.md", ma.read(b, "MEMORY.md")+line+"\n")
		start := time.Now()
		for !strings.Contains(mb.read(b, "MEMORY.md"), line) {
			if time.Since(start) > time.Minute {
				b.Fatalf("edit %d not in B's MEMORY.md after a minute", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
		samples = append(samples, float64(time.Since(start).Milliseconds()))
	}
	b.StopTimer()
	reportPercentiles(b, "ms", samples)
}
