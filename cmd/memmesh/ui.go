package main

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"
)

// openTimeout bounds the wait for the browser opener.
const openTimeout = 10 * time.Second

func (a *app) uiCommand() *cobra.Command {
	var printURL bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the web dashboard in the browser, logged in",
		Long: `Open the daemon's web dashboard (http://127.0.0.1:7421/ by default, beside
/mcp; http in config.toml or serve --http moves it) in the browser, logged in: the daemon makes a one-time link (valid for a
minute, used once) that exchanges itself for a session cookie (HttpOnly,
SameSite=Strict, 12 hours). Sessions live in the daemon's memory: restarting
the daemon logs every browser out. With --print-url, or when no browser
opener (xdg-open, open) is found, it prints the link instead.

The dashboard serves this machine only (loopback, Host and Origin checked);
it is off with serve --http "" or [ui] enabled = false in config.toml.`,
		Example: `  memmesh ui
  memmesh ui --print-url`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			link, err := c.UILogin(cmd.Context())
			if err != nil {
				return err
			}
			if !printURL {
				if opener := browserOpener(); opener != "" {
					ctx, cancel := context.WithTimeout(cmd.Context(), openTimeout)
					defer cancel()
					if err := exec.CommandContext(ctx, opener, link.URL).Run(); err == nil {
						// An opener may succeed without a browser to open:
						// the link stays usable once, for a minute.
						fmt.Fprintf(a.stdout, "Opened the dashboard in the browser. If it did not open, visit (once, within a minute):\n%s\n", link.URL)
						return nil
					}
				}
			}
			fmt.Fprintln(a.stdout, link.URL)
			return nil
		},
	}
	cmd.Flags().BoolVar(&printURL, "print-url", false, "print the one-time login link instead of opening a browser")
	return cmd
}

// browserOpener is the command that opens a URL in the user's browser, or
// "" when there is none.
func browserOpener() string {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}
