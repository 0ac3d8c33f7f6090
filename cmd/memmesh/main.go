// Command memmesh is the memmesh CLI and daemon: `memmesh serve` runs the
// node; every other command talks to it over its unix socket, starting it in
// the background when it is not running.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
