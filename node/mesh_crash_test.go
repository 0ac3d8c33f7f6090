package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/storage"
)

// Environment of the child process in TestMeshCrashDuringSync.
const (
	crashHomeEnv  = "MEMMESH_TEST_CRASH_HOME"
	crashTokenEnv = "MEMMESH_TEST_CRASH_TOKEN"
)

// TestMeshCrashDuringSync kills a node with SIGKILL while it catches up
// with a member and writes memories of its own; restarted, it catches up,
// and every write it acknowledged before the kill reaches the member.
func TestMeshCrashDuringSync(t *testing.T) {
	t.Parallel()
	skipIfShort(t)
	if home := os.Getenv(crashHomeEnv); home != "" {
		crashChild(t, home, os.Getenv(crashTokenEnv))
		return
	}
	ctx := context.Background()
	a := meshNode(t, "", 1, nil)
	var buf bytes.Buffer
	if err := corpus.New(7).WriteImport(&buf, 3000); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Import(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	inv, err := a.Invite(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMeshCrashDuringSync$")
	cmd.Env = append(os.Environ(), crashHomeEnv+"="+home, crashTokenEnv+"="+inv.Token)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	// Kill the child once it has joined and acknowledged a few writes of
	// its own: the initial sync of 3,000 memories is then under way.
	var acked []string
	lines := bufio.NewScanner(out)
	for lines.Scan() && len(acked) < 20 {
		if id, ok := strings.CutPrefix(lines.Text(), "ack "); ok {
			acked = append(acked, id)
		}
	}
	if len(acked) < 20 {
		t.Fatalf("child stopped after %d acknowledged writes", len(acked))
	}
	cmd.Process.Kill()
	cmd.Wait()

	b := meshNode(t, home, 2, nil)
	waitUntil(t, "the restarted node converges with the member", func() bool { return converged([]*Node{a, b}) })
	for _, id := range acked {
		if !has(a, id) || !has(b, id) {
			t.Errorf("write %s acknowledged before the kill is missing (member %v, restarted node %v)", id, has(a, id), has(b, id))
		}
	}
	total, err := b.store.Count(storage.KindMemory)
	if err != nil || total < 3000+len(acked) {
		t.Fatalf("restarted node holds %d memories (%v), want at least %d", total, err, 3000+len(acked))
	}
}

// crashChild joins the mesh with the token and writes memories until it
// is killed, printing "ack ID" for each acknowledged one.
func crashChild(t *testing.T, home, token string) {
	time.AfterFunc(60*time.Second, func() { os.Exit(3) }) // never outlive the parent
	n := meshNode(t, home, 2, nil)
	if _, err := n.Join(context.Background(), token); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		res, err := n.Remember(context.Background(), api.RememberRequest{Content: fmt.Sprintf("written on the crashing node, number %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("ack " + res.ID)
	}
}
