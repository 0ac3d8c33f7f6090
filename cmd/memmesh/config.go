package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed/embedconf"
	"github.com/memmesh/memmesh/internal/localhttp"
	"github.com/memmesh/memmesh/internal/projmap"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/symbols"
)

// Config is memmesh's configuration. Precedence, highest first: flags,
// environment (MEMMESH_HOME, MEMMESH_NAMESPACE, MEMMESH_LOG_LEVEL,
// MEMMESH_LISTEN, MEMMESH_HTTP, MEMMESH_NAME), the project's .memmesh.toml (found upwards
// from the working directory), the project mapping of the working
// directory (maps.toml, namespace only: its glob mapping, else its git
// remote's mapping), the global
// $MEMMESH_HOME/config.toml, defaults.
type Config struct {
	// Namespace is the default namespace of capture, search and list.
	Namespace string `toml:"namespace"`
	// LogLevel is the daemon's log level: debug, info, warn or error.
	LogLevel string `toml:"log_level"`
	// Listen is the mesh's UDP address ("" means node.DefaultListen, and a
	// daemon that cannot listen there runs without the mesh).
	Listen string `toml:"listen"`
	// Advertise is the host:port other machines dial ("" means found from
	// Listen).
	Advertise string `toml:"advertise"`
	// Name is this device's name in the mesh ("" means the hostname).
	Name string `toml:"name"`
	// HTTP is the loopback address of MCP over HTTP and the dashboard
	// (nil means defaultHTTPAddr, and a daemon that cannot listen there
	// runs without HTTP; "" turns HTTP off).
	HTTP *string `toml:"http"`
	// MinFreeSpace is the free disk space the daemon keeps on the home's
	// disk, e.g. "512MiB" or "1GB" ("" means 256 MiB): writes that would
	// leave less are refused with a disk-full error.
	MinFreeSpace string           `toml:"min_free_space"`
	Search       SearchConfig     `toml:"search"`
	Sessions     SessionsConfig   `toml:"sessions"`
	Symbols      SymbolsConfig    `toml:"symbols"`
	Bridge       BridgeConfig     `toml:"bridge"`
	Mesh         MeshTuning       `toml:"mesh"`
	Git          GitConfig        `toml:"git"`
	UI           UIConfig         `toml:"ui"`
	Embed        embedconf.Config `toml:"embed"`
}

// GitConfig says how often the daemon checks memories against the git
// working trees of their namespaces ('memmesh stale').
type GitConfig struct {
	// Off stops the scheduled checks ('memmesh stale --git' and the
	// post-commit hook still check).
	Off bool `toml:"off"`
	// CheckInterval is the time between two checks ("" means 15 minutes).
	CheckInterval string `toml:"check_interval"`
}

// UIConfig says whether the daemon serves the web dashboard beside /mcp.
type UIConfig struct {
	// Enabled serves the dashboard (true by default); it needs the HTTP
	// listener (serve --http).
	Enabled bool `toml:"enabled"`
}

// SymbolsConfig says how the daemon keeps the symbol index of the working
// trees indexed ('memmesh symbols index') up to date.
type SymbolsConfig struct {
	// Off stops the daemon indexing on its own ('memmesh symbols index'
	// still does).
	Off bool `toml:"off"`
	// Interval is the time between two passes over the trees ("" means
	// 10m).
	Interval string `toml:"interval"`
	// MaxFiles and MaxSymbols cap what one tree's index holds (0 means
	// 50,000 files and 1,000,000 symbols); MaxFileSize is the largest file
	// read ("" means 1MiB).
	MaxFiles    int    `toml:"max_files"`
	MaxSymbols  int    `toml:"max_symbols"`
	MaxFileSize string `toml:"max_file_size"`
}

// BridgeConfig says what the daemon mirrors of other tools' memory.
type BridgeConfig struct {
	// ClaudeCode makes the daemon mirror Claude Code's auto memory with
	// the projects' namespaces ('memmesh bridge claude-code' on its own):
	// every Interval, within a quarter second of a change to a memory directory,
	// and when a memory of auto memory changes in the store.
	ClaudeCode bool `toml:"claude_code"`
	// Interval is the time between two passes ("" means a minute).
	Interval string `toml:"interval"`
}

// SessionsConfig says how the daemon reads agents' transcripts.
type SessionsConfig struct {
	// Off stops the daemon reading transcripts on its own (hooks and
	// 'memmesh sessions ingest' still do).
	Off bool `toml:"off"`
	// Interval is the time between two scans ("" means a minute).
	Interval string `toml:"interval"`
	// Roots are project directories searched (four levels down) for
	// Aider's chat histories, which Aider writes where it runs; a leading
	// ~ is the home directory.
	Roots []string `toml:"roots"`
}

// MeshTuning tunes the mesh's failure detection: slower detection rides
// out longer losses without calling a peer dead.
type MeshTuning struct {
	// ProbeInterval is the period of membership probes ("500ms").
	ProbeInterval string `toml:"probe_interval"`
	// SuspicionMult is how many probe intervals a peer that fails its
	// probes stays suspect before it is declared dead (default 3).
	SuspicionMult int `toml:"suspicion_mult"`
}

// SearchConfig tunes ranking.
type SearchConfig struct {
	// RecencyHalfLife is the age at which the recency boost halves ("30d").
	RecencyHalfLife string `toml:"recency_half_life"`
}

// configFile is the global config file's name in the home.
const configFile = "config.toml"

// projectConfigFile is the project config file, looked up from the working
// directory upwards.
const projectConfigFile = ".memmesh.toml"

func defaultConfig() Config {
	return Config{Namespace: api.DefaultNamespace, LogLevel: "info", UI: UIConfig{Enabled: true}}
}

// defaultHome is ~/.memmesh.
func defaultHome() string {
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".memmesh")
	}
	return ".memmesh"
}

// loadConfig reads the global then the project config over the defaults and
// applies the environment, for the working directory.
func loadConfig(home string) (Config, error) {
	wd, _ := os.Getwd()
	return loadConfigAt(home, wd)
}

// loadConfigAt is loadConfig for the project of directory wd ("" for
// none): a command about a file elsewhere (an agent instruction file)
// takes that file's namespace.
func loadConfigAt(home, wd string) (Config, error) {
	cfg := defaultConfig()
	if err := mergeConfigFile(&cfg, filepath.Join(home, configFile)); err != nil {
		return cfg, err
	}
	if wd != "" {
		maps, err := projmap.Load(home)
		if err != nil {
			return cfg, err
		}
		if ns := dirNamespace(context.Background(), maps, wd); ns != "" {
			cfg.Namespace = ns
		}
		if p := findUp(wd, projectConfigFile); p != "" {
			if err := mergeConfigFile(&cfg, p); err != nil {
				return cfg, err
			}
		}
	}
	if v := os.Getenv("MEMMESH_NAMESPACE"); v != "" {
		cfg.Namespace = v
	}
	if v := os.Getenv("MEMMESH_LOG_LEVEL"); v != "" {
		cfg.LogLevel = v
	}
	if v := os.Getenv("MEMMESH_LISTEN"); v != "" {
		cfg.Listen = v
	}
	if v := os.Getenv("MEMMESH_HTTP"); v != "" {
		cfg.HTTP = &v
	}
	if v := os.Getenv("MEMMESH_NAME"); v != "" {
		cfg.Name = v
	}
	return cfg, cfg.validate()
}

// mergeConfigFile decodes path over cfg; a missing file is no error, an
// unknown key or a syntax error is.
func mergeConfigFile(cfg *Config, path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	md, err := toml.Decode(string(data), cfg)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return fmt.Errorf("config %s: line %d: %s", path, perr.Position.Line, perr.Message)
		}
		return fmt.Errorf("config %s: %w", path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		keys := make([]string, len(undecoded))
		for i, k := range undecoded {
			keys[i] = k.String()
		}
		return fmt.Errorf("config %s: unknown key %s (known: namespace, log_level, listen, advertise, http, name, min_free_space, search.recency_half_life, sessions.interval, sessions.off, sessions.roots, bridge.claude_code, bridge.interval, mesh.probe_interval, mesh.suspicion_mult, ui.enabled, embed.provider, embed.url, embed.model, embed.api_key_env)", path, strings.Join(keys, ", "))
	}
	return nil
}

func (c Config) validate() error {
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: log_level %q: use debug, info, warn or error", c.LogLevel)
	}
	if _, err := c.halfLife(); err != nil {
		return err
	}
	if _, err := c.minFree(); err != nil {
		return err
	}
	if _, err := c.sessionsInterval(); err != nil {
		return err
	}
	if _, err := c.symbols(); err != nil {
		return err
	}
	if _, err := c.gitInterval(); err != nil {
		return err
	}
	if _, err := c.bridgeInterval(); err != nil {
		return err
	}
	if _, err := c.probeInterval(); err != nil {
		return err
	}
	if err := c.Embed.Check(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if m := c.Mesh.SuspicionMult; m < 0 || m > maxSuspicionMult {
		return fmt.Errorf("config: mesh.suspicion_mult %d: use 1 to %d (0: the default, 3)", m, maxSuspicionMult)
	}
	for key, addr := range map[string]string{"listen": c.Listen, "advertise": c.Advertise} {
		if err := checkHostPort(addr); addr != "" && err != nil {
			return fmt.Errorf("config: %s %q: %w", key, addr, err)
		}
	}
	if c.HTTP != nil && *c.HTTP != "" {
		if err := localhttp.CheckAddr(*c.HTTP); err != nil {
			return fmt.Errorf("config: http: %w", err)
		}
	}
	return nil
}

// checkHostPort checks that addr is host:port (an empty host means every
// interface).
func checkHostPort(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return errors.New("use host:port, e.g. :7420 or 192.168.1.5:7420")
	}
	return nil
}

// sessionsInterval is the time between two scans for transcripts; -1
// when the daemon does not scan.
func (c Config) sessionsInterval() (time.Duration, error) {
	return interval("sessions.interval", c.Sessions.Interval, c.Sessions.Off, time.Minute)
}

func (c Config) gitInterval() (time.Duration, error) {
	return interval("git.check_interval", c.Git.CheckInterval, c.Git.Off, 15*time.Minute)
}

// interval reads the value of the config key name: -1 when off, def when
// empty, else a duration of a second or more.
func interval(name, value string, off bool, def time.Duration) (time.Duration, error) {
	if off {
		return -1, nil
	}
	if value == "" {
		return def, nil
	}
	d, err := api.ParseTTL(value)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("config: %s %q: use a duration of a second or more, such as 1m or 30s", name, value)
	}
	return d, nil
}

// symbols is the node's symbol index configuration.
func (c Config) symbols() (node.SymbolsConfig, error) {
	s := node.SymbolsConfig{Interval: node.DefaultSymbolsInterval,
		Limits: symbols.Limits{Files: c.Symbols.MaxFiles, Symbols: c.Symbols.MaxSymbols}}
	if c.Symbols.Off {
		s.Interval = 0
	} else if c.Symbols.Interval != "" {
		d, err := api.ParseTTL(c.Symbols.Interval)
		if err != nil || d < time.Minute {
			return s, fmt.Errorf("config: symbols.interval %q: use a duration of a minute or more, such as 10m or 1h", c.Symbols.Interval)
		}
		s.Interval = d
	}
	if c.Symbols.MaxFiles < 0 || c.Symbols.MaxSymbols < 0 {
		return s, fmt.Errorf("config: symbols.max_files and symbols.max_symbols must not be negative")
	}
	if c.Symbols.MaxFileSize != "" {
		size, err := parseSize(c.Symbols.MaxFileSize)
		if err != nil || size < 1<<10 || size > 64<<20 {
			return s, fmt.Errorf("config: symbols.max_file_size %q: use a size from 1KiB to 64MiB, such as 1MiB", c.Symbols.MaxFileSize)
		}
		s.Limits.FileSize = size
	}
	return s, nil
}

// bridgeInterval is the time between two passes of the bridge; -1 when
// the daemon runs none.
func (c Config) bridgeInterval() (time.Duration, error) {
	return interval("bridge.interval", c.Bridge.Interval, !c.Bridge.ClaudeCode, time.Minute)
}

func (c Config) halfLife() (time.Duration, error) {
	if c.Search.RecencyHalfLife == "" {
		return 0, nil
	}
	d, err := api.ParseTTL(c.Search.RecencyHalfLife)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("config: search.recency_half_life %q: use a duration such as 30d or 720h", c.Search.RecencyHalfLife)
	}
	return d, nil
}

// Bounds of the mesh's failure detection settings.
const (
	minProbeInterval = 50 * time.Millisecond
	maxProbeInterval = time.Minute
	maxSuspicionMult = 100
)

// probeInterval returns mesh.probe_interval; 0 means the mesh's default.
func (c Config) probeInterval() (time.Duration, error) {
	if c.Mesh.ProbeInterval == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.Mesh.ProbeInterval)
	if err != nil || d < minProbeInterval || d > maxProbeInterval {
		return 0, fmt.Errorf("config: mesh.probe_interval %q: use a duration from %s to %s, such as 500ms", c.Mesh.ProbeInterval, minProbeInterval, maxProbeInterval)
	}
	return d, nil
}

// sizeUnits are the units of min_free_space.
var sizeUnits = map[string]int64{
	"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30,
}

// minFree returns min_free_space in bytes; 0 means the node's default.
func (c Config) minFree() (int64, error) {
	if c.MinFreeSpace == "" {
		return 0, nil
	}
	n, err := parseSize(c.MinFreeSpace)
	if err != nil {
		return 0, fmt.Errorf("config: min_free_space %q: use a size such as 512MiB or 1GB", c.MinFreeSpace)
	}
	return n, nil
}

// parseSize reads a positive size such as 512MiB, 1GB or 4096.
func parseSize(v string) (int64, error) {
	s := strings.ToUpper(strings.ReplaceAll(v, " ", ""))
	num := strings.TrimRight(s, "BIKMG")
	n, err := strconv.ParseInt(num, 10, 64)
	unit, ok := sizeUnits[s[len(num):]]
	if err != nil || !ok || n <= 0 || n > (1<<50)/unit {
		return 0, fmt.Errorf("size %q: use a number with a unit such as KiB, MiB or GB", v)
	}
	return n * unit, nil
}

// findUp returns the path of name in dir or its nearest ancestor, or "".
func findUp(dir, name string) string {
	for {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
