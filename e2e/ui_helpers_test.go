package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/browser"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/web"
)

// The dashboard's tests and benchmarks drive it in headless Chromium
// (internal/browser) against real daemons of the built binary.

// uiNode is a daemon serving the dashboard, standing for one machine.
type uiNode struct {
	home, addr string
	pid        int
	client     *web.Client
}

// startUINode runs `memmesh serve` on a new home, the mesh on a free UDP
// port of 127.0.0.<host>, MCP and the dashboard on a free loopback port.
func startUINode(tb testing.TB, host int, name string) *uiNode {
	tb.Helper()
	home, err := os.MkdirTemp("", "mmh")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(home) })
	return serveUI(tb, home, "--listen", freeMeshAddr(tb, host), "--name", name)
}

// serveUI runs `memmesh serve` on home with extra arguments and the
// dashboard on a free loopback port.
func serveUI(tb testing.TB, home string, extra ...string) *uiNode {
	tb.Helper()
	n := &uiNode{home: home, addr: freeLoopbackAddr(tb)}
	cmd, c := startServe(tb, home, append(extra, "--http", n.addr)...)
	n.pid, n.client = cmd.Process.Pid, c
	return n
}

// freeMeshAddr returns a UDP address of 127.0.0.<host> with a port free
// right now, for a daemon's mesh. A machine where that is no loopback
// address skips the test.
func freeMeshAddr(tb testing.TB, host int) string {
	tb.Helper()
	ip := fmt.Sprintf("127.0.0.%d", host)
	conn, err := net.ListenPacket("udp", ip+":0")
	if err != nil {
		tb.Skipf("cannot listen on %s (not a loopback address here?): %v", ip, err)
	}
	defer conn.Close()
	return conn.LocalAddr().String()
}

// startUIPair starts two daemons serving the dashboard, joined in a mesh,
// each seeing the other alive.
func startUIPair(tb testing.TB) (a, b *uiNode) {
	tb.Helper()
	a, b = startUINode(tb, 1, "a"), startUINode(tb, 2, "b")
	joinUINodes(tb, a, b)
	return a, b
}

// url is the dashboard's address of path.
func (n *uiNode) url(path string) string { return "http://" + n.addr + path }

// loginLink asks the daemon for a one-time login link, as `memmesh ui` does.
func (n *uiNode) loginLink(tb testing.TB) string {
	tb.Helper()
	l, err := n.client.UILogin(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return l.URL
}

// remember stores a memory on n and returns its id.
func (n *uiNode) remember(tb testing.TB, req api.RememberRequest) string {
	tb.Helper()
	res, err := n.client.Remember(context.Background(), req)
	if err != nil {
		tb.Fatalf("remember %q: %v", req.Title, err)
	}
	return res.ID
}

// joinUINodes joins b to a's mesh and waits until each sees the other alive.
func joinUINodes(tb testing.TB, a, b *uiNode) {
	tb.Helper()
	joinClients(tb, a.client, b.client)
	deadline := time.Now().Add(testwait.Limit)
	for !alive(a, b) || !alive(b, a) {
		if time.Now().After(deadline) {
			tb.Fatalf("the two daemons do not see each other alive after %s", testwait.Limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alive says whether n sees other alive.
func alive(n, other *uiNode) bool {
	peers, err := n.client.Peers(context.Background())
	if err != nil {
		return false
	}
	for _, p := range peers {
		if p.Device == other.client.DeviceID() {
			return p.State == "alive"
		}
	}
	return false
}

// startBrowser starts Chromium, stopped with all its processes when the
// test ends. Without Chromium the test fails, saying how to install it.
func startBrowser(tb testing.TB) *browser.Browser {
	tb.Helper()
	b, err := browser.Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := b.Close(); err != nil {
			tb.Error(err)
		}
	})
	return b
}

// tab is a watched tab of the test's browser.
type tab struct {
	tb     testing.TB
	ctx    context.Context
	cancel context.CancelFunc // closes the tab
	watch  *browser.Watch
}

// openTab opens a tab, closed when the test ends. With fresh, it shares no
// cookie with the other tabs.
func openTab(tb testing.TB, b *browser.Browser, fresh bool) *tab {
	tb.Helper()
	ctx, cancel, err := b.Tab(fresh)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cancel)
	w, err := browser.NewWatch(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return &tab{tb: tb, ctx: ctx, cancel: cancel, watch: w}
}

// in returns the tab for the test tb, a subtest of the one that opened it.
func (p *tab) in(tb testing.TB) *tab {
	c := *p
	c.tb = tb
	return &c
}

// do runs actions in the tab, bounded by testwait.Limit.
func (p *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, testwait.Limit)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.tb.Fatalf("in the browser at %s: %v", p.location(), err)
	}
}

// location is the tab's URL, for messages.
func (p *tab) location() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	return u
}

// eval evaluates a JavaScript expression in the tab, awaiting a promise.
func eval[T any](p *tab, js string) T {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, testwait.Limit)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.tb.Fatalf("evaluate %s at %s: %v", js, p.location(), err)
	}
	return v
}

// waitFor waits until the JavaScript expression cond is truthy, checked at
// every change of the page, for at most timeout (at least testwait.Limit).
func (p *tab) waitFor(timeout time.Duration, cond string) {
	p.tb.Helper()
	timeout = bound(timeout)
	ctx, cancel := context.WithTimeout(p.ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		p.tb.Fatalf("after %s at %s, still not %s: %v\npage text: %s", timeout, p.location(), cond, err, p.text())
	}
}

// text is the page's visible text, for messages.
func (p *tab) text() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// login opens a one-time link and waits for the dashboard's shell.
func (p *tab) login(link string) {
	p.tb.Helper()
	p.do(chromedp.Navigate(link))
	p.waitFor(30*time.Second, `location.pathname === "/" && document.querySelector("#page .page") !== null`)
}

// goTo moves the open dashboard to path as its links do, without loading
// the page again, and waits for cond.
func (p *tab) goTo(path, cond string) {
	p.tb.Helper()
	eval[bool](p, `(history.pushState(null, "", `+jsString(path)+`), dispatchEvent(new PopStateEvent("popstate")), true)`)
	p.waitFor(30*time.Second, cond)
}

// jsString quotes s as a JavaScript string (JSON's strings are).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
