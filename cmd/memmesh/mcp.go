package main

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/mark3labs/mcp-go/server"
	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/mcp"
	"github.com/memmesh/memmesh/mcp/servermemory"
	"github.com/memmesh/memmesh/web"
)

// mcpProfile is a set of tools `memmesh mcp --profile` can serve over the
// daemon's client. An empty namespace means the profile's default.
type mcpProfile func(c *web.Client, ns string, log *slog.Logger) *server.MCPServer

// mcpProfiles are the profiles by name.
var mcpProfiles = map[string]mcpProfile{
	"memmesh": func(c *web.Client, ns string, log *slog.Logger) *server.MCPServer {
		return mcp.NewServer(c, mcp.Options{Namespace: ns, Logger: log, Version: api.Version()})
	},
	"server-memory": func(c *web.Client, ns string, log *slog.Logger) *server.MCPServer {
		return servermemory.New(c, mcp.NewCallers(), servermemory.Options{Namespace: ns, Logger: log})
	},
}

// toolsHelp lists each profile's tools with the first sentence of their
// description, read from the servers themselves so that the help cannot
// drift from what agents are offered.
func toolsHelp() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(mcpProfiles)) {
		// Listing tools calls no handler: the servers need no daemon.
		tools := mcpProfiles[name](nil, "", slog.New(slog.DiscardHandler)).ListTools()
		fmt.Fprintf(&b, "\nTools of %s:\n", name)
		for _, tool := range slices.Sorted(maps.Keys(tools)) {
			fmt.Fprintf(&b, "  %-20s %s\n", tool, firstSentence(tools[tool].Tool.Description))
		}
	}
	return b.String()
}

// firstSentence is the start of a description up to its first full stop.
func firstSentence(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

func (a *app) mcpCommand() *cobra.Command {
	var ns, profile string
	profiles := strings.Join(slices.Sorted(maps.Keys(mcpProfiles)), ", ")
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP over stdio, for an agent (Claude Code, Cursor, Codex, ...)",
		Long: `Serve the Model Context Protocol on standard input and output, for an MCP
client that starts memmesh as a subprocess. It talks to the home's daemon and
starts it when it is not running, so every agent on the machine shares one
node. Standard output carries protocol messages only; logs go to standard
error.

Profiles:
  memmesh        memmesh's tools, resources and prompts (default)
  server-memory  the tools of the official MCP memory server
                 (@modelcontextprotocol/server-memory), kept in the
                 namespace "server-memory" unless --ns says otherwise
`,
		Example: `  memmesh mcp
  memmesh mcp --ns backend
  memmesh mcp --profile server-memory`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			newServer, ok := mcpProfiles[profile]
			if !ok {
				return usagef("--profile %q: use %s", profile, profiles)
			}
			if ns == "" && profile == "memmesh" {
				ns = a.cfg.Namespace
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := a.logger().With("component", "mcp")
			c, err := a.client(ctx)
			if errors.Is(err, web.ErrTimeout) {
				// A daemon holds the home but does not answer: serve anyway,
				// so that the agent's session starts; each call says why it
				// fails until the daemon answers again.
				log.Warn("the daemon does not answer; tool calls fail until it does", "err", err)
				c, err = newClient(a.home)
			}
			if err != nil {
				return err
			}
			if err := mcp.ServeStdio(ctx, newServer(c, ns, log), a.stdin, a.stdout, log); err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		},
	}
	// The tool list is made when help is asked for, not at every start.
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		long := c.Long
		c.Long += toolsHelp()
		c.Root().HelpFunc()(c, args)
		c.Long = long
	})
	cmd.Flags().StringVar(&ns, "ns", "", "namespace of the tools, resources and prompts (default: the configured namespace; for server-memory, \"server-memory\")")
	cmd.Flags().StringVar(&profile, "profile", "memmesh", "tools to serve: "+profiles)
	return cmd
}
