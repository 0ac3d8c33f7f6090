package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/web"
)

// startServe runs `memmesh serve` on home, with extra arguments, as a child
// process and waits until it answers. The process is killed when the test
// ends.
func startServe(t testing.TB, home string, extra ...string) (*exec.Cmd, *web.Client) {
	t.Helper()
	return startServeIn(t, nil, home, extra...)
}

// startServeIn is startServe with the command run under wrap, a command
// that runs its arguments (e.g. `ip netns exec NAME`).
func startServeIn(t testing.TB, wrap []string, home string, extra ...string) (*exec.Cmd, *web.Client) {
	t.Helper()
	if !slices.ContainsFunc(extra, func(a string) bool { return a == "--http" || strings.HasPrefix(a, "--http=") }) {
		// Not the default port: that one is the user's, and parallel runs
		// would contend for it.
		extra = append(slices.Clone(extra), "--http", freeLoopbackAddr(t))
	}
	argv := append(append(slices.Clone(wrap), binary, "serve", "--home", home), extra...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = testEnv(home)
	dieWithTest(cmd)
	logf, err := os.OpenFile(filepath.Join(home, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	c := web.NewClient(filepath.Join(home, "memmesh.sock"), web.ClientOptions{})
	deadline := time.Now().Add(testwait.Limit)
	for {
		if _, err := c.Health(context.Background()); err == nil {
			return cmd, c
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(home, "serve.log"))
			t.Fatalf("serve did not become ready:\n%s", log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKillDuringCaptures kills the daemon with SIGKILL at random moments
// during bursts of concurrent captures; after every restart each capture that
// was acknowledged must be present and searchable.
func TestKillDuringCaptures(t *testing.T) {
	const rounds = 20
	home := newHome(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	all := map[string]string{}  // every acknowledged memory id -> a word unique to it
	last := map[string]string{} // those acknowledged in the last round
	for round := range rounds {
		cmd, c := startServe(t, home)
		// What was acknowledged before the last kill must have survived it.
		checkAcked(t, c, "durability", last, round)
		last = map[string]string{}

		var mu sync.Mutex
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					word := fmt.Sprintf("zq%dx%dx%d", round, w, i)
					res, err := c.Remember(ctx, api.RememberRequest{
						Namespace: "durability",
						Content:   "Acknowledged capture " + word + " must survive kill -9",
					})
					if err != nil {
						return // the daemon died under us: not acknowledged
					}
					mu.Lock()
					last[res.ID], all[res.ID] = word, word
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(5+rng.IntN(60)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		cancel()
		wg.Wait()
	}
	_, c := startServe(t, home)
	checkAcked(t, c, "durability", all, rounds)
	if len(all) < rounds {
		t.Fatalf("only %d captures were acknowledged in %d rounds: the test did not exercise the daemon", len(all), rounds)
	}
}

// checkAcked fails the test unless every acknowledged memory (id -> a word
// unique to it) of namespace ns can be read and is found first by a search
// for its word.
func checkAcked(t *testing.T, c *web.Client, ns string, acked map[string]string, round int) {
	t.Helper()
	ctx := context.Background()
	for id, word := range acked {
		if _, err := c.Get(ctx, id); err != nil {
			t.Fatalf("round %d: acknowledged capture %s lost: %v", round, id, err)
		}
		res, err := c.Search(ctx, api.SearchRequest{Query: word, Namespace: ns})
		if err != nil {
			t.Fatalf("round %d: search %s: %v", round, word, err)
		}
		if len(res.Results) == 0 || res.Results[0].ID != id {
			t.Fatalf("round %d: acknowledged capture %s (%s) is not searchable: %+v", round, id, word, res.Results)
		}
	}
}
