// Package homescan reads every file under a directory, for the tests that
// check that what must not be kept (a secret, an erased memory) is in none
// of a home's files.
package homescan

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Files calls fn with the path and the bytes of every regular file under
// dir, and returns how many it read. A file removed while the walk runs is
// passed over.
func Files(dir string, fn func(path string, data []byte)) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n++
		fn(path, data)
		return nil
	})
	return n, err
}

// Holding returns the files under dir whose bytes contain needle; a walk
// that fails fails the test.
func Holding(tb testing.TB, dir, needle string) []string {
	tb.Helper()
	var found []string
	_, err := Files(dir, func(path string, data []byte) {
		if bytes.Contains(data, []byte(needle)) {
			found = append(found, path)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return found
}
