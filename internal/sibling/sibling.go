// Package sibling finds the executables memmesh's commands run one
// another as: `memmesh bench` runs memmesh-bench, and memmesh-bench runs
// `memmesh serve` for the daemons it measures. Installed together (go
// install ./cmd/...), they sit in one directory, which is looked in first,
// so that a build runs its own sibling rather than another one on PATH.
package sibling

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Find returns the path of the executable named name beside this
// process's executable, else on PATH. Its error, when there is none,
// says where it looked.
func Find(name string) (string, error) {
	dir := "this executable"
	if exe, err := os.Executable(); err == nil {
		dir = filepath.Dir(exe)
		if path, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return path, nil
		}
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("no %s in %s nor on PATH", name, dir)
	}
	return path, nil
}
