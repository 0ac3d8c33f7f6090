package hookconf

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/memmesh/memmesh/internal/safefile"
)

// codexFeature is the key under [features] of Codex's config.toml that
// turns its hooks on; codexFeatureNow is the name later releases give it
// (both read: codex-rs/features/src/legacy.rs).
const (
	codexFeature    = "codex_hooks"
	codexFeatureNow = "hooks"
)

// FeatureState says whether Codex's hooks are turned on in a config.toml.
type FeatureState string

// The states of Codex's hooks feature.
const (
	FeatureOn      FeatureState = "on"
	FeatureOff     FeatureState = "off"        // turned off in the file
	FeatureUnset   FeatureState = "unset"      // not said: older releases leave hooks off
	FeatureMissing FeatureState = "no file"    // no config.toml
	FeatureBroken  FeatureState = "unreadable" // not TOML, or too large
)

// CodexFeature reads the state of Codex's hooks feature in the
// config.toml at path.
func CodexFeature(path string) (FeatureState, error) {
	f, err := safefile.Read(path, MaxFile)
	if err != nil {
		return FeatureBroken, err
	}
	if !f.Exists {
		return FeatureMissing, nil
	}
	features, _, err := codexFeatures(f)
	if err != nil {
		return FeatureBroken, err
	}
	return featureState(features), nil
}

func featureState(features map[string]any) FeatureState {
	if features[codexFeatureNow] == false {
		return FeatureOff
	}
	if features[codexFeature] == true || features[codexFeatureNow] == true {
		return FeatureOn
	}
	if features[codexFeature] == false {
		return FeatureOff
	}
	return FeatureUnset
}

// codexFeatures decodes a config.toml and returns its features table and
// whether the file defines one.
func codexFeatures(f safefile.File) (map[string]any, bool, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(f.Data), &doc); err != nil {
		return nil, false, fmt.Errorf("%s is not valid TOML (%w): left alone", f.Path, err)
	}
	switch features := doc["features"].(type) {
	case nil:
		return map[string]any{}, false, nil
	case map[string]any:
		return features, true, nil
	default:
		return nil, false, fmt.Errorf("%s: features is not a table: left alone", f.Path)
	}
}

// EnableCodexHooks turns Codex's hooks on in the config.toml at path
// (created when missing): codex_hooks = true under [features]. The file is
// edited as text, one line added or changed, so that the user's comments,
// order and layout stay; the result is checked to decode, with the
// feature on and every other setting as it was, before it is written.
// Hooks turned off with the later key (hooks = false) are the user's
// choice: an error, nothing changed.
func EnableCodexHooks(path string, now time.Time) (Result, error) {
	res := Result{Path: path}
	f, err := safefile.Read(path, MaxFile)
	if err != nil {
		return res, err
	}
	features, defined, err := codexFeatures(f)
	if err != nil {
		return res, err
	}
	if features[codexFeatureNow] == false {
		return res, fmt.Errorf("%s turns Codex's hooks off ([features] %s = false): change it yourself to use memmesh's hooks", path, codexFeatureNow)
	}
	if featureState(features) == FeatureOn {
		return res, nil
	}
	text, err := withFeatureLine(string(f.Data), defined)
	if err != nil {
		return res, fmt.Errorf("%s: %w: left alone; add %s = true under [features] yourself", path, err, codexFeature)
	}
	if err := checkFeatureEdit(f, text); err != nil {
		return res, err
	}
	res.Changed, res.Events = true, []string{"[features] " + codexFeature}
	res.Backup, err = f.Replace([]byte(text), "", now)
	return res, err
}

// withFeatureLine returns the TOML text with codex_hooks = true under
// [features]: its line changed if it has one, else a line added after the
// table's header, else the table added at the end, unless the text defines
// features otherwise (dotted keys, an inline table).
func withFeatureLine(text string, defined bool) (string, error) {
	eol := "\n"
	if strings.Contains(text, "\r\n") {
		eol = "\r\n"
	}
	line := codexFeature + " = true"
	lines := strings.SplitAfter(text, "\n")
	header := -1
	for i, l := range lines {
		name, isHeader := tableHeader(l)
		if header >= 0 && isHeader {
			break // the end of [features]
		}
		if header < 0 {
			if isHeader && name == "features" {
				header = i
			}
			continue
		}
		if key, _, ok := strings.Cut(l, "="); ok && strings.TrimSpace(key) == codexFeature {
			lines[i] = line + lineEnd(l)
			return strings.Join(lines, ""), nil
		}
	}
	if header >= 0 {
		end := lineEnd(lines[header])
		if end == "" { // the header ends the file
			lines[header] += eol
			end = eol
		}
		lines = append(lines[:header+1], append([]string{line + end}, lines[header+1:]...)...)
		return strings.Join(lines, ""), nil
	}
	if defined {
		return "", errors.New("features is defined without a [features] header")
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += eol
	}
	if text != "" {
		text += eol
	}
	return text + "[features]" + eol + line + eol, nil
}

// tableHeader reports whether a line opens a table ([name] or [[name]])
// and its name.
func tableHeader(line string) (string, bool) {
	l := strings.TrimSpace(line)
	if !strings.HasPrefix(l, "[") {
		return "", false
	}
	if i := strings.Index(l, "#"); i >= 0 {
		l = strings.TrimSpace(l[:i])
	}
	l = strings.Trim(l, "[]")
	return strings.TrimSpace(l), true
}

func lineEnd(l string) string {
	switch {
	case strings.HasSuffix(l, "\r\n"):
		return "\r\n"
	case strings.HasSuffix(l, "\n"):
		return "\n"
	}
	return ""
}

// checkFeatureEdit checks that the edited text decodes with the feature on
// and everything else as before: a text edit cannot have lost a setting.
func checkFeatureEdit(f safefile.File, text string) error {
	var before, after map[string]any
	toml.Decode(string(f.Data), &before) // decoded once already
	if _, err := toml.Decode(text, &after); err != nil {
		return fmt.Errorf("%s: turning Codex's hooks on would break it (%w): left alone; add %s = true under [features] yourself", f.Path, err, codexFeature)
	}
	features, _ := after["features"].(map[string]any)
	if features[codexFeature] != true {
		return fmt.Errorf("%s: could not turn Codex's hooks on: left alone; add %s = true under [features] yourself", f.Path, codexFeature)
	}
	delete(features, codexFeature)
	if len(features) == 0 {
		delete(after, "features")
	}
	if before == nil {
		before = map[string]any{}
	}
	if bf, ok := before["features"].(map[string]any); ok {
		delete(bf, codexFeature)
		if len(bf) == 0 {
			delete(before, "features")
		}
	}
	if !reflect.DeepEqual(before, after) {
		return fmt.Errorf("%s: turning Codex's hooks on would change other settings: left alone; add %s = true under [features] yourself", f.Path, codexFeature)
	}
	return nil
}
