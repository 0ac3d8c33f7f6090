package hookconf

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// MaxFile bounds a client's config file that memmesh reads: settings are
// a few KiB; a larger file is refused, never read whole.
const MaxFile = 4 << 20

// file is a config file as read: its content, mode and whether it exists.
type file struct {
	path   string // the file itself, symlinks resolved
	data   []byte
	mode   fs.FileMode
	exists bool
}

// readFile reads the config file at path, following a symlink (a dotfile
// manager's) to the file it names. A missing file reads as empty.
func readFile(path string) (file, error) {
	f := file{path: path, mode: 0o644}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		f.path = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	fi, err := os.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	if !fi.Mode().IsRegular() {
		return f, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > MaxFile {
		return f, fmt.Errorf("%s holds %d bytes, more than the %d a client's settings may: left alone", path, fi.Size(), MaxFile)
	}
	r, err := os.Open(f.path)
	if err != nil {
		return f, err
	}
	defer r.Close()
	f.data, err = io.ReadAll(io.LimitReader(r, MaxFile+1))
	if err != nil {
		return f, err
	}
	if len(f.data) > MaxFile {
		return f, fmt.Errorf("%s grew past %d bytes while read: left alone", path, MaxFile)
	}
	f.exists, f.mode = true, fi.Mode().Perm()
	return f, nil
}

// replace backs the file up (when it existed) and writes data in its
// place atomically with the file's mode. It returns the backup's path.
func (f file) replace(data []byte, now time.Time) (string, error) {
	backup := ""
	if f.exists {
		var err error
		if backup, err = f.backup(now); err != nil {
			return "", err
		}
	} else if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return "", err
	}
	return backup, writeAtomic(f.path, data, f.mode)
}

// remove backs the file up and removes it.
func (f file) remove(now time.Time) (string, error) {
	backup, err := f.backup(now)
	if err != nil {
		return "", err
	}
	return backup, os.Remove(f.path)
}

// backup writes the file's content beside it, named after the time, and
// never over another backup.
func (f file) backup(now time.Time) (string, error) {
	base := f.path + ".memmesh-backup-" + now.UTC().Format("20060102T150405Z")
	name := base
	for i := 1; ; i++ {
		w, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if errors.Is(err, fs.ErrExist) && i < 100 {
			name = fmt.Sprintf("%s-%d", base, i)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", f.path, err)
		}
		_, err = w.Write(f.data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("back up %s: %w", f.path, err)
		}
		return name, nil
	}
}

// writeAtomic writes data to path through a temporary file renamed over
// it: a reader sees the old file or the new one, never half of one.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a failure; gone once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}
