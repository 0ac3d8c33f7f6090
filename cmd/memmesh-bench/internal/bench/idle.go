package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/web"
)

// IdleOptions configures Idle.
type IdleOptions struct {
	// Binary is the memmesh executable the daemons run; "" means the one
	// beside this executable, else on PATH.
	Binary string
	// Nodes is how many daemons form the mesh.
	Nodes int
	// Memories is how many corpus memories the first daemon imports and
	// the others receive from it.
	Memories int
	// Settle is how long the mesh runs, synced, before the measurement:
	// what the import and the catch-up left to do (Pebble's compactions,
	// the search index's merges, the first lifecycle pass) is over by
	// then. After 30 s, some runs measured twice the idle figure.
	Settle time.Duration
	// Window is how long the daemons' CPU time is measured.
	Window time.Duration
	Common
}

// Validate checks the options.
func (o IdleOptions) Validate() error {
	return firstErr(atLeast("nodes", o.Nodes, 2), atLeast("memories", o.Memories, 0),
		atLeast("window", int(o.Window/time.Second), 1), atLeast("settle", int(o.Settle/time.Second), 0))
}

// IdleReport holds the CPU an idle, synced mesh of daemons uses.
type IdleReport struct {
	Nodes    int     `json:"nodes"`
	Memories int     `json:"memories"`
	WindowS  float64 `json:"window_s"`
	// CPU is each daemon's CPU time (user and system) over the window,
	// in percent of one core; the first daemon is the one that imported.
	CPU []float64 `json:"cpu_percent"`
}

// Rows implements Report.
func (r IdleReport) Rows() []Row {
	rows := []Row{
		{"nodes", fmt.Sprint(r.Nodes)},
		{"memories on each", fmt.Sprint(r.Memories)},
		{"window", fmt.Sprintf("%s s", num(r.WindowS))},
	}
	for i, c := range r.CPU {
		rows = append(rows, Row{fmt.Sprintf("daemon %d CPU", i+1), fmt.Sprintf("%s %% of a core", num(c))})
	}
	return rows
}

// Idle starts opts.Nodes daemons (`memmesh serve`, the mesh on loopback,
// no MCP over HTTP, each with a home and a user home of its own), joins
// them into one mesh, imports opts.Memories corpus memories into the
// first, waits until every daemon holds them all and has indexed them,
// lets the mesh settle, and reads each daemon's CPU time from /proc over
// the window.
func Idle(ctx context.Context, opts IdleOptions) (IdleReport, error) {
	if err := opts.Validate(); err != nil {
		return IdleReport{}, err
	}
	binary, err := memmeshExecutable(opts.Binary)
	if err != nil {
		return IdleReport{}, err
	}
	opts.Binary = binary
	log := logger(opts.Log)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return IdleReport{}, err
	}
	defer cleanup()
	daemons := make([]*daemon, opts.Nodes)
	defer func() {
		for _, d := range daemons {
			if d != nil {
				d.stop()
			}
		}
	}()
	for i := range daemons {
		home := filepath.Join(dir, fmt.Sprintf("h%d", i))
		// The user's home too: the daemon reads agents' transcripts there.
		user := filepath.Join(dir, fmt.Sprintf("u%d", i))
		if err := os.MkdirAll(user, 0o700); err != nil {
			return IdleReport{}, fmt.Errorf("bench: %w", err)
		}
		if daemons[i], err = startDaemon(opts.Binary, home, filepath.Join(dir, fmt.Sprintf("serve%d.log", i)), "HOME="+user); err != nil {
			return IdleReport{}, err
		}
		if err := daemons[i].ready(ctx); err != nil {
			return IdleReport{}, err
		}
	}
	if err := joinDaemons(ctx, daemons); err != nil {
		return IdleReport{}, err
	}
	log.Info("mesh formed; importing", "nodes", opts.Nodes, "memories", opts.Memories)
	if opts.Memories > 0 {
		if err := importCorpus(ctx, daemons[0].client, seedPopulate, opts.Memories); err != nil {
			return IdleReport{}, err
		}
	}
	if err := synced(ctx, daemons, opts.Memories); err != nil {
		return IdleReport{}, err
	}
	log.Info("every daemon holds every memory; settling", "settle", opts.Settle)
	select {
	case <-time.After(opts.Settle):
	case <-ctx.Done():
		return IdleReport{}, ctx.Err()
	}
	r := IdleReport{Nodes: opts.Nodes, Memories: opts.Memories, WindowS: opts.Window.Seconds()}
	before := make([]time.Duration, len(daemons))
	for i, d := range daemons {
		if before[i], err = processCPU(d.cmd.Process.Pid); err != nil {
			return IdleReport{}, err
		}
	}
	start := time.Now()
	log.Info("measuring", "window", opts.Window)
	select {
	case <-time.After(opts.Window):
	case <-ctx.Done():
		return IdleReport{}, ctx.Err()
	}
	took := time.Since(start)
	for i, d := range daemons {
		after, err := processCPU(d.cmd.Process.Pid)
		if err != nil {
			return IdleReport{}, err
		}
		r.CPU = append(r.CPU, 100*(after-before[i]).Seconds()/took.Seconds())
	}
	return r, nil
}

// joinDaemons joins every daemon to the first one's mesh and waits until
// each sees every other alive.
func joinDaemons(ctx context.Context, daemons []*daemon) error {
	for _, d := range daemons[1:] {
		inv, err := daemons[0].client.Invite(ctx, 10*time.Minute)
		if err != nil {
			return fmt.Errorf("bench: invite: %w", err)
		}
		if _, err := d.client.Join(ctx, inv.Token); err != nil {
			return fmt.Errorf("bench: join: %w", err)
		}
	}
	return waitFor(ctx, "every daemon sees the others alive", syncLimit, func() (bool, error) {
		for _, d := range daemons {
			st, err := d.client.MeshStatus(ctx)
			if err != nil || st.Alive < len(daemons)-1 {
				return false, err
			}
		}
		return true, nil
	})
}

// synced returns once every daemon stores memories memories and has
// indexed what it stores. A daemon busy catching up may not answer
// within the client's timeout: it is asked again.
func synced(ctx context.Context, daemons []*daemon, memories int) error {
	return waitFor(ctx, "every daemon holds every memory", syncLimit, func() (bool, error) {
		for _, d := range daemons {
			st, err := d.client.Stats(ctx)
			if err == nil && st.Memories >= memories {
				_, err = d.client.Search(ctx, api.SearchRequest{Query: "postgres", Limit: 1})
			} else if err == nil {
				return false, nil
			}
			if errors.Is(err, web.ErrTimeout) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// syncLimit bounds the waits for the mesh; a guard against hanging.
const syncLimit = 10 * time.Minute

// clockTicks is the unit of /proc/PID/stat's CPU times: USER_HZ, which
// Linux fixes at 100 on every architecture it exposes it to.
const clockTicks = 100

// processCPU reads a process's CPU time, user and system, from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: CPU time: %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing one. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(data), ')')
	var fields []string
	if i >= 0 {
		fields = strings.Fields(string(data[i+1:]))
	}
	if len(fields) < 13 {
		return 0, fmt.Errorf("bench: CPU time: unexpected /proc/%d/stat", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: CPU time: %q in /proc/%d/stat", f, pid)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
