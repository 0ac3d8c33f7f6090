package projmap

import "testing"

func TestLookup(t *testing.T) {
	maps := []Mapping{
		{Glob: "/home/me/work", Namespace: "work"},
		{Glob: "/home/me/work/acme", Namespace: "acme"},
		{Glob: "/home/me/src/*/backend", Namespace: "backend"},
		{Glob: "/home/me/work", Namespace: "work2"}, // added later: wins over the first
	}
	for dir, want := range map[string]string{
		"/home/me/work":                  "work2",
		"/home/me/work/other/pkg":        "work2",
		"/home/me/work/acme":             "acme",
		"/home/me/work/acme/cmd/server":  "acme",
		"/home/me/src/shop/backend/api":  "backend",
		"/home/me/src/shop/frontend/app": "",
		"/tmp":                           "",
	} {
		if got, _ := Lookup(maps, dir); got != want {
			t.Errorf("%s: %q, want %q", dir, got, want)
		}
	}
}

func TestLookupRemote(t *testing.T) {
	maps := []Mapping{
		{Glob: "/home/me/work", Namespace: "work"},
		{Remote: "github.com/acme/app", Namespace: "app"},
		{Remote: "github.com/Acme/App", Namespace: "app2"}, // later: wins
	}
	if !HasRemote(maps) || HasRemote(maps[:1]) {
		t.Errorf("HasRemote is wrong")
	}
	if got, ok := LookupRemote(maps, "github.com/acme/app"); !ok || got != "app2" {
		t.Errorf("LookupRemote = %q %v, want app2", got, ok)
	}
	if _, ok := LookupRemote(maps, "github.com/acme/other"); ok {
		t.Errorf("an unmapped remote matched")
	}
	if _, ok := LookupRemote(maps, ""); ok {
		t.Errorf("no remote matched")
	}
	// A remote mapping has no glob: it never matches a directory.
	if got, ok := Lookup(maps, "/"); ok {
		t.Errorf("Lookup(/) = %q, want no match", got)
	}
}

func TestRemoteNamespace(t *testing.T) {
	for remote, want := range map[string]string{
		"github.com/Acme/App":       "acme-app",
		"gitlab.com/group/sub/proj": "sub-proj",
		"example.org/tool":          "tool",
		"/srv/git/team/repo":        "team-repo",
		"":                          "",
		"repo":                      "",
	} {
		if got := RemoteNamespace(remote); got != want {
			t.Errorf("RemoteNamespace(%q) = %q, want %q", remote, got, want)
		}
	}
}
