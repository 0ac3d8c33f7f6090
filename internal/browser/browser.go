// Package browser starts the headless Chromium that the dashboard's
// end-to-end tests and benchmarks drive through chromedp (the Chrome
// DevTools Protocol), and stops it with every process it started.
//
// It runs Debian's Chromium at Path, headless, with a fresh user data
// directory and the flags that keep it off the network on its own
// (no background networking, component updates, sync or QUIC): the tests
// talk to loopback only. The test command (./test) installs Chromium on a
// machine without it; Start fails, saying what to install, when it is
// missing or does not start.
package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

// DefaultPath is where Debian's package chromium installs the browser.
const DefaultPath = "/usr/bin/chromium"

// PathEnv names the environment variable that holds another path of the
// browser than DefaultPath.
const PathEnv = "MEMMESH_CHROMIUM"

// ErrMissing is returned by Start when Chromium is not installed.
var ErrMissing = errors.New("needs Chromium: apt-get install chromium")

// Path is the browser that Start runs: $MEMMESH_CHROMIUM, or DefaultPath.
func Path() string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	return DefaultPath
}

// Width and Height are the window's size in CSS pixels.
const (
	Width  = 1280
	Height = 800
)

// flags are Chromium's command-line flags besides the user data directory.
var flags = []chromedp.ExecAllocatorOption{
	chromedp.Flag("headless", true),
	chromedp.Flag("no-sandbox", true),
	chromedp.Flag("disable-gpu", true),
	// WebGL (the graph page's renderer for large graphs) is drawn in
	// software (SwiftShader) without a GPU; Chromium wants this to allow
	// it without warning
	chromedp.Flag("enable-unsafe-swiftshader", true),
	chromedp.Flag("disable-quic", true),
	chromedp.Flag("no-first-run", true),
	chromedp.Flag("no-default-browser-check", true),
	chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("disable-sync", true),
	chromedp.Flag("disable-dev-shm-usage", true),
	chromedp.Flag("disable-extensions", true),
	chromedp.Flag("mute-audio", true),
	chromedp.WindowSize(Width, Height),
}

// Browser is one running Chromium.
type Browser struct {
	dir         string
	ctx         context.Context // the browser's first tab
	cancelTab   context.CancelFunc
	cancelAlloc context.CancelFunc
}

// Start runs Chromium and opens its first tab. Close stops it.
func Start(ctx context.Context) (*Browser, error) {
	return start(ctx, Path())
}

func start(ctx context.Context, path string) (*Browser, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w (%s is missing)", ErrMissing, path)
	}
	dir, err := os.MkdirTemp("", "memmesh-chromium-")
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	opts := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(dir)}, flags...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(ctx), opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	b := &Browser{dir: dir, ctx: tab, cancelTab: cancelTab, cancelAlloc: cancelAlloc}
	if err := chromedp.Do(tab); err != nil {
		b.Close()
		return nil, fmt.Errorf("needs a Chromium that starts: apt-get install chromium (%s: %s)", path, oneLine(err.Error()))
	}
	return b, nil
}

// Tab opens a new tab. With fresh, the tab has a browser context of its
// own (as a private window: no cookies or storage shared with the other
// tabs). cancel closes it.
func (b *Browser) Tab(fresh bool) (ctx context.Context, cancel context.CancelFunc, err error) {
	var opts []chromedp.ContextOption
	if fresh {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	ctx, cancel = chromedp.NewContext(b.ctx, opts...)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("browser: open a tab: %w", err)
	}
	return ctx, cancel, nil
}

// Close stops the browser and every process it started, and removes its
// user data directory.
func (b *Browser) Close() error {
	// Chromium's helpers (zygote, renderers, GPU and network processes)
	// do not carry the user data directory on their command line, and
	// lose their parent when the browser exits: they are noted first.
	started := b.processes()
	b.cancelTab()   // closes the browser through the protocol
	b.cancelAlloc() // kills it if it is still there, and waits for it
	deadline := time.Now().Add(5 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if killed := killAlive(started) + processesUsing(b.dir, true); killed == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	if err := os.RemoveAll(b.dir); err != nil {
		return fmt.Errorf("browser: %w", err)
	}
	return nil
}

// processes returns the browser's processes: those with its user data
// directory on their command line, and their descendants.
func (b *Browser) processes() []int {
	parents := make(map[int]int)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid := parentOf(pid); ppid > 0 {
			parents[pid] = ppid
		}
	}
	ours := make(map[int]bool)
	for _, pid := range pidsUsing(b.dir) {
		ours[pid] = true
	}
	// A descendant is found once its parent is: loop until nothing joins.
	for grew := true; grew; {
		grew = false
		for pid, ppid := range parents {
			if ours[ppid] && !ours[pid] {
				ours[pid], grew = true, true
			}
		}
	}
	pids := make([]int, 0, len(ours))
	for pid := range ours {
		pids = append(pids, pid)
	}
	return pids
}

// killAlive kills the processes of pids that still run Chromium, and
// returns how many it found.
func killAlive(pids []int) int {
	n := 0
	for _, pid := range pids {
		exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if err != nil || !strings.Contains(exe, "chrom") {
			continue // gone, or the number is another process's now
		}
		syscall.Kill(pid, syscall.SIGKILL)
		n++
	}
	return n
}

// processesUsing returns how many processes have --user-data-dir=dir on
// their command line; with kill, it kills them.
func processesUsing(dir string, kill bool) int {
	pids := pidsUsing(dir)
	if kill {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return len(pids)
}

// pidsUsing returns the processes that have --user-data-dir=dir on their
// command line.
func pidsUsing(dir string) []int {
	want := []byte("--user-data-dir=" + dir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmdline, []byte{0}) {
			if bytes.Equal(arg, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// oneLine joins the lines of s (Chromium's output when it does not start):
// a test that needs the browser fails with one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
