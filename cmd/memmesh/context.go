package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/web"
)

func (a *app) contextCommand() *cobra.Command {
	var req api.ContextRequest
	var hook bool
	cmd := &cobra.Command{
		Use:   "context [QUERY]",
		Short: "Print the brief an agent should read at the start of a session or task",
		Long: `Print the context brief of a namespace (by default the one of the working
directory: see 'memmesh map'), cut to a token budget counted with a real
tokenizer on the text printed: unresolved sync conflicts, cycles merged into
acyclic relations, open tasks, decisions, conventions and preferences, the
other memories by importance (near duplicates shown once) and stale memories
to double-check. With a QUERY (a task or an agent's prompt) the brief holds
only the memories that match it well, within 600 tokens unless --budget says
otherwise, and nothing when none does. The human form is Markdown
(--format markdown), ready to hand to an agent; --format json gives the
structure, its tokens counted in that form.

--hook serves Claude Code's and Codex's SessionStart and UserPromptSubmit
hooks: it reads the hook's JSON on standard input and prints the answer the
hook expects, with the brief (SessionStart, or no input) or the memories
matching the prompt (UserPromptSubmit) as additional context. It always
succeeds: when there is nothing to add, or on any error (said on standard
error), the context is empty.`,
		Example: `  memmesh context
  memmesh context --ns backend --budget 1000 --format markdown
  memmesh context --format json
  memmesh context "add a postgres migration for the invoices table"
  memmesh context --hook            # in a SessionStart or UserPromptSubmit hook`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if req.Namespace == "" {
				req.Namespace = a.cfg.Namespace
			}
			if len(argv) == 1 {
				req.Query = argv[0]
			}
			req.Format = api.FormatMarkdown
			if a.format == "json" && !hook {
				req.Format = api.FormatJSON
			}
			if hook {
				return a.hook(cmd, req)
			}
			b, err := a.brief(cmd, req)
			if err != nil {
				return err
			}
			if req.Query == "" {
				defer a.hintIfEmpty(cmd.Context(), b.Namespace, b.Empty())
			}
			if a.format == "json" {
				_, err := fmt.Fprintf(a.stdout, "%s\n", b.JSON())
				return err
			}
			return a.emit(b, func(w io.Writer) { io.WriteString(w, b.Markdown()) }, func(w io.Writer) {
				for _, items := range [][]api.BriefItem{b.Matches, b.Conflicts, b.FromPeers, b.Decisions, b.Tasks, b.Active, b.StaleAlerts} {
					for _, it := range items {
						fmt.Fprintln(w, it.ID)
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&req.Namespace, "ns", "", "namespace (default: the working directory's)")
	intRangeVar(cmd.Flags(), &req.Budget, "budget", 0, 100, 100_000, "tokens the brief may use (100 to 100000; default 2000, or 600 with a query or a prompt)")
	cmd.Flags().BoolVar(&hook, "hook", false, "answer a SessionStart or UserPromptSubmit hook (Claude Code, Codex) whose JSON is on standard input; on any error, say why on stderr and still succeed")
	return cmd
}

func (a *app) brief(cmd *cobra.Command, req api.ContextRequest) (api.Brief, error) {
	return call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.Brief, error) { return c.Context(ctx, req) })
}

// hookInput is what Claude Code and Codex write on a command hook's
// standard input (the fields memmesh reads).
type hookInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Prompt         string `json:"prompt"`
}

// The hook events memmesh answers.
const (
	eventSessionStart     = "SessionStart"
	eventUserPromptSubmit = "UserPromptSubmit"
)

// maxHookInput bounds the hook's input read: a prompt and its paths.
const maxHookInput = 1 << 20

// hookWait bounds how long the hook waits for its input: an agent writes
// it at once; standard input left open by someone else gives nothing.
const hookWait = 200 * time.Millisecond

// readHookInput reads a hook's JSON from r, at most maxHookInput bytes
// within hookWait; a terminal is not read. Input that is absent, late,
// too long or not JSON is a SessionStart.
func readHookInput(r io.Reader) (hookInput, []byte) {
	in := hookInput{HookEventName: eventSessionStart}
	if r == nil {
		return in, nil
	}
	if f, ok := r.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return in, nil
	}
	got := make(chan []byte, 1)
	go func() {
		data, _ := io.ReadAll(io.LimitReader(r, maxHookInput+1))
		got <- data
	}()
	var data []byte
	select {
	case data = <-got:
	case <-time.After(hookWait):
		return in, nil
	}
	if len(data) > maxHookInput {
		return in, nil
	}
	if err := json.Unmarshal(data, &in); err != nil {
		in = hookInput{HookEventName: eventSessionStart}
	}
	return in, data
}

// contextEvent is the event `context --hook` answers: UserPromptSubmit,
// or SessionStart for any other.
func (in hookInput) contextEvent() string {
	if in.HookEventName == eventUserPromptSubmit {
		return eventUserPromptSubmit
	}
	return eventSessionStart
}

// hook answers a hook: the brief for SessionStart, the memories that
// match the prompt for UserPromptSubmit. A hook that fails can block an
// agent's session or prompt, so an error is reported on standard error
// and the hook still succeeds, with no context. The Markdown is inert.
func (a *app) hook(cmd *cobra.Command, req api.ContextRequest) error {
	in, _ := readHookInput(a.stdin)
	in.HookEventName = in.contextEvent()
	if in.HookEventName == eventUserPromptSubmit {
		req.Query = in.Prompt
		if strings.TrimSpace(req.Query) == "" {
			return writeHook(a.stdout, in.HookEventName, "")
		}
	}
	b, err := a.brief(cmd, req)
	if err != nil {
		fmt.Fprintf(a.stderr, "memmesh: %s: %s\n", hookNothing(in.HookEventName), inert.Text(err.Error()))
		return writeHook(a.stdout, in.HookEventName, "")
	}
	text := b.Markdown()
	if req.Query != "" && b.Empty() {
		text = "" // nothing matches the prompt well: add nothing
	}
	return writeHook(a.stdout, in.HookEventName, text)
}

// hookNothing says that a hook adds no context.
func hookNothing(event string) string {
	if event == eventUserPromptSubmit {
		return "no memories for this prompt"
	}
	return "no brief for this session"
}

// writeHook writes a hook's answer with the given context, made inert:
// the agent reads it as Markdown.
func writeHook(w io.Writer, event, text string) error {
	out := map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": inert.Text(text)}}
	return writeJSON(w, out, "")
}

// hookDeadline bounds `memmesh context --hook`, within the 2 s an agent's
// session may wait for it.
const hookDeadline = 1500 * time.Millisecond

// ingestHookDeadline bounds `memmesh sessions ingest --hook`, which only
// asks the daemon to read a transcript later.
const ingestHookDeadline = 200 * time.Millisecond

// The commands that answer hooks.
const (
	hookContext = "context"
	hookIngest  = "sessions ingest"
)

// hookCommand names the hook command args run (hookContext or
// hookIngest), or "": the first arguments that are no flags (nor a
// global flag's value) name the command, and --hook is set.
func hookCommand(args []string) string {
	var words []string
	hook := false
	for i := 0; i < len(args); i++ {
		switch arg := args[i]; {
		case arg == "--home" || arg == "--format" || arg == "--client":
			i++ // their value
		case arg == "--hook" || arg == "--hook=true":
			hook = true
		case !strings.HasPrefix(arg, "-"):
			words = append(words, arg)
		}
	}
	switch {
	case !hook:
		return ""
	case len(words) > 0 && words[0] == hookContext:
		return hookContext
	case len(words) > 1 && words[0]+" "+words[1] == hookIngest:
		return hookIngest
	}
	return ""
}

// runHook runs a hook command so that it always succeeds within its
// deadline, whatever goes wrong (flags, config, home, daemon stopped,
// absent or slow to start): it then says why on standard error, and
// `context --hook` prints an answer with no context. An agent's session
// never waits on memmesh.
func runHook(ctx context.Context, command string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	deadline := hookDeadline
	if command == hookIngest {
		deadline = ingestHookDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	in, data := readHookInput(stdin)
	stdin = bytes.NewReader(data)
	nothing := "transcript not read now"
	if command == hookContext {
		nothing = hookNothing(in.contextEvent())
	}
	var out, errs bytes.Buffer // the command's; read only once it returned
	done := make(chan int, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(&errs, "memmesh: %s: %v\n", nothing, r)
				done <- exitError
			}
		}()
		done <- runCLI(ctx, args, stdin, &out, &errs)
	}()
	select {
	case code := <-done:
		stderr.Write(errs.Bytes())
		if code == exitOK {
			stdout.Write(out.Bytes())
			return exitOK
		}
	case <-ctx.Done():
		fmt.Fprintf(stderr, "memmesh: %s: none came within %s\n", nothing, deadline)
	}
	if command == hookContext {
		writeHook(stdout, in.contextEvent(), "")
	}
	return exitOK
}
