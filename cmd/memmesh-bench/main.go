// Command memmesh-bench measures memmesh on real nodes started for the
// purpose; `memmesh bench` runs it. It is an executable of its own so that
// the benchmarks' test-only packages (internal/faultnet's lossy network,
// internal/corpus's synthetic memories) stay out of the daemon. The
// benchmarks that start daemons run the memmesh executable beside this one,
// else memmesh on PATH, or the one --memmesh names.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/memmesh/memmesh/internal/inert"
)

// usage marks an error in how a command was called: exit status 2, as
// memmesh's.
type usage struct{ error }

// misuse is a usage error that points to cmd's help.
func misuse(cmd *cobra.Command, err error) error {
	return usage{fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())}
}

// noArgs refuses arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return misuse(cmd, err)
	}
	return nil
}

// app holds what every command shares.
type app struct {
	stdout, stderr io.Writer
	format         string
	json           bool   // --json; after setup, whether reports print as JSON
	cpuProfile     string // --cpuprofile
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run runs one command and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "memmesh-bench: %s\n", inert.Text(strings.Join(strings.Fields(err.Error()), " ")))
	if errors.As(err, new(usage)) || strings.HasPrefix(err.Error(), "unknown command") {
		return 2
	}
	return 1
}

// setup decides the output: JSON with --json or --format json, a table
// with --format human, else a table on a terminal and JSON otherwise.
func (a *app) setup() error {
	switch {
	case a.format == "json" || a.format == "" && a.json:
		a.json = true
	case a.format == "human" && !a.json:
	case a.format == "":
		f, ok := a.stdout.(*os.File)
		a.json = !ok || !term.IsTerminal(int(f.Fd()))
	default:
		return usage{fmt.Errorf("--format %q: use human or json, or --json alone", a.format)}
	}
	return nil
}
