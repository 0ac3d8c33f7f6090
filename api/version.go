package api

import "runtime/debug"

// version is set at build time with
// -ldflags "-X github.com/memmesh/memmesh/api.version=v1.2.3".
var version string

// Version is memmesh's version: the one set at build time, else the module
// version the binary was built from, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
