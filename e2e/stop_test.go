package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopSaysWhatHappens: what 'memmesh stop' reports is what happens.
// A daemon slow to stop (a request in flight holds its drain for 10 s,
// longer than the client timeout) is waited for and is gone when stop
// says so. A daemon suspended before it reads the request does not stop
// when it goes on, since stop reported it keeps running. A daemon
// suspended while it stops makes stop say it is still stopping, and it
// stops when it goes on.
func TestStopSaysWhatHappens(t *testing.T) {
	env := []string{"MEMMESH_CLIENT_TIMEOUT=2s"}

	t.Run("slow", func(t *testing.T) {
		home := newHome(t)
		cmd, _ := startServe(t, home)
		exited := exitOf(cmd)
		holdDrain(t, home)
		r := mmEnv(t, home, env, "", "stop", "--format", "human")
		if r.code != 0 || !strings.Contains(r.stdout, "memmesh stopped.") {
			t.Fatalf("stop of a daemon slow to stop: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		select {
		case <-exited:
		default:
			t.Fatal("stop said the daemon stopped; it still runs")
		}
	})

	t.Run("suspended before the request", func(t *testing.T) {
		home := newHome(t)
		cmd, c := startServe(t, home)
		pid := cmd.Process.Pid
		syscall.Kill(pid, syscall.SIGSTOP)
		r := mmEnv(t, home, env, "", "stop")
		syscall.Kill(pid, syscall.SIGCONT)
		if r.code == 0 || !strings.Contains(r.stderr, "keeps running") {
			t.Fatalf("stop of a suspended daemon: exit %d\nstdout: %s\nstderr: %s; want a failure saying it keeps running", r.code, r.stdout, r.stderr)
		}
		waitLog(t, home, "a request to stop arrived after its deadline")
		if _, err := c.Health(context.Background()); err != nil {
			t.Fatalf("stop said the daemon keeps running; once it went on: %v", err)
		}
	})

	t.Run("suspended while it stops", func(t *testing.T) {
		home := newHome(t)
		cmd, _ := startServe(t, home)
		pid := cmd.Process.Pid
		exited := exitOf(cmd)
		holdDrain(t, home)
		stop := exec.Command(binary, "--home", home, "stop")
		stop.Env = append(testEnv(home), env...)
		var stdout, stderr bytes.Buffer
		stop.Stdout, stop.Stderr = &stdout, &stderr
		if err := stop.Start(); err != nil {
			t.Fatal(err)
		}
		waitLog(t, home, "msg=stopping")
		syscall.Kill(pid, syscall.SIGSTOP)
		err := stop.Wait()
		syscall.Kill(pid, syscall.SIGCONT)
		want := "memmesh (pid " + strconv.Itoa(pid) + ") is stopping"
		if err == nil || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "stops when it goes on") {
			t.Fatalf("stop of a daemon suspended while it stops: %v\nstdout: %s\nstderr: %s; want a failure saying %q", err, stdout.String(), stderr.String(), want)
		}
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			t.Fatal("stop said the daemon stops when it goes on; it went on and did not stop")
		}
	})
}

// exitOf waits for the daemon's process in the background; the channel
// closes when it has exited.
func exitOf(cmd *exec.Cmd) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		cmd.Process.Wait()
		close(exited)
	}()
	return exited
}

// holdDrain keeps a request in flight on the home's socket, its body
// incomplete, so that a daemon that stops waits for it (at most 10 s).
func holdDrain(t *testing.T, home string) {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(home, "memmesh.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	io.WriteString(conn, "POST /v1/memories HTTP/1.1\r\nHost: memmesh\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
}

// waitLog waits until the daemon's log (serve.log) holds text.
func waitLog(t *testing.T, home, text string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		log, _ := os.ReadFile(filepath.Join(home, "serve.log"))
		if bytes.Contains(log, []byte(text)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's log never said %q:\n%s", text, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
