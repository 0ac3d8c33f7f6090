package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/memmesh/memmesh/api"
)

// Bounds of what the bridge reads and keeps.
const (
	// MaxFileBytes is the largest memory file read; a larger one is left
	// alone (Claude Code itself loads 25 KB of MEMORY.md).
	MaxFileBytes = 1 << 20
	// MaxFiles is the number of Markdown files read in one memory directory.
	MaxFiles = 200
	// MaxBackups is the number of backups kept of each file.
	MaxBackups = 10
)

// stateFile and lockFile are kept in Config.StateDir.
const (
	stateFile = "claude-code.json"
	lockFile  = "claude-code.lock"
)

// state is what the bridge last wrote or read of each file, to tell an
// edit made here from a change that came through the namespace, and the
// revision an edit made here was made from.
type state struct {
	Files map[string]*fileState `json:"files"` // by absolute path
}

type fileState struct {
	Hash    string       `json:"hash"` // of the file as the bridge left it
	Entries []stateEntry `json:"entries"`
}

// stateEntry is one entry as the bridge left it: its memory, its text in
// the file, and the memory's view (content and conflicting versions)
// then.
type stateEntry struct {
	ID     string `json:"id"`
	Local  string `json:"local"`
	Synced string `json:"synced"`
	Rev    string `json:"rev,omitempty"` // the memory's current revision then
	// Managed is set for an entry of the managed part.
	Managed bool `json:"managed,omitempty"`
}

func hashText(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:16])
}

// lock takes the state's lock: one bridge pass at a time in a home (the
// daemon's and a command's). It waits at most timeout.
func lock(dir string, timeout time.Duration) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another bridge pass holds %s: %w", f.Name(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func loadState(dir string) (*state, error) {
	st := &state{Files: map[string]*fileState{}}
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("bridge state %s: %w (delete it to start over: files are then read as new)", filepath.Join(dir, stateFile), err)
	}
	if st.Files == nil {
		st.Files = map[string]*fileState{}
	}
	return st, nil
}

func saveState(dir string, st *state) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return writeAtomic(dir, stateFile, data, 0o600)
}

// writeAtomic writes data to dir/name through a temporary file renamed
// over it: a reader sees the old file or the new one, never a part.
func writeAtomic(dir, name string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(dir, ".memmesh-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(tmp.Chmod(mode), tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// memFile is a Markdown file of a memory directory.
type memFile struct {
	Name string
	Text string
	Mode fs.FileMode
	// Skip says why the file is neither read nor written; "" when it is.
	Skip string
}

// readDir reads the Markdown files of a memory directory. A file that is
// a symlink, not a regular file, too large or not UTF-8 is listed with
// why it is skipped: it is never written either.
func readDir(dir string) ([]memFile, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []memFile
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".md") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if len(out) == MaxFiles {
			out = append(out, memFile{Name: e.Name(), Skip: fmt.Sprintf("more than %d Markdown files here: the rest are left alone", MaxFiles)})
			break
		}
		out = append(out, readMemFile(dir, e.Name()))
	}
	slices.SortFunc(out, func(a, b memFile) int { return strings.Compare(fileOrder(a.Name), fileOrder(b.Name)) })
	return out, nil
}

// fileOrder puts MEMORY.md first.
func fileOrder(name string) string {
	if name == IndexFile {
		return ""
	}
	return name
}

func readMemFile(dir, name string) memFile {
	f := memFile{Name: name}
	st, err := os.Lstat(filepath.Join(dir, name))
	switch {
	case err != nil:
		f.Skip = err.Error()
		return f
	case st.Mode()&fs.ModeSymlink != 0:
		f.Skip = "a symlink: memmesh neither follows nor writes through it"
		return f
	case !st.Mode().IsRegular():
		f.Skip = "not a regular file"
		return f
	case st.Size() > MaxFileBytes:
		f.Skip = fmt.Sprintf("%d bytes, over the %d read: left alone", st.Size(), MaxFileBytes)
		return f
	}
	fh, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		f.Skip = err.Error()
		return f
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	switch {
	case err != nil:
		f.Skip = err.Error()
	case len(data) > MaxFileBytes:
		f.Skip = fmt.Sprintf("over the %d bytes read: left alone", MaxFileBytes)
	default:
		if err := api.CheckText(string(data)); err != nil {
			f.Skip = err.Error() + ": left alone"
		} else {
			f.Text, f.Mode = string(data), st.Mode().Perm()
		}
	}
	return f
}

// writeMemFile replaces dir/name with text, after keeping a copy of what
// it replaces under backups. A read-only file, or one that became a
// symlink, is not written.
func writeMemFile(dir, name, text string, backups string) error {
	path := filepath.Join(dir, name)
	mode := fs.FileMode(0o644)
	// By its mode, not by trying: a read-only directory or file is the
	// user's choice, which root's writes would not respect.
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("%s is read-only: %s left as it is (make the directory writable to mirror it)", dir, name)
	}
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink: not written", path)
	case err == nil && !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file: not written", path)
	case err == nil && st.Mode().Perm()&0o200 == 0:
		return fmt.Errorf("%s is read-only: left as it is (make it writable to mirror it)", path)
	case err == nil:
		mode = st.Mode().Perm()
		if err := backup(path, backups); err != nil {
			return fmt.Errorf("back up %s: %w (not written)", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := writeAtomic(dir, name, []byte(text), mode); err != nil {
		return fmt.Errorf("write %s: %w (the file is unchanged)", path, err)
	}
	return nil
}

// backup copies path into dir (a folder per memory directory), keeping
// the newest MaxBackups copies of each file.
func backup(path, dir string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(filepath.Dir(path)))
	dir = filepath.Join(dir, hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	name := filepath.Base(path)
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	if err := writeAtomic(dir, name+"."+stamp, data, 0o600); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var old []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), name+".") && len(e.Name()) == len(name)+len(stamp)+1 {
			old = append(old, e.Name())
		}
	}
	slices.Sort(old) // the stamps sort by time
	for _, p := range old[:max(0, len(old)-MaxBackups)] {
		os.Remove(filepath.Join(dir, p))
	}
	return nil
}
