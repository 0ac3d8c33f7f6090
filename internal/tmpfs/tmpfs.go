// Package tmpfs gives tests a small filesystem of their own to fill: it
// mounts a size-limited tmpfs (which needs root, or a machine that lets the
// test mount) and writes a file until the filesystem has no space left.
package tmpfs

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size (mount's syntax, e.g. "64m") on a new
// directory with a short path (unix socket paths are limited to about 100
// bytes) and returns it. It is unmounted when the test ends, after the
// cleanups registered later (daemons started on it) have run. When the
// machine does not let the test mount, the test is skipped with the reason.
func Mount(t *testing.T, size string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mmfs")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput()
	if err != nil {
		os.Remove(dir)
		t.Skipf("this machine does not let the test mount a tmpfs (mount: %v: %s); storage's fault-injection tests still cover a full disk", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
		os.Remove(dir)
	})
	return dir
}

// Fill appends to the file at path until its filesystem has no space left,
// and returns how many bytes it wrote.
func Fill(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("create filler: %v", err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("filler--"), 1<<17) // 1 MiB
	var n int64
	for size := len(chunk); size > 0; {
		w, err := f.Write(chunk[:size])
		n += int64(w)
		switch {
		case errors.Is(err, syscall.ENOSPC):
			size /= 2 // take the last blocks too
		case err != nil:
			t.Fatalf("write filler: %v", err)
		}
	}
	return n
}
