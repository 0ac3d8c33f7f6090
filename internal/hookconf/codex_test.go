package hookconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnableCodexHooks: codex_hooks = true lands under [features] with
// one line added or changed, the user's comments, order and other
// settings kept, and the file backed up; a file where hooks are on
// already is not touched.
func TestEnableCodexHooks(t *testing.T) {
	for _, tc := range []struct {
		name, before, after string
	}{
		{"no file", "", "[features]\ncodex_hooks = true\n"},
		{
			"no features table",
			"# my codex\nmodel = \"gpt-5\" # the best\n\n[mcp_servers.memmesh]\ncommand = \"memmesh\"\nargs = [\"mcp\"]\n",
			"# my codex\nmodel = \"gpt-5\" # the best\n\n[mcp_servers.memmesh]\ncommand = \"memmesh\"\nargs = [\"mcp\"]\n\n[features]\ncodex_hooks = true\n",
		},
		{
			"features with other keys",
			"model = \"o3\"\n\n[features] # experiments\nweb_search_request = true\n\n[features.sub]\nx = 1\n",
			"model = \"o3\"\n\n[features] # experiments\ncodex_hooks = true\nweb_search_request = true\n\n[features.sub]\nx = 1\n",
		},
		{
			"turned off with the old key",
			"[features]\n# not yet\ncodex_hooks   =   false\nother = true\n",
			"[features]\n# not yet\ncodex_hooks = true\nother = true\n",
		},
		{"header ends the file", "[features]", "[features]\ncodex_hooks = true\n"},
		{"no final newline", "model = \"o3\"", "model = \"o3\"\n\n[features]\ncodex_hooks = true\n"},
		{"windows line ends", "model = \"o3\"\r\n[features]\r\nx = 1\r\n", "model = \"o3\"\r\n[features]\r\ncodex_hooks = true\r\nx = 1\r\n"},
		{"already on", "[features]\ncodex_hooks = true # mine\n", ""},
		{"on with the later key", "[features]\nhooks = true\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".codex", "config.toml")
			if tc.name != "no file" {
				write(t, path, tc.before, 0o600)
			}
			res, err := EnableCodexHooks(path, now)
			if err != nil {
				t.Fatal(err)
			}
			if tc.after == "" {
				if res.Changed || read(t, path) != tc.before || len(backups(t, path)) != 0 {
					t.Fatalf("result %+v: a file with hooks on was touched", res)
				}
				return
			}
			if got := read(t, path); got != tc.after {
				t.Fatalf("got:\n%q\nwant:\n%q", got, tc.after)
			}
			if state, err := CodexFeature(path); state != FeatureOn || err != nil {
				t.Fatalf("state %s, %v", state, err)
			}
			if tc.name != "no file" {
				if got := backups(t, path); len(got) != 1 || read(t, got[0]) != tc.before {
					t.Fatalf("backups %v: want the original", got)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Fatalf("mode %v: want 0600 kept", fi.Mode())
				}
			}
			again, err := EnableCodexHooks(path, now)
			if err != nil || again.Changed {
				t.Fatalf("second time %+v, %v: want no change", again, err)
			}
		})
	}
}

// TestEnableCodexHooksRefused: a config that is not TOML, one where the
// user turned hooks off with the later key, or one whose features are not
// a [features] table is left alone.
func TestEnableCodexHooksRefused(t *testing.T) {
	for name, content := range map[string]string{
		"not TOML":              "model = \n[features\n",
		"turned off":            "[features]\nhooks = false\n",
		"inline table":          "features = { other = true }\n",
		"dotted keys":           "features.other = true\n[tui]\nx = 1\n",
		"array of tables":       "[[features]]\nx = 1\n",
		"quoted header":         "[\"features\"]\nx = 1\n",
		"header in a multiline": "notes = \"\"\"\n[features]\n\"\"\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			write(t, path, content, 0o644)
			_, err := EnableCodexHooks(path, now)
			if name == "header in a multiline" {
				// The text edit lands in the string: the check sees the
				// feature still off and refuses.
				if err == nil {
					t.Fatalf("edited inside a string:\n%s", read(t, path))
				}
			} else if err == nil {
				t.Fatalf("took it:\n%s", read(t, path))
			}
			if !strings.Contains(err.Error(), "left alone") && !strings.Contains(err.Error(), "yourself") {
				t.Errorf("error %q says not what to do", err)
			}
			if read(t, path) != content || len(backups(t, path)) != 0 {
				t.Fatal("refused file changed or backed up")
			}
		})
	}
}
