package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/web"
)

// invitePrefix starts every invite token; anything else given to join is
// an address.
const invitePrefix = "mmj1"

// meshFlags are serve's flags for the mesh.
type meshFlags struct {
	listen, advertise, name string
	join                    []string
	off                     bool
}

func (f *meshFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", "", `UDP address of the mesh (env MEMMESH_LISTEN, config listen; default ":7420")`)
	fs.StringVar(&f.advertise, "advertise", "", "host:port the other machines dial (config advertise; default: from --listen, or this machine's private address)")
	fs.StringVar(&f.name, "name", "", "this device's name in the mesh: 1 to 64 printable characters, no secret (env MEMMESH_NAME, config name; default: the hostname)")
	fs.StringArrayVar(&f.join, "join", nil, "host:port of a member to contact at start (repeatable)")
	fs.BoolVar(&f.off, "no-mesh", false, "run without the mesh: memories stay on this machine")
}

// resolve applies the flags over the config.
func (f *meshFlags) resolve(cmd *cobra.Command, cfg Config) (meshConfig, error) {
	fs := cmd.Flags()
	if f.off {
		for _, name := range []string{"listen", "advertise", "join"} {
			if fs.Changed(name) {
				return meshConfig{}, usagef("--no-mesh and --%s do not go together", name)
			}
		}
		return meshConfig{off: true}, nil
	}
	probe, _ := cfg.probeInterval() // checked with the config
	mc := meshConfig{Config: mesh.Config{Listen: cfg.Listen, Advertise: cfg.Advertise, Name: cfg.Name, Join: f.join,
		ProbeInterval: probe, SuspicionMult: cfg.Mesh.SuspicionMult}}
	if fs.Changed("listen") {
		mc.Listen = f.listen
	}
	if fs.Changed("advertise") {
		mc.Advertise = f.advertise
	}
	if fs.Changed("name") {
		mc.Name = f.name
	}
	for flag, addrs := range map[string][]string{"--listen": {f.listen}, "--advertise": {f.advertise}, "--join": f.join} {
		for _, addr := range addrs {
			if err := checkHostPort(addr); addr != "" && err != nil {
				return mc, usagef("%s %q: %v", flag, addr, err)
			}
		}
	}
	mc.required = mc.Listen != ""
	return mc, nil
}

// call connects to the daemon and makes one call; an error of a node that
// runs without the mesh says what to do.
func call[T any](ctx context.Context, a *app, fn func(*web.Client, context.Context) (T, error)) (T, error) {
	c, err := a.client(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	res, err := fn(c, ctx)
	if errors.Is(err, api.ErrNoMesh) {
		err = fmt.Errorf("%w. To use another port: set listen in config.toml, or run 'memmesh stop' and 'memmesh serve --listen :PORT'", err)
	}
	return res, err
}

func (a *app) idCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "id",
		Short: "Print this machine's device id",
		Long: `Print this machine's device id, by which the other machines of the mesh know
it: the base32 SHA-256 of its Ed25519 public key (52 characters).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := call(cmd.Context(), a, (*web.Client).Health)
			if err != nil {
				return err
			}
			line := func(w io.Writer) { fmt.Fprintln(w, h.DeviceID) }
			return a.emit(map[string]string{"device_id": h.DeviceID}, line, line)
		},
	}
}

func (a *app) inviteCommand() *cobra.Command {
	var ttl string
	cmd := &cobra.Command{
		Use:   "invite",
		Short: "Make a one-time token that lets another machine join the mesh",
		Long: `Make a one-time invite token for another of your machines, and run
'memmesh join TOKEN' there. That machine contacts this one at the address the
token holds (UDP, port 7420 by default; it must be reachable from there),
proves the token and receives the list of devices; then memories sync both
ways.

The token works once, only with this machine, and expires after --ttl.`,
		Example: `  memmesh invite
  memmesh invite --ttl 1d`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := api.ParseTTL(ttl)
			if err != nil || d < time.Minute || d > api.MaxInviteTTL {
				return usagef("--ttl %q: give a duration from 1m to 7d, e.g. 30m, 2h or 1d", ttl)
			}
			inv, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.Invitation, error) {
				return c.Invite(ctx, d)
			})
			if err != nil {
				return err
			}
			return a.emit(inv, func(w io.Writer) {
				fmt.Fprintf(w, "Invite token, for one machine, valid until %s:\n\n  %s\n\n", when(inv.Expires), inv.Token)
				fmt.Fprintf(w, "On the other machine, run:\n\n  memmesh join %s\n\n", inv.Token)
				fmt.Fprintf(w, "It will contact this machine at %s (UDP).\n", strings.Join(inv.Addrs, " or "))
			}, func(w io.Writer) { fmt.Fprintln(w, inv.Token) })
		},
	}
	cmd.Flags().StringVar(&ttl, "ttl", "1h", "how long the token stays valid: 1m to 7d (e.g. 30m, 2h, 1d)")
	return cmd
}

func (a *app) joinCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "join TOKEN|ADDR",
		Short: "Join the mesh of your other machines with an invite token",
		Long: `Join a mesh with a token that 'memmesh invite' made on one of its machines.
This machine is added to the mesh's device registry and its memories sync with
every other device's from then on. No private key leaves the machine.

Given host:port instead of a token, contact a member at that address: for a
device that is already in the mesh, e.g. after a member's address changed.`,
		Example: `  memmesh join mmj1ab2cd...
  memmesh join 192.168.1.5:7420`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ref := strings.TrimSpace(argv[0])
			if !strings.HasPrefix(ref, invitePrefix) {
				return a.rejoin(cmd.Context(), ref)
			}
			res, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.JoinResult, error) {
				return c.Join(ctx, ref)
			})
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "Joined the mesh through %s at %s: %d devices. Memories sync from now on; 'memmesh peers' shows how.\n", shortID(res.Inviter), res.Addr, res.Devices)
			}, func(w io.Writer) { fmt.Fprintln(w, res.Inviter) })
		},
	}
}

// rejoin contacts a member of the mesh at addr.
func (a *app) rejoin(ctx context.Context, addr string) error {
	if checkHostPort(addr) != nil {
		return usagef("%q is neither an invite token (%s...) nor a host:port address", addr, invitePrefix)
	}
	k, err := call(ctx, a, func(c *web.Client, ctx context.Context) (int, error) { return c.JoinAddr(ctx, addr) })
	if err != nil {
		return err
	}
	return a.emit(web.RejoinResult{Addr: addr, Contacted: k}, func(w io.Writer) {
		fmt.Fprintf(w, "Contacted the mesh at %s; syncing.\n", addr)
	}, func(w io.Writer) { fmt.Fprintln(w, k) })
}

func (a *app) devicesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List the devices of the mesh, revoked ones included",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			devices, err := call(cmd.Context(), a, (*web.Client).Devices)
			if err != nil {
				return err
			}
			return emitList(a, "devices", devices, func(w io.Writer) {
				printTable(w, devices, "No devices yet: 'memmesh invite' starts a mesh.", "DEVICE\tNAME\tADDED\tREVOKED", func(d api.Device) []any {
					revoked := stamp(d.RevokedAt)
					if d.Revoked() {
						revoked += " by " + shortID(d.RevokedBy)
					}
					if d.Self {
						revoked += "  (this device)"
					}
					return []any{shortID(d.Key), d.Name, stamp(d.AddedAt), revoked}
				})
				printRevocations(w, devices)
			}, func(d api.Device) string { return d.Key + "\t" + d.Name })
		},
	}
}

// printRevocations says, under the device table, which revocations do
// not stand and why, which disputes were settled, and what this machine
// refused of each revoked device's work.
func printRevocations(w io.Writer, devices []api.Device) {
	for _, d := range devices {
		for _, r := range d.Revocations {
			if !r.Stands {
				fmt.Fprintf(w, "%s's revocation of %s does not stand: %s.\n", shortID(r.By), shortID(r.Revokes), r.Why)
			}
		}
		if f := d.Refused; f != nil {
			fmt.Fprintf(w, "Refused of %s's work after its revocation: %s.\n", shortID(d.Key), refusedSummary(*f))
		}
	}
}

// refusedSummary says what a machine refused of a revoked device's work.
func refusedSummary(f api.RefusedWork) string {
	return fmt.Sprintf("%d changes in %d documents removed (%d documents it made erased), %d purges undone, %d documents refused on arrival",
		f.Changes, f.Documents, f.Erased, f.Purges, f.Refused)
}

func (a *app) revokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke DEVICE",
		Short: "Remove a device from the mesh for good",
		Long: `Revoke a device: every member refuses it once the revocation reaches it, and it
cannot join again. DEVICE is a device id, a unique prefix of one (at least 4
characters) or a unique device name, as 'memmesh devices' shows them.

What the device wrote that this machine holds now stays. Everything else it
does or did is refused by every member, whoever passes it on, and removed
where it was taken before the revocation arrived (edits, new memories,
links, purges, namespace settings, revocations of other devices), with what
others built on it; its clock decides nothing. So revoke from the machine
that holds the most of the device's recent work: let it sync first.

A revoked device cannot revoke. When two devices revoke each other before
either hears of the other's revocation, the one that joined the mesh first
wins; any other member settles it the other way by revoking the winner
('memmesh devices' shows such a dispute).`,
		Example: `  memmesh revoke old-laptop
  memmesh revoke K3J5X2ABQ7ZD`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			d, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (api.Device, error) {
				return c.Revoke(ctx, argv[0])
			})
			if err != nil {
				return err
			}
			return a.emit(d, func(w io.Writer) {
				if len(d.Revocations) > 0 {
					r := d.Revocations[len(d.Revocations)-1]
					fmt.Fprintf(w, "Revoked %s (%s) as of the %s of its work this machine holds; the other members refuse it, and anything it does, once they learn of it.\n", shortID(d.Key), d.Name, plural(r.Frontier, "document"))
				} else {
					fmt.Fprintf(w, "Revoked %s (%s); the other members refuse it once they learn of it.\n", shortID(d.Key), d.Name)
				}
			}, func(w io.Writer) { fmt.Fprintln(w, d.Key) })
		},
	}
}

func (a *app) peersCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "peers",
		Short: "Show the other devices of the mesh and how sync with each is going",
		Long: `Show the other devices of the mesh: address, state (alive, suspect, dead, left,
unknown when never seen, revoked), the devices it is reached through when
this machine cannot reach it directly (via), round-trip time, the last
complete sync from each, how many of this machine's documents it lacks as far
as the two machines' exchanges tell (behind), and its memmesh version.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			peers, err := call(cmd.Context(), a, (*web.Client).Peers)
			if err != nil {
				return err
			}
			return emitList(a, "peers", peers, func(w io.Writer) {
				printTable(w, peers, "No other devices yet: run 'memmesh invite' here and 'memmesh join TOKEN' on another machine.",
					"DEVICE\tNAME\tADDRESS\tSTATE\tVIA\tRTT\tLAST SYNC\tBEHIND\tVERSION", func(p api.Peer) []any {
						return []any{shortID(p.Device), p.Name, orDash(p.Addr), p.State, orDash(via(peers, p)), rtt(p.RTT), ago(p.LastSync), p.Behind, orDash(p.Version)}
					})
				for _, p := range peers {
					if p.LastErr != "" {
						fmt.Fprintf(w, "%s: %s\n", shortID(p.Device), p.LastErr)
					}
				}
			}, func(p api.Peer) string { return p.Device + "\t" + p.Name + "\t" + p.State })
		},
	}
}

// statusOut is what `memmesh status` shows.
type statusOut struct {
	api.MeshStatus
	Memories int    `json:"memories"`
	Health   string `json:"health"` // off, alone, offline, degraded, partial or ok
	Summary  string `json:"summary"`
}

func (a *app) meshStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show this device, its memories and the health of its sync",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			st, err := c.MeshStatus(cmd.Context())
			if err != nil {
				return err
			}
			stats, err := c.Stats(cmd.Context())
			if err != nil {
				return err
			}
			out := statusOut{MeshStatus: st, Memories: stats.Memories}
			out.Health, out.Summary = meshHealth(st)
			return a.emit(out, func(w io.Writer) {
				row := func(name, value string) { fmt.Fprintf(w, "%-10s %s\n", name, value) }
				row("Device", st.Device)
				if st.Enabled {
					row("Name", st.Name)
					row("Mesh", fmt.Sprintf("listening on %s (UDP), reached at %s", st.Listen, st.Advertise))
				} else {
					row("Mesh", "off")
				}
				row("Memories", fmt.Sprint(stats.Memories))
				row("Devices", fmt.Sprint(st.Devices))
				if st.Enabled {
					row("Peers", fmt.Sprintf("%d of %d alive", st.Alive, st.Peers))
					row("Last sync", ago(st.LastSync))
					row("Behind", "up to "+plural(st.Behind, "document"))
				}
				for _, e := range st.Errors {
					row("Error", e)
				}
				row("Sync", out.Health+": "+out.Summary)
			}, func(w io.Writer) { fmt.Fprintln(w, out.Health) })
		},
	}
}

// meshHealth sums up how a node syncs, in a word and a sentence.
func meshHealth(st api.MeshStatus) (string, string) {
	others := plural(st.Peers, "other device")
	switch {
	case !st.Enabled:
		return "off", "this node runs without the mesh (serve --no-mesh, or its UDP port was taken); memories stay on this machine"
	case st.Peers == 0:
		return "alone", "no other device yet; run 'memmesh invite' here and 'memmesh join TOKEN' on another machine"
	case st.Alive == 0:
		return "offline", fmt.Sprintf("none of %s is reachable; memories sync when one is", others)
	case len(st.Errors) > 0:
		return "degraded", fmt.Sprintf("%d of %s alive, %s (see 'memmesh peers')", st.Alive, others, plural(len(st.Errors), "sync error"))
	case st.Alive < st.Peers:
		return "partial", fmt.Sprintf("%d of %s reachable; syncing with those", st.Alive, others)
	}
	return "ok", fmt.Sprintf("syncing with %s, all reachable", others)
}

func (a *app) nsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ns",
		Short: "Change the settings of a namespace",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(a.nsSetCommand())
	return cmd
}

// nsSettings are the settings of a namespace that `memmesh ns set` changes.
type nsSettings struct {
	Namespace  string `json:"namespace"`
	Sync       string `json:"sync,omitempty"`
	StaleAfter string `json:"stale_after,omitempty"`
}

func (a *app) nsSetCommand() *cobra.Command {
	var set nsSettings
	cmd := &cobra.Command{
		Use:   "set NS [--sync local|all] [--stale-after 30d]",
		Short: "Change a namespace's settings on every device",
		Long: `Change a namespace's settings. The settings sync like memories, so they apply
on every device of the mesh.

--sync local keeps the namespace's memories on the machine that wrote them:
they are neither sent to other devices nor accepted from them. --sync all (every
namespace's default) replicates them.

--stale-after 30d makes a memory that was not updated for 30 days stale
(listed by 'memmesh stale' and in the brief's stale alerts; evergreen
memories never are); --stale-after default restores 60 days.`,
		Example: `  memmesh ns set personal --sync local
  memmesh ns set backend --sync all --stale-after 30d`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var ch api.NamespaceChange
			if cmd.Flags().Changed("sync") {
				if set.Sync != model.SyncLocal && set.Sync != model.SyncAll {
					return usagef("--sync %q: use local or all", set.Sync)
				}
				ch.Sync = &set.Sync
			}
			if cmd.Flags().Changed("stale-after") {
				ch.StaleAfter = &set.StaleAfter
			}
			if ch.Sync == nil && ch.StaleAfter == nil {
				return usagef("nothing to set: give --sync local|all or --stale-after DAYSd")
			}
			rec, err := call(cmd.Context(), a, func(c *web.Client, ctx context.Context) (model.MeshRecord, error) {
				return c.SetNamespace(ctx, argv[0], ch)
			})
			if err != nil {
				return err
			}
			out := nsSettings{Namespace: rec.Key, Sync: rec.Sync, StaleAfter: "default (60d)"}
			if rec.StaleDays > 0 {
				out.StaleAfter = fmt.Sprintf("%dd", rec.StaleDays)
			}
			return a.emit(out, func(w io.Writer) {
				what := "its memories sync to every device"
				if out.Sync == model.SyncLocal {
					what = "its memories stay on the machine that wrote them"
				}
				fmt.Fprintf(w, "Namespace %s: sync %s (%s); stale after %s.\n", out.Namespace, out.Sync, what, out.StaleAfter)
			}, func(w io.Writer) { fmt.Fprintln(w, out.Sync, out.StaleAfter) })
		},
	}
	cmd.Flags().StringVar(&set.Sync, "sync", "", "replication: local (stays on the machine that wrote it) or all")
	cmd.Flags().StringVar(&set.StaleAfter, "stale-after", "", "age in whole days after which a memory that was not updated is stale (e.g. 30d), or default")
	return cmd
}

// shortID shortens a device id for tables; JSON shows it in full.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// ago is how long ago t was: "12s ago", "5 min ago", or "never".
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	if d < time.Minute {
		return fmt.Sprintf("%ds ago", max(0, int(d.Seconds())))
	}
	return roughDuration(d) + " ago"
}

func rtt(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(100 * time.Microsecond).String()
}

// plural is "1 device" or "2 devices".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// via names the devices a peer is reached through, "" when it is reached
// directly.
func via(peers []api.Peer, p api.Peer) string {
	names := make([]string, len(p.Via))
	for i, device := range p.Via {
		names[i] = shortID(device)
		for _, q := range peers {
			if q.Device == device {
				names[i] = q.Name
			}
		}
	}
	return strings.Join(names, ",")
}
