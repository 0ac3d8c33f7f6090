package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// glob lists the files matching pattern, sorted; a pattern whose
// directories do not exist matches nothing.
func glob(pattern string) ([]string, error) {
	m, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	slices.Sort(m)
	return m, nil
}

// shortErr keeps a decoding error's message short: it names a position or
// a type, and a warning holds no more.
func shortErr(err error) string {
	s, _ := cut(err.Error(), 120)
	return s
}

// clip keeps a name read from a file (a record type) short for a warning.
func clip(s string) string {
	s, _ = cut(s, 40)
	return s
}

// walkFiles lists the files under root, at most depth directories down,
// whose names match; a root that does not exist lists nothing.
func walkFiles(root string, depth int, match func(name string) bool) ([]string, error) {
	var out []string
	base := strings.Count(filepath.Clean(root), string(filepath.Separator))
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return nil // an unreadable directory lists nothing
		}
		if d.IsDir() {
			if strings.Count(path, string(filepath.Separator))-base >= depth {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && match(d.Name()) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// quote quotes a name read from a file (a record type) for a warning,
// kept short.
func quote(s string) string { return strconv.Quote(clip(s)) }

// Config is what the adapters need to know beyond a home directory.
type Config struct {
	// Roots are project directories: Aider's histories are found under
	// them, and Gemini CLI's sessions are named by the one whose hash
	// they record.
	Roots []string
	// OpenCodeData is OpenCode's data directory when it is not the
	// default (XDG_DATA_HOME/opencode).
	OpenCodeData string
}

// Adapters returns an adapter for each client, configured by c.
func Adapters(c Config) []Adapter {
	return []Adapter{
		ClaudeCode{}, Codex{}, Gemini{Roots: c.Roots}, OpenCode{Data: c.OpenCodeData},
		Cline{}, Continue{}, Aider{Roots: c.Roots},
	}
}
