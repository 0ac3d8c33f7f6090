package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/memmesh/memmesh/internal/projmap"
)

// TestMapChoosesNamespace: a mapping sets the namespace of commands run
// under it; a project's .memmesh.toml and the environment still come first.
func TestMapChoosesNamespace(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	sub := filepath.Join(proj, "cmd", "tool")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	glob, err := cleanGlob(proj)
	if err != nil {
		t.Fatal(err)
	}
	if err := projmap.Save(home, []projmap.Mapping{{Glob: glob, Namespace: "acme"}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMMESH_NAMESPACE", "")
	t.Chdir(sub)
	if cfg, err := loadConfig(home); err != nil || cfg.Namespace != "acme" {
		t.Fatalf("under the mapping: %q %v, want acme", cfg.Namespace, err)
	}
	if err := os.WriteFile(filepath.Join(proj, projectConfigFile), []byte(`namespace = "own"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := loadConfig(home); cfg.Namespace != "own" {
		t.Fatalf("with a project file: %q, want own", cfg.Namespace)
	}
	t.Setenv("MEMMESH_NAMESPACE", "env")
	if cfg, _ := loadConfig(home); cfg.Namespace != "env" {
		t.Fatalf("with the environment: %q, want env", cfg.Namespace)
	}
	if _, err := cleanGlob("/x/[unclosed"); err == nil {
		t.Fatal("a bad glob was accepted")
	}
}

// TestMapByRemote: a working tree matched by no glob takes the namespace
// of its remote's mapping, whatever its path; a glob mapping comes first.
func TestMapByRemote(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "git@github.com:Acme/App.git"}} {
		if out, err := exec.Command("git", append([]string{"-C", proj}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	sub := filepath.Join(proj, "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	maps := []projmap.Mapping{{Remote: "github.com/Acme/App", Namespace: "app"}}
	if err := projmap.Save(home, maps); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMMESH_NAMESPACE", "")
	t.Chdir(sub)
	if cfg, err := loadConfig(home); err != nil || cfg.Namespace != "app" {
		t.Fatalf("in a tree of the mapped remote: %q %v, want app", cfg.Namespace, err)
	}
	glob, err := cleanGlob(proj)
	if err != nil {
		t.Fatal(err)
	}
	if err := projmap.Save(home, append(maps, projmap.Mapping{Glob: glob, Namespace: "byglob"})); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := loadConfig(home); cfg.Namespace != "byglob" {
		t.Fatalf("with a glob mapping too: %q, want byglob", cfg.Namespace)
	}
}
