package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/testwait"
)

// binary is the memmesh executable built once for the package's tests.
var binary string

// bound is a wait's bound: the one its caller expects, or testwait.Limit when
// that is longer.
func bound(expected time.Duration) time.Duration {
	return max(expected, testwait.Limit)
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The quick tier leaves out what builds the binary and starts
		// daemons (minutes on two cores), browsers and Node.js.
		fmt.Println("e2e: skipped under -short: ./test runs the end-to-end tests")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "memmesh-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "memmesh")
	build := exec.Command("go", "build", "-o", binary, "../cmd/memmesh")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build memmesh:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one memmesh invocation did.
type result struct {
	stdout, stderr string
	code           int
}

// newHome returns an empty memmesh home whose daemon is stopped when the
// test ends.
func newHome(t *testing.T) string {
	t.Helper()
	// A short path: unix socket paths are limited to about 100 bytes.
	home, err := os.MkdirTemp("", "mmh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopHome(t, home)
		os.RemoveAll(home)
	})
	return home
}

// stopHome stops the home's daemon: cleanly if it answers, else by its pid.
func stopHome(t *testing.T, home string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "stop", "--home", home)
	cmd.Env = testEnv(home)
	cmd.Run()
	if data, err := os.ReadFile(filepath.Join(home, "memmesh.lock")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// testEnv is the environment of every memmesh the tests run. Daemons run
// the mesh on an ephemeral loopback port: many run at once, and none may
// take the default port from a real daemon on this machine. HOME is the
// home itself, so that what a daemon finds under ~ (agents' transcripts)
// is its test's alone.
func testEnv(home string) []string {
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "MEMMESH_LISTEN=127.0.0.1:0"}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	return env
}

// mm runs memmesh with args on home, feeding stdin.
func mm(t *testing.T, home, stdin string, args ...string) result {
	t.Helper()
	return mmEnv(t, home, nil, stdin, args...)
}

// mmEnv is mm with extra environment variables. A memmesh still running
// after testwait.Limit fails the test: it hangs.
func mmEnv(t *testing.T, home string, extraEnv []string, stdin string, args ...string) result {
	t.Helper()
	return mmIn(t, home, home, extraEnv, stdin, args...)
}

// mmIn is mmEnv run in the directory dir.
func mmIn(t *testing.T, home, dir string, extraEnv []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"--home", home}, args...)...)
	cmd.Env = append(testEnv(home), extraEnv...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("memmesh %s: still running after %s: it hangs", strings.Join(args, " "), testwait.Limit)
	}
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("memmesh %v: %v", args, err)
	}
	return r
}

// ok runs memmesh and fails the test unless it exits 0.
func ok(t *testing.T, home string, args ...string) string {
	t.Helper()
	r := mm(t, home, "", args...)
	if r.code != 0 {
		t.Fatalf("memmesh %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// okJSON runs memmesh and decodes its JSON output into v.
func okJSON(t *testing.T, home string, v any, args ...string) {
	t.Helper()
	out := ok(t, home, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("memmesh %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
}
