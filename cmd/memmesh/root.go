package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/web"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks an error in how a command was called (exit code 2).
type usageError struct{ error }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// app holds what every command shares.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	home           string
	format         string
	json           bool // --json: --format json
	cfg            Config
}

// run executes the CLI and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if command := hookCommand(args); command != "" {
		return runHook(ctx, command, args, stdin, stdout, stderr)
	}
	return runCLI(ctx, args, stdin, stdout, stderr)
}

// runCLI runs one command and returns its exit code.
func runCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var exit exitStatus
	if errors.As(err, &exit) { // the command said why itself
		return int(exit)
	}
	fmt.Fprintf(stderr, "memmesh: %s\n", inert.Text(oneLine(err)))
	var uerr usageError
	if errors.As(err, &uerr) || strings.HasPrefix(err.Error(), "unknown command") {
		return exitUsage
	}
	return exitError
}

// oneLine keeps an error message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "memmesh",
		Short: "Shared, peer-synced memory for AI coding agents",
		Long: `memmesh keeps what your AI coding agents learn (decisions, conventions,
bug fixes, pitfalls) and gives it back when it matters.

A node runs on every machine ('memmesh serve'); every other command talks to it
and starts it in the background when it is not running, and fails with the
daemon's pid and log when it shows no sign of life for 10 s (the environment
variable MEMMESH_CLIENT_TIMEOUT, e.g. 30s, changes that). Output is readable text
on a terminal and JSON when piped; choose with --format (or --json). Control
and bidi characters that memories hold are shown visibly (ESC as ␛), never
sent to the terminal; JSON escapes them.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.setup(cmd)
		},
	}
	root.PersistentFlags().StringVar(&a.home, "home", "", "memmesh home directory (env MEMMESH_HOME, default ~/.memmesh)")
	root.PersistentFlags().StringVar(&a.format, "format", "", "output format: human (or markdown), json or brief (default: human on a terminal, json otherwise)")
	root.PersistentFlags().BoolVar(&a.json, "json", false, "same as --format json")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", quotedFlagError(err), cmd.CommandPath())}
	})
	root.AddCommand(
		a.serveCommand(), a.stopCommand(),
		a.captureCommand(), a.searchCommand(), a.showCommand(), a.listCommand(),
		a.updateCommand(), a.forgetCommand(), a.restoreCommand(), a.deleteCommand(), a.purgeCommand(),
		a.statsCommand(), a.exportCommand(), a.importCommand(), a.versionCommand(),
		a.mcpCommand(), a.httpTokenCommand(), a.uiCommand(),
		a.idCommand(), a.inviteCommand(), a.joinCommand(), a.devicesCommand(), a.revokeCommand(),
		a.peersCommand(), a.meshStatusCommand(), a.nsCommand(),
		a.linkCommand(), a.unlinkCommand(), a.invalidateCommand(), a.graphCommand(), a.impactCommand(), a.symbolsCommand(), a.doctorCommand(), a.mapCommand(), a.contextCommand(), a.staleCommand(), a.lifecycleCommand(), a.compactCommand(), a.analyzeCommand(), a.reflectCommand(), a.sessionsCommand(), a.hooksCommand(), a.bridgeCommand(), a.embedCommand(),
		a.benchCommand(),
	)
	return root
}

// quotedFlagError returns err, pflag's error about a flag's value or an
// unknown flag, with the value or name quoted as any input is (api.Echo):
// pflag quotes them whole.
func quotedFlagError(err error) error {
	var invalid *pflag.InvalidValueError
	var unknown *pflag.NotExistError
	switch {
	case errors.As(err, &invalid):
		return fmt.Errorf("invalid argument %q for --%s: %w", api.Echo(invalid.GetValue()), invalid.GetFlag().Name, invalid.Unwrap())
	case errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() == "":
		return fmt.Errorf("unknown flag: --%s", api.Echo(unknown.GetSpecifiedName()))
	}
	return err
}

// setup resolves the home, the output format and the config.
func (a *app) setup(cmd *cobra.Command) error {
	if a.home == "" {
		a.home = os.Getenv("MEMMESH_HOME")
	}
	if a.home == "" {
		a.home = defaultHome()
	}
	if a.json {
		if a.format != "" && a.format != "json" {
			return usagef("--json and --format %s do not go together", a.format)
		}
		a.format = "json"
	}
	switch a.format {
	case "":
		a.format = "json"
		if f, ok := a.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			a.format = "human"
		}
	case "human", "json", "brief":
	case "markdown": // the human form of a context brief is Markdown
		a.format = "human"
	default:
		return usagef("--format %q: use human (or markdown), json or brief", a.format)
	}
	cfg, err := loadConfig(a.home)
	if err != nil {
		return err
	}
	a.cfg = cfg
	return nil
}

// client connects to the home's daemon, starting it when needed.
func (a *app) client(ctx context.Context) (*web.Client, error) {
	return connect(ctx, a.home)
}

// logger returns the daemon's logger at the configured level. Its records
// lose their secrets (requests it refuses quote what they sent).
func (a *app) logger() *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(a.cfg.LogLevel))
	return slog.New(secrets.ScrubLogs(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level})))
}

// args returns a cobra argument check whose failures are usage errors.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())}
		}
		return nil
	}
}
