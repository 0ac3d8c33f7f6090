package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/mcp"
)

func (a *app) httpTokenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "http-token",
		Short: "Print the bearer token that MCP over HTTP requires",
		Long: `Print the token that every request to the daemon's MCP endpoint over HTTP
(http://127.0.0.1:7421/mcp) must carry in the header "Authorization: Bearer
TOKEN", alone on one line whatever --format says, for a client's
configuration. It is kept in the home's http.token (mode 0600, made at the
first start), which other users of the machine cannot read. For a new token,
delete that file and restart the daemon ('memmesh stop').`,
		Example: `  claude mcp add --transport http memmesh http://127.0.0.1:7421/mcp --header "Authorization: Bearer $(memmesh http-token)"
  export MEMMESH_HTTP_TOKEN="$(memmesh http-token)"   # for Codex's bearer_token_env_var`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(a.home, 0o700); err != nil {
				return fmt.Errorf("create home: %w", err)
			}
			tok, err := mcp.LoadToken(filepath.Join(a.home, mcp.TokenFile))
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, tok)
			return nil
		},
	}
}
