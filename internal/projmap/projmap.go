// Package projmap holds a home's project mappings (maps.toml, written by
// `memmesh map`): which namespace the commands and agents run in a working
// directory use.
package projmap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// File is the mappings file in a home.
const File = "maps.toml"

// Mapping sends the directories that match Glob (and everything under
// them) to Namespace; a remote mapping (Remote set, Glob empty) sends the
// git working trees whose remote is Remote (as gitrepo.NormalizeRemote
// writes it) there, wherever they are on a machine.
type Mapping struct {
	Glob      string `toml:"glob,omitempty" json:"glob,omitempty"`
	Remote    string `toml:"remote,omitempty" json:"remote,omitempty"`
	Namespace string `toml:"namespace" json:"namespace"`
}

type doc struct {
	Map []Mapping `toml:"map"`
}

// Load reads the mappings of home; a home without the file has none.
func Load(home string) ([]Mapping, error) {
	path := filepath.Join(home, File)
	var d doc
	if _, err := toml.DecodeFile(path, &d); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("project mappings %s: %w", path, err)
	}
	return d.Map, nil
}

// Save replaces the mappings file of home atomically.
func Save(home string, maps []Mapping) error {
	path := filepath.Join(home, File)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(home, ".maps-*.toml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	fmt.Fprintln(tmp, "# Project mappings, written by 'memmesh map': a working directory that matches")
	fmt.Fprintln(tmp, "# glob (or lies under one that does) uses namespace. The deepest match wins.")
	fmt.Fprintln(tmp, "# A git working tree matched by no glob uses the namespace of its remote's mapping.")
	if err := toml.NewEncoder(tmp).Encode(doc{Map: maps}); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Lookup returns the namespace of dir: that of the mapping whose glob
// matches dir or its nearest ancestor (the last such mapping when several
// match the same directory).
func Lookup(maps []Mapping, dir string) (string, bool) {
	for {
		for i := len(maps) - 1; i >= 0; i-- {
			if ok, _ := filepath.Match(maps[i].Glob, dir); ok && maps[i].Glob != "" {
				return maps[i].Namespace, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// HasRemote reports whether some mapping is a remote mapping.
func HasRemote(maps []Mapping) bool {
	for _, m := range maps {
		if m.Remote != "" {
			return true
		}
	}
	return false
}

// LookupRemote returns the namespace of the working trees whose
// normalized remote URL is remote (the last such mapping).
func LookupRemote(maps []Mapping, remote string) (string, bool) {
	for i := len(maps) - 1; i >= 0; i-- {
		if remote != "" && strings.EqualFold(maps[i].Remote, remote) {
			return maps[i].Namespace, true
		}
	}
	return "", false
}

// RemoteNamespace is the namespace a repository gets on every machine
// when nothing maps it: the last two elements of its normalized remote,
// lowercased and joined by a dash (github.com/Acme/App is acme-app); ""
// when the remote has no such elements.
func RemoteNamespace(remote string) string {
	parts := strings.FieldsFunc(strings.ToLower(remote), func(r rune) bool { return r == '/' || r == ':' || r == '\\' })
	if len(parts) < 2 {
		return ""
	}
	name := parts[len(parts)-2] + "-" + parts[len(parts)-1]
	if strings.Contains(parts[0], ".") && len(parts) == 2 {
		name = parts[1] // host/name: the name alone
	}
	return strings.Trim(name, ".-_")
}

// CleanGlob makes a glob absolute (expanding a leading ~) and checks it.
func CleanGlob(glob string) (string, error) {
	if rest, ok := strings.CutPrefix(glob, "~"); ok && (rest == "" || rest[0] == '/') {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		glob = home + rest
	}
	abs, err := filepath.Abs(glob)
	if err != nil {
		return "", err
	}
	if _, err := filepath.Match(abs, ""); err != nil {
		return "", fmt.Errorf("glob %q: %w", glob, err)
	}
	return abs, nil
}
