// Package labelled measures extract's rules on a labelled corpus of agents'
// sessions kept in their clients' own formats: each transcript is read by
// its client's adapter (transcript), its candidates are extracted
// (extract.Candidates) and judged against the memories a careful person
// would keep (extract.Judge), and the scores are summed per client, per
// kind and overall.
//
// A corpus is a directory: <dir>/<client>/ is a home directory in which
// the client's adapter discovers its transcripts (Aider's histories are
// found under it as a project root), and <dir>/labels/<name>.json labels
// one of them:
//
//	{"client": "codex", "path": "<the transcript, relative to dir>",
//	 "note": "...", "memories": [{"kind": "fact", "phrases": ["go test"]}]}
//
// A session with nothing to learn has no memories. Every transcript must
// read without a warning into a session with turns, and be labelled once.
package labelled

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/extract"
	"github.com/memmesh/memmesh/transcript"
)

// labelsDir is the corpus's directory of label files.
const labelsDir = "labels"

// maxLabelFile bounds a label file read.
const maxLabelFile = 64 << 10

// Labels is what a label file says of its transcript.
type Labels struct {
	Client string `json:"client"`
	// Path is the transcript, relative to the corpus's directory, with
	// slashes.
	Path     string          `json:"path"`
	Note     string          `json:"note"`
	Memories []extract.Label `json:"memories"`
}

// Session is one labelled session of a corpus, read by its adapter.
type Session struct {
	Name    string // the label file's name, without .json
	Labels  Labels
	Session transcript.Session
}

// Load reads the corpus in dir: every label file and the transcript it
// names. A corpus that breaks a rule of the layout (a transcript that does
// not read cleanly, none or two label files for one, a label file naming
// no transcript or a kind extract does not know) is an error naming each
// fault.
func Load(dir string) ([]Session, error) {
	dir, err := filepath.Abs(dir) // the projects of Aider's sessions are named by their paths
	if err != nil {
		return nil, fmt.Errorf("labelled: %w", err)
	}
	adapters := adaptersOf(dir)
	found, errs := discover(dir, adapters)
	names, err := labelFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []Session
	labelled := map[string]string{}
	for _, name := range names {
		l, err := readLabels(filepath.Join(dir, labelsDir, name+".json"))
		if err == nil {
			err = l.check(found)
		}
		if err == nil && labelled[l.Path] != "" {
			err = fmt.Errorf("%s is labelled by %s too", l.Path, labelled[l.Path])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("label %s: %w", name, err))
			continue
		}
		labelled[l.Path] = name
		s, err := read(adapters[l.Client], filepath.Join(dir, filepath.FromSlash(l.Path)))
		if err != nil {
			errs = append(errs, fmt.Errorf("label %s: %w", name, err))
			continue
		}
		out = append(out, Session{Name: name, Labels: l, Session: s})
	}
	for _, clientPaths := range found {
		for _, p := range clientPaths {
			if labelled[p] == "" {
				errs = append(errs, fmt.Errorf("%s has no label file", p))
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("labelled: corpus %s: %w", dir, errors.Join(errs...))
	}
	return out, nil
}

// adaptersOf returns the adapter of each client, configured to discover
// the transcripts of the corpus in dir.
func adaptersOf(dir string) map[string]transcript.Adapter {
	out := map[string]transcript.Adapter{}
	for _, a := range transcript.Adapters(transcript.Config{Roots: []string{filepath.Join(dir, "aider")}}) {
		out[a.Client()] = a
	}
	return out
}

// discover lists each client's transcripts (relative to dir, with
// slashes), and the faults of the corpus's top directory: an entry that
// names no client.
func discover(dir string, adapters map[string]transcript.Adapter) (map[string][]string, []error) {
	found := map[string][]string{}
	var errs []error
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, []error{err}
	}
	for _, e := range entries {
		a, ok := adapters[e.Name()]
		if e.Name() == labelsDir {
			continue
		}
		if !ok || !e.IsDir() {
			errs = append(errs, fmt.Errorf("%s is neither a client's directory nor %s", e.Name(), labelsDir))
			continue
		}
		paths, err := a.Discover(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range paths {
			r, err := filepath.Rel(dir, p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			found[a.Client()] = append(found[a.Client()], filepath.ToSlash(r))
		}
	}
	return found, errs
}

// labelFiles lists the names of the label files in dir's labels.
func labelFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, labelsDir))
	if err != nil {
		return nil, fmt.Errorf("labelled: %w", err)
	}
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			return nil, fmt.Errorf("labelled: %s in %s is not a label file", e.Name(), labelsDir)
		}
		names = append(names, name)
	}
	return names, nil
}

func readLabels(path string) (Labels, error) {
	var l Labels
	f, err := os.Open(path)
	if err != nil {
		return l, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLabelFile+1))
	if err != nil {
		return l, err
	}
	if len(data) > maxLabelFile {
		return l, fmt.Errorf("longer than %d bytes", maxLabelFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, fmt.Errorf("not a label file: %w", err)
	}
	return l, nil
}

// check checks l against the transcripts found, by client.
func (l Labels) check(found map[string][]string) error {
	if !slices.Contains(found[l.Client], l.Path) {
		return fmt.Errorf("names %q, which is no transcript of client %q in the corpus", l.Path, l.Client)
	}
	for _, m := range l.Memories {
		if !extract.KnownKind(m.Kind) {
			return fmt.Errorf("kind %q is none of %v", m.Kind, extract.Kinds())
		}
		if len(m.Phrases) == 0 || slices.Contains(m.Phrases, "") {
			return fmt.Errorf("a %s memory has an empty phrase, or none", m.Kind)
		}
	}
	return nil
}

// read reads the whole transcript at path with a, which must understand
// all of it.
func read(a transcript.Adapter, path string) (transcript.Session, error) {
	b, err := a.Read(path, transcript.Cursor{}, transcript.Limits{})
	switch {
	case err != nil:
		return transcript.Session{}, err
	case len(b.Warnings) > 0:
		return transcript.Session{}, fmt.Errorf("%s reads with warnings: %+v", a.Client(), b.Warnings)
	case b.More:
		return transcript.Session{}, fmt.Errorf("%s: longer than one read", a.Client())
	case len(b.Session.Turns) == 0:
		return transcript.Session{}, fmt.Errorf("%s: no turns", a.Client())
	}
	return b.Session, nil
}
