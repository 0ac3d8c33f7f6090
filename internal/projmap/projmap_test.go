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
