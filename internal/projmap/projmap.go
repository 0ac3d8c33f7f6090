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
// them) to Namespace.
type Mapping struct {
	Glob      string `toml:"glob" json:"glob"`
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
			if ok, _ := filepath.Match(maps[i].Glob, dir); ok {
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
