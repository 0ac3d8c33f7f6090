// Package safefile reads and replaces a user's files without ever losing
// them: a read is bounded and refuses what is not a regular file, and a
// replacement keeps a backup of the file it replaces and writes through a
// temporary file renamed over it, so that a reader (or a crash) sees the
// old file or the new one, never half of one.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"bytes"
)

// File is a file as read: its content, mode and whether it exists.
type File struct {
	Path   string // the file itself, symlinks resolved
	Data   []byte
	Mode   fs.FileMode
	Exists bool
}

// Read reads the file at path, following a symlink (a dotfile manager's)
// to the file it names. A missing file reads as empty, with mode 0644. A
// file that is not regular, or holds more than max bytes, is refused with
// an error that says it is left alone; it is never read whole.
func Read(path string, max int64) (File, error) {
	f := File{Path: path, Mode: 0o644}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		f.Path = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	fi, err := os.Stat(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	if !fi.Mode().IsRegular() {
		return f, fmt.Errorf("%s is not a regular file: left alone", path)
	}
	if fi.Size() > max {
		return f, fmt.Errorf("%s holds %d bytes, more than the %d allowed: left alone", path, fi.Size(), max)
	}
	r, err := os.Open(f.Path)
	if err != nil {
		return f, err
	}
	defer r.Close()
	f.Data, err = io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return f, err
	}
	if int64(len(f.Data)) > max {
		return f, fmt.Errorf("%s grew past %d bytes while read: left alone", path, max)
	}
	f.Exists, f.Mode = true, fi.Mode().Perm()
	return f, nil
}

// Replace backs the file up into backupDir ("" for beside it) when it
// existed, and writes data in its place atomically with the file's mode.
// It returns the backup's path.
func (f File) Replace(data []byte, backupDir string, now time.Time) (string, error) {
	backup := ""
	if f.Exists {
		var err error
		if backup, err = f.Backup(backupDir, now); err != nil {
			return "", err
		}
	} else if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return "", err
	}
	return backup, WriteAtomic(f.Path, data, f.Mode)
}

// Remove backs the file up beside it and removes it.
func (f File) Remove(now time.Time) (string, error) {
	backup, err := f.Backup("", now)
	if err != nil {
		return "", err
	}
	return backup, os.Remove(f.Path)
}

// Backup writes the file's content into dir ("" for beside the file),
// named after the file and the time, never over another backup, and
// returns its path.
func (f File) Backup(dir string, now time.Time) (string, error) {
	if dir == "" {
		dir = filepath.Dir(f.Path)
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("back up %s: %w", f.Path, err)
	}
	base := filepath.Join(dir, filepath.Base(f.Path)+".memmesh-backup-"+now.UTC().Format("20060102T150405Z"))
	name := base
	for i := 1; ; i++ {
		w, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.Mode)
		if errors.Is(err, fs.ErrExist) && i < 100 {
			name = fmt.Sprintf("%s-%d", base, i)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", f.Path, err)
		}
		_, err = w.Write(f.Data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("back up %s: %w", f.Path, err)
		}
		return name, nil
	}
}

// WriteAtomic writes data to path through a temporary file renamed over
// it: a reader sees the old file or the new one, never half of one.
func WriteAtomic(path string, data []byte, mode fs.FileMode) error {
	return CopyAtomic(path, bytes.NewReader(data), mode)
}

// CopyAtomic is WriteAtomic of what r holds, read to its end.
func CopyAtomic(path string, r io.Reader, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a failure; gone once renamed
	_, err = io.Copy(tmp, r)
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
