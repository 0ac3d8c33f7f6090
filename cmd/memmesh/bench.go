package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/internal/sibling"
)

// benchExecutable is the command that `memmesh bench` runs.
const benchExecutable = "memmesh-bench"

// benchInstall says how to get memmesh-bench.
const benchInstall = "install it from a clone of memmesh with 'go install ./cmd/memmesh-bench'"

// exitStatus is an exit code whose reason the command has already
// written, such as memmesh-bench's own.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func (a *app) benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench SUBCOMMAND [flags]",
		Short: "Measure retrieval quality and performance on real nodes (runs memmesh-bench)",
		Long: `Measure memmesh on real nodes started for the purpose, removed afterwards;
the running daemon and its home are not touched.

'memmesh bench ARGS...' runs 'memmesh-bench ARGS...', found beside this
executable, else on PATH, with this command's input, output, signals and
exit code. The benchmarks are an executable of their own so that what only
they use (a lossy network, a synthetic corpus) stays out of the daemon.
Install it from a clone of memmesh:

  go install ./cmd/memmesh-bench

The benchmarks that start daemons (idle, startup, sessions) run the memmesh
executable beside memmesh-bench, else memmesh on PATH, or the one their
--memmesh flag names.

'memmesh bench SUBCOMMAND --help' shows a benchmark's help.`,
		Example: `  memmesh bench capture --json
  memmesh bench locomo --data ./locomo`,
		DisableFlagParsing: true, // every flag is memmesh-bench's
		// Neither a home nor a config: memmesh-bench needs none.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				return a.benchHelp(cmd)
			}
			return runBench(args, a.stdin, a.stdout, a.stderr)
		},
	}
	// The flags memmesh would list are not memmesh-bench's.
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) { a.benchHelp(cmd) })
	return cmd
}

// benchHelp prints bench's help, says which memmesh-bench it runs, and
// adds that one's list of benchmarks.
func (a *app) benchHelp(cmd *cobra.Command) error {
	fmt.Fprintf(a.stdout, "%s\n\nUsage:\n  %s\n\nExamples:\n%s\n", cmd.Long, cmd.UseLine(), cmd.Example)
	path, err := sibling.Find(benchExecutable)
	if err != nil {
		fmt.Fprintf(a.stdout, "\nmemmesh-bench: not installed (%v): %s.\n", err, benchInstall)
		return nil
	}
	fmt.Fprintf(a.stdout, "\nmemmesh-bench: %s\n\n", path)
	return runBench([]string{"--help"}, a.stdin, a.stdout, a.stderr)
}

// runBench runs memmesh-bench with args and the streams given, passes on
// the signals memmesh receives (a terminal's Ctrl-C reaches both already;
// memmesh-bench stops its benchmark at the first), and returns its exit
// code as an exitStatus when it is not 0.
func runBench(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	path, err := sibling.Find(benchExecutable)
	if err != nil {
		return fmt.Errorf("bench runs memmesh-bench, and there is %w: %s", err, benchInstall)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	child := exec.Command(path, args...)
	child.Stdin, child.Stdout, child.Stderr = stdin, stdout, stderr
	if err := child.Start(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				child.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = child.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return err // nil, or the streams failed
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitStatus(128 + int(ws.Signal())) // as a shell reports it
	}
	return exitStatus(exit.ExitCode())
}
