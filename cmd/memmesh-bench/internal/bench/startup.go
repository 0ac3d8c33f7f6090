package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/web"
)

// Bounds of the waits for a daemon; guards against hanging, not budgets.
const (
	daemonReadyLimit = 2 * time.Minute
	daemonStopLimit  = 30 * time.Second
)

// StartupOptions configures Startup.
type StartupOptions struct {
	// Binary is the memmesh executable run as `memmesh serve`; "" means
	// the one beside this executable, else on PATH.
	Binary string
	// Memories is how many corpus memories the home holds.
	Memories int
	// Runs is how many times the daemon is started.
	Runs int
	Common
}

// Validate checks the options.
func (o StartupOptions) Validate() error {
	return firstErr(atLeast("memories", o.Memories, 1), atLeast("runs", o.Runs, 1))
}

// StartupReport holds the figures of a daemon starting on a full home.
type StartupReport struct {
	Memories int `json:"memories"`
	Runs     int `json:"runs"`
	// ImportRate is memories per second of the import that filled the
	// home, through the daemon's socket.
	ImportRate float64 `json:"import_per_s"`
	// Ready is from starting `memmesh serve` until it answers a search.
	Ready Summary `json:"ready"`
	// RSS is the daemon's resident memory after that search, in MB: the
	// median and the largest of the runs.
	RSSP50 float64 `json:"rss_p50_mb"`
	RSSMax float64 `json:"rss_max_mb"`
}

// Rows implements Report.
func (r StartupReport) Rows() []Row {
	return []Row{
		{"memories", fmt.Sprint(r.Memories)},
		{"import through the daemon", fmt.Sprintf("%s memories/s", num(r.ImportRate))},
		{"runs", fmt.Sprint(r.Runs)},
		{"memmesh serve until it answers a search", r.Ready.String()},
		{"daemon RSS after the search", fmt.Sprintf("p50 %s MB, max %s MB", num(r.RSSP50), num(r.RSSMax))},
	}
}

// Startup fills a home with corpus memories through a daemon's import,
// then starts `memmesh serve` on it opts.Runs times: the time until it
// answers a search and its resident memory then.
func Startup(ctx context.Context, opts StartupOptions) (StartupReport, error) {
	if err := opts.Validate(); err != nil {
		return StartupReport{}, err
	}
	binary, err := memmeshExecutable(opts.Binary)
	if err != nil {
		return StartupReport{}, err
	}
	opts.Binary = binary
	log := logger(opts.Log)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return StartupReport{}, err
	}
	defer cleanup()
	home := filepath.Join(dir, "home")
	logPath := filepath.Join(dir, "serve.log")
	r := StartupReport{Memories: opts.Memories, Runs: opts.Runs}

	log.Info("filling a home through the daemon", "memories", opts.Memories)
	d, err := startDaemon(opts.Binary, home, logPath)
	if err != nil {
		return StartupReport{}, err
	}
	defer d.stop() // the first stop's result stands
	if err := d.ready(ctx); err != nil {
		return StartupReport{}, err
	}
	start := time.Now()
	if err := importCorpus(ctx, d.client, seedPopulate, opts.Memories); err != nil {
		return StartupReport{}, err
	}
	r.ImportRate = float64(opts.Memories) / time.Since(start).Seconds()
	if err := searchable(ctx, d.client); err != nil {
		return StartupReport{}, err
	}
	if err := d.stop(); err != nil {
		return StartupReport{}, err
	}
	log.Info("home filled", "import_per_s", num(r.ImportRate))

	var ready Latencies
	var rss []float64
	for run := range opts.Runs {
		took, mb, err := startOnce(ctx, opts.Binary, home, logPath)
		if err != nil {
			return StartupReport{}, err
		}
		ready, rss = append(ready, took), append(rss, mb)
		log.Info("started", "run", run+1, "ready_after", took.Round(time.Microsecond), "rss_mb", num(mb))
	}
	r.Ready = ready.Summary()
	slices.Sort(rss)
	r.RSSP50, r.RSSMax = rss[(len(rss)-1)/2], rss[len(rss)-1]
	return r, nil
}

// startOnce starts the daemon on home, waits until it answers a search,
// reads its RSS and stops it.
func startOnce(ctx context.Context, binary, home, logPath string) (time.Duration, float64, error) {
	start := time.Now()
	d, err := startDaemon(binary, home, logPath)
	if err != nil {
		return 0, 0, err
	}
	defer d.stop()
	if err := d.ready(ctx); err != nil {
		return 0, 0, err
	}
	took := time.Since(start)
	mb, err := rssMB(d.cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	return took, mb, d.stop()
}

// daemon is a `memmesh serve` this process started.
type daemon struct {
	cmd     *exec.Cmd
	client  *web.Client
	logPath string
	exited  chan struct{} // closed once the process is reaped
	waitErr error         // set before exited is closed
	stopped bool
	stopErr error
}

// startDaemon starts `memmesh serve` on home, without MCP over HTTP and
// with the mesh on an ephemeral loopback port, its output appended to
// logPath, with env added to its environment.
func startDaemon(binary, home, logPath string, env ...string) (*daemon, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("bench: daemon log: %w", err)
	}
	defer out.Close()
	cmd := exec.Command(binary, "serve", "--home", home, "--listen", "127.0.0.1:0", "--http", "")
	cmd.Env = append(daemonEnv(), env...)
	cmd.Dir = home
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s serve: %w", binary, err)
	}
	d := &daemon{cmd: cmd, client: web.NewClient(filepath.Join(home, "memmesh.sock"), web.ClientOptions{}), logPath: logPath, exited: make(chan struct{})}
	go func() {
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// daemonEnv is this process's environment without memmesh's own
// variables, so that the daemon takes its settings from its flags and
// its home only.
func daemonEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "MEMMESH_") })
}

// ready returns once the daemon answers a search.
func (d *daemon) ready(ctx context.Context) error {
	deadline := time.Now().Add(daemonReadyLimit)
	for {
		_, err := d.client.Search(ctx, api.SearchRequest{Query: "retry postgres", Limit: 10})
		if err == nil {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("bench: memmesh serve exited (%v) before it answered: %s", d.waitErr, d.logTail())
		case <-ctx.Done():
			return fmt.Errorf("bench: waiting for memmesh serve: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: memmesh serve did not answer in %v: %w: %s", daemonReadyLimit, err, d.logTail())
		}
	}
}

// stop stops the daemon with SIGTERM, killing it if it does not exit in
// time, and reaps it. Later calls return the first one's result.
func (d *daemon) stop() error {
	if d.stopped {
		return d.stopErr
	}
	d.stopped = true
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if d.waitErr != nil {
			d.stopErr = fmt.Errorf("bench: memmesh serve: %w: %s", d.waitErr, d.logTail())
		}
	case <-time.After(daemonStopLimit):
		d.cmd.Process.Kill()
		<-d.exited
		d.stopErr = fmt.Errorf("bench: memmesh serve did not stop in %v on SIGTERM", daemonStopLimit)
	}
	return d.stopErr
}

// logTail returns the last lines of the daemon's output.
func (d *daemon) logTail() string {
	data, err := os.ReadFile(d.logPath)
	if err != nil {
		return "no output"
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-5):], []byte("\n")))
}

// rssMB reads a process's resident set size (VmRSS) in MB.
func rssMB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: resident memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				return 0, fmt.Errorf("bench: resident memory: %q: %w", v, err)
			}
			return float64(kb) / 1024, nil
		}
	}
	return 0, fmt.Errorf("bench: resident memory: no VmRSS in /proc/%d/status", pid)
}
