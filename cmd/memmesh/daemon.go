package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed/embedconf"
	"github.com/memmesh/memmesh/internal/localhttp"
	"github.com/memmesh/memmesh/mcp"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/web"
	"github.com/memmesh/memmesh/web/ui"
)

// Files in the home.
const (
	socketFile = "memmesh.sock"
	lockFile   = "memmesh.lock" // flock held by the running daemon; holds its pid
	logFile    = "memmesh.log"  // log of a daemon started in the background
)

// startTimeout bounds how long a command waits for a daemon it started.
const startTimeout = 20 * time.Second

// defaultHTTPAddr is where the daemon serves MCP over streamable HTTP.
const defaultHTTPAddr = "127.0.0.1:7421"

// httpConfig says where the daemon serves MCP over streamable HTTP.
type httpConfig struct {
	addr string // loopback host:port; "" turns it off
	// required is set when the address was asked for: failing to listen on
	// it stops the daemon instead of being logged.
	required bool
}

// resolveHTTP applies serve's --http flag (value flag) over the config's
// http, which the environment's MEMMESH_HTTP has set over config.toml's.
func resolveHTTP(cmd *cobra.Command, flag string, cfg Config) httpConfig {
	switch {
	case cmd.Flags().Changed("http"):
		return httpConfig{addr: flag, required: true}
	case cfg.HTTP != nil:
		return httpConfig{addr: *cfg.HTTP, required: true}
	}
	return httpConfig{addr: defaultHTTPAddr}
}

// meshConfig says how the daemon joins the mesh.
type meshConfig struct {
	off bool // run without the mesh
	mesh.Config
	// required is set when the listen address was asked for (flag,
	// environment or config): failing to listen on it stops the daemon.
	// Failing on the default port (another home's daemon on this machine)
	// is logged and the daemon runs without the mesh.
	required bool
}

// errInUse reports a home that another daemon already serves.
var errInUse = errors.New("home is in use")

// homeLock is the exclusive lock a daemon holds on its home.
type homeLock struct{ f *os.File }

// lockHome takes the home's lock without waiting and records our pid in it.
func lockHome(home string) (*homeLock, error) {
	path := filepath.Join(home, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		data, _ := os.ReadFile(path)
		f.Close()
		pid := strings.TrimSpace(string(data))
		return nil, fmt.Errorf("%w: memmesh serve (pid %s) is already running on %s; stop it with 'memmesh stop'", errInUse, pid, home)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &homeLock{f: f}, nil
}

func (l *homeLock) release() {
	l.f.Truncate(0)
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// serve runs the daemon in the foreground until SIGINT, SIGTERM or a
// shutdown request, then stops cleanly.
func serve(ctx context.Context, home string, cfg Config, h httpConfig, mc meshConfig, log *slog.Logger) error {
	if h.addr != "" {
		if err := mcp.CheckLoopback(h.addr); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create home: %w", err)
	}
	lock, err := lockHome(home)
	if err != nil {
		return err
	}
	defer lock.release()
	os.Remove(filepath.Join(home, stoppingFile)) // left by a daemon killed while it stopped

	mcpLn, token, err := listenMCP(home, h, log)
	if err != nil {
		return err
	}
	if mcpLn != nil {
		defer mcpLn.Close()
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	halfLife, _ := cfg.halfLife()
	minFree, _ := cfg.minFree()
	interval, _ := cfg.sessionsInterval()
	syms, _ := cfg.symbols()
	gitInterval, _ := cfg.gitInterval()
	ncfg := node.Config{Home: home, Logger: log, RecencyHalfLife: halfLife, LifecycleInterval: node.DefaultLifecycleInterval, MinFreeSpace: minFree,
		Sessions: sessionsConfig(home, cfg, interval), GitCheckInterval: max(gitInterval, 0), Symbols: &syms}
	if !mc.off {
		ncfg.Mesh = &mc.Config
	}
	if ncfg.Embedder, err = cfg.Embed.New(filepath.Join(home, embedconf.ModelsDir)); err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	// The node stops in Close, once the API has drained, not when a signal
	// arrives.
	n, err := openNode(context.WithoutCancel(ctx), ncfg, mc.required, log)
	if err != nil {
		return err
	}
	defer n.Close() // Close is idempotent: this covers the early returns
	httpSrv, err := startHTTP(n, cfg, mcpLn, token, log)
	if err != nil {
		return err
	}

	sock := filepath.Join(home, socketFile)
	if len(sock) > 100 {
		return fmt.Errorf("socket path %s is too long for a unix socket; use a shorter --home", sock)
	}
	os.Remove(sock) // left by a daemon that died: we hold the home's lock
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sock, err)
	}
	defer os.Remove(sock)
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("protect socket: %w", err)
	}

	stopBridge := func() {}
	if every, _ := cfg.bridgeInterval(); every > 0 {
		bctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			runBridge(bctx, home, n, every, log.With("component", "bridge"))
		}()
		stopBridge = sync.OnceFunc(func() { cancel(); <-done })
		defer stopBridge() // before the node closes
	}

	sockAPI := web.NewAPI(n, log.With("component", "api"), stop)
	sockAPI.ServeUILogin(httpSrv.loginLink)
	srv := sockAPI.Server(web.DefaultTimeouts)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	meshAddr := "off"
	if st, err := n.MeshStatus(ctx); err == nil && st.Enabled {
		meshAddr = st.Listen
	}
	log.Info("memmesh is ready", "home", home, "socket", sock, "mcp", httpSrv.mcpURL(), "dashboard", httpSrv.uiURL(), "mesh", meshAddr, "device", n.DeviceID(), "version", api.Version(), "pid", os.Getpid())

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopping")
	report := reportStopping(home, log)
	defer report.end() // before the lock is released
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("requests still running at shutdown", "err", err)
	}
	if err := httpSrv.shutdown(shutdownCtx); err != nil {
		log.Warn("HTTP requests still running at shutdown", "err", err)
	}
	report.phase("stopping the bridge")
	stopBridge()
	report.phase("closing the node: the mesh, the search index, the store")
	if err := n.Close(); err != nil {
		return fmt.Errorf("close node: %w", err)
	}
	log.Info("stopped")
	return nil
}

// listenMCP listens for MCP over HTTP as h says, with the home's bearer
// token (made at the first start). When it cannot, and nobody asked for
// HTTP (the default port is taken, the token file is unsafe), it logs why
// and returns no listener: the daemon runs without HTTP.
func listenMCP(home string, h httpConfig, log *slog.Logger) (net.Listener, string, error) {
	if h.addr == "" {
		return nil, "", nil
	}
	token, err := mcp.LoadToken(filepath.Join(home, mcp.TokenFile))
	if err == nil {
		var ln net.Listener
		if ln, err = mcp.ListenLoopback(h.addr); err == nil {
			return ln, token, nil
		}
	}
	if h.required {
		return nil, "", err
	}
	log.Warn("MCP over HTTP is off", "err", err)
	return nil, "", nil
}

// httpServer is the daemon's loopback HTTP listener: one http.Server
// whose mux sends /mcp to MCP (with its bearer token) and every other path
// to the dashboard (with its sessions), when it is on.
type httpServer struct {
	srv *http.Server
	mcp *mcp.HTTPServer
	ui  *ui.Handler // nil: the dashboard is off
	url string      // http://ADDR
}

// startHTTP serves MCP and the dashboard on ln, when there is one (nil
// without ln).
func startHTTP(n *node.Node, cfg Config, ln net.Listener, token string, log *slog.Logger) (*httpServer, error) {
	if ln == nil {
		return nil, nil
	}
	mlog := log.With("component", "mcp")
	m, err := mcp.NewHTTPServer(mcp.NewServer(n, mcp.Options{Namespace: cfg.Namespace, Logger: mlog, Version: api.Version()}), token, mlog)
	if err != nil {
		return nil, err
	}
	h := &httpServer{mcp: m, url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.Handle(mcp.HTTPPath, m)
	if cfg.UI.Enabled {
		h.ui, err = ui.New(n, ui.Options{Token: token, Logger: log.With("component", "ui"), Version: api.Version()})
		if err != nil {
			return nil, err
		}
		mux.Handle("/", h.ui)
	}
	h.srv = localhttp.NewServer(mux, log.With("component", "http"))
	if h.ui != nil {
		h.srv.RegisterOnShutdown(h.ui.Close) // ends the event streams
	}
	go func() {
		if err := h.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP listener stopped", "err", err)
		}
	}()
	return h, nil
}

// loginLink returns a one-time link that logs a browser into the
// dashboard, for POST /v1/ui/login on the unix socket.
func (h *httpServer) loginLink() (web.UILogin, error) {
	if h == nil || h.ui == nil {
		return web.UILogin{}, fmt.Errorf("%w: the dashboard is off: the daemon serves it on its HTTP listener, which is off (serve --http \"\"), could not take its address (another program on the port: the daemon's log says; serve --http 127.0.0.1:PORT), or [ui] enabled = false in config.toml", api.ErrInvalid)
	}
	code, expires := h.ui.LoginCode()
	return web.UILogin{URL: h.url + ui.LoginPath(code), Expires: expires}, nil
}

// mcpURL is where MCP is served ("off" without the listener).
func (h *httpServer) mcpURL() string {
	if h == nil {
		return "off"
	}
	return h.url + mcp.HTTPPath
}

// uiURL is where the dashboard is served ("off" when it is not).
func (h *httpServer) uiURL() string {
	if h == nil || h.ui == nil {
		return "off"
	}
	return h.url + "/"
}

// shutdown closes MCP's sessions and the dashboard's streams, then stops
// the listener, waiting for requests in flight until ctx ends.
func (h *httpServer) shutdown(ctx context.Context) error {
	if h == nil {
		return nil
	}
	return errors.Join(h.mcp.Shutdown(ctx), h.srv.Shutdown(ctx))
}

// openNode creates and starts the node. When the mesh cannot listen on an
// address nobody asked for, it logs a warning and starts the node without
// the mesh instead.
func openNode(ctx context.Context, cfg node.Config, required bool, log *slog.Logger) (*node.Node, error) {
	n, err := startNode(ctx, cfg)
	var op *net.OpError
	if err == nil || cfg.Mesh == nil || required || !errors.As(err, &op) || op.Op != "listen" {
		return n, err
	}
	listen := cmp.Or(cfg.Mesh.Listen, mesh.DefaultListen)
	log.Warn("the mesh is off: cannot listen on its default UDP address (another memmesh daemon on this machine?); give another with serve --listen or listen in config.toml", "listen", listen, "err", err)
	cfg.Mesh = nil
	return startNode(ctx, cfg)
}

func startNode(ctx context.Context, cfg node.Config) (*node.Node, error) {
	n, err := node.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// clientTimeoutEnv names the environment variable that sets how long a
// command waits for the daemon to show a sign of life.
const clientTimeoutEnv = "MEMMESH_CLIENT_TIMEOUT"

// newClient returns a client of the home's daemon that waits for it as
// long as the environment says (clientTimeout).
func newClient(home string) (*web.Client, error) {
	timeout, err := clientTimeout()
	if err != nil {
		return nil, err
	}
	return web.NewClient(filepath.Join(home, socketFile), web.ClientOptions{
		Timeout:  timeout,
		Describe: func() string { return describeDaemon(home) },
	}), nil
}

// clientTimeout is how long a command waits for the daemon to show a
// sign of life: web.DefaultTimeout unless the environment says.
func clientTimeout() (time.Duration, error) {
	v := os.Getenv(clientTimeoutEnv)
	if v == "" {
		return web.DefaultTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: use a duration such as 10s or 1m", clientTimeoutEnv, v)
	}
	return d, nil
}

// describeDaemon names the process that holds home and its log, for an
// error about a daemon that does not answer.
func describeDaemon(home string) string {
	return fmt.Sprintf("pid %s; see %s", daemonPID(home), filepath.Join(home, logFile))
}

// daemonPID is the pid of the daemon that holds home, as its lock file
// says, or "unknown".
func daemonPID(home string) string {
	if data, err := os.ReadFile(filepath.Join(home, lockFile)); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && n > 0 {
			return strconv.Itoa(n)
		}
	}
	return "unknown"
}

// connect returns a client of the home's daemon, starting the daemon in the
// background when none is running. A daemon that holds the home but does
// not answer (stopped, stuck) gives an error matching web.ErrTimeout.
func connect(ctx context.Context, home string) (*web.Client, error) {
	c, err := newClient(home)
	if err != nil {
		return nil, err
	}
	if _, err := c.Health(ctx); err == nil {
		return c, nil
	} else if !errors.Is(err, web.ErrNoDaemon) {
		return nil, err
	}
	exited, err := startDaemon(home)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(startTimeout)
	for {
		_, err := c.Health(ctx)
		if err == nil {
			return c, nil
		}
		if errors.Is(err, web.ErrTimeout) {
			return nil, err
		}
		select {
		case <-exited:
			// The daemon we started is gone. If no daemon holds the home
			// (none started meanwhile), none will answer: say why now.
			if lock, err := lockHome(home); err == nil {
				lock.release()
				return nil, fmt.Errorf("the memmesh daemon stopped at start: %s (see %s)", lastLine(filepath.Join(home, logFile)), filepath.Join(home, logFile))
			}
			exited = nil
		default:
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the memmesh daemon was still starting: %w", ctx.Err())
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the memmesh daemon did not start within %s; see %s", startTimeout, filepath.Join(home, logFile))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastLine returns the last non-empty line of a file, or "".
func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return lines[len(lines)-1]
}

// startDaemon starts `memmesh serve` for home as a detached background
// process logging to the home's log file.
func startDaemon(home string) (exited <-chan struct{}, err error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("create home: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find memmesh executable: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(home, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "serve", "--home", home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	// The daemon outlives us; reap it only if it exits while we wait (for
	// example because another command started one first, or it failed).
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	return done, nil
}
