package e2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/browser"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/web"
)

// The dashboard's benchmarks, in headless Chromium against real daemons:
//
//	go test ./e2e -run '^$' -bench Dashboard -benchtime 20x
//	go test ./e2e -run '^$' -bench DashboardSearch -benchtime 10x -ui.memories 100000

var uiMemories = flag.Int("ui.memories", 100000, "memories in the home of BenchmarkDashboardSearchAsYouType")

// filledHome returns a home holding count corpus memories (seed 17).
func filledHome(b *testing.B, count int) string {
	b.Helper()
	return cachedHome(b, "home-"+strconv.Itoa(count), func(c *web.Client) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(corpus.New(17).WriteImport(pw, count)) }()
		res, err := c.Import(context.Background(), pr)
		pr.Close()
		if err != nil || res.Imported != count {
			b.Fatalf("import %d memories: %d imported, %v", count, res.Imported, err)
		}
	})
}

// cachedHome returns the home called name, filled by fill through a
// daemon that is stopped again and searchable. A home is made once per
// run of the package (Go runs a benchmark more than once) in the folder of
// the built binary, which TestMain removes.
func cachedHome(b *testing.B, name string, fill func(*web.Client)) string {
	b.Helper()
	home := filepath.Join(filepath.Dir(binary), name)
	if _, err := os.Stat(filepath.Join(home, "filled")); err == nil {
		return home
	}
	os.RemoveAll(home)
	if err := os.Mkdir(home, 0o700); err != nil {
		b.Fatal(err)
	}
	cmd, c := startServe(b, home, "--http", "")
	start := time.Now()
	fill(c)
	// A search first brings the index up to date: at 100k memories that
	// takes longer than a call may wait, so it is asked again.
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Minute); ; {
		_, err := c.Search(ctx, api.SearchRequest{Query: "postgres", Limit: 1})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the filled home is not searchable: %v", err)
		}
	}
	b.Logf("home %s filled in %s", name, time.Since(start).Round(time.Millisecond))
	if err := c.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	cmd.Wait()
	if err := os.WriteFile(filepath.Join(home, "filled"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return home
}

// cpuMeter measures the CPU time that the daemons and the browser use.
type cpuMeter struct {
	br            *browser.Browser
	nodes         []*uiNode
	daemon, brows time.Duration
}

func (m *cpuMeter) now() (daemon, brows time.Duration) {
	for _, n := range m.nodes {
		daemon += browser.ProcessCPU(n.pid)
	}
	return daemon, m.br.CPU()
}

// meterCPU starts measuring.
func meterCPU(br *browser.Browser, nodes ...*uiNode) *cpuMeter {
	m := &cpuMeter{br: br, nodes: nodes}
	m.daemon, m.brows = m.now()
	return m
}

// report reports the CPU time used since meterCPU per operation, of ops.
func (m *cpuMeter) report(b *testing.B, ops int) {
	daemon, brows := m.now()
	b.ReportMetric(float64((daemon-m.daemon).Milliseconds())/float64(ops), "daemon-cpu-ms/op")
	b.ReportMetric(float64((brows-m.brows).Milliseconds())/float64(ops), "browser-cpu-ms/op")
}

// BenchmarkDashboardFirstLoad measures opening the dashboard with a cold
// cache (a browser context of its own each time), from the login link to
// the memory list rendered, on a home of 1,000 memories; and the bytes it
// took on the wire (compressed as sent, every response: the login
// redirect, the shell, CSS, modules, the session and the first page of
// memories).
func BenchmarkDashboardFirstLoad(b *testing.B) {
	n := serveUI(b, filledHome(b, 1000))
	br := startBrowser(b)
	var ms, kib []float64
	cpu := meterCPU(br, n)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		link := n.loginLink(b)
		p := openTab(b, br, true)
		b.StartTimer()
		start := time.Now()
		p.do(chromedp.Navigate(link))
		p.waitFor(time.Minute, `document.querySelectorAll("#memory-list li").length > 0`)
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		b.StopTimer()
		bytes, _ := p.watch.Transferred()
		kib = append(kib, bytes/1024)
		if problems := p.watch.Problems(); len(problems) != 0 {
			b.Fatalf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
		}
		p.cancel()
		b.StartTimer()
	}
	b.StopTimer()
	cpu.report(b, b.N)
	reportPercentiles(b, "ms", ms)
	reportPercentiles(b, "KiB", kib)
}

// searchProbe is installed in the memory list: it records, for each
// keystroke in the search field, the milliseconds until the list of its
// results is rendered (the count above the list set, then the next frame).
const searchProbe = `(() => {
	const input = document.querySelector("[data-search]");
	const count = document.querySelector('#page span[aria-live="polite"]');
	window.__bench = { key: 0, lat: [] };
	input.addEventListener("keydown", () => { window.__bench.key = performance.now(); count.textContent = ""; }, true);
	new MutationObserver(() => {
		const k = window.__bench.key;
		if (k && count.textContent !== "") {
			window.__bench.key = 0;
			requestAnimationFrame(() => {
				window.__bench.lat.push(performance.now() - k);
				// a change of the page, for the test's wait to look again
				document.body.dataset.keys = String(window.__bench.lat.length);
			});
		}
	}).observe(count, { childList: true, characterData: true, subtree: true });
	return true;
})()`

// BenchmarkDashboardSearchAsYouType types corpus queries into the memory
// list's search field, a key at a time, on a home of -ui.memories
// memories, and measures each keystroke until its results are rendered
// (the list waits 120 ms after the last keystroke before it asks). One
// operation is one query typed whole.
func BenchmarkDashboardSearchAsYouType(b *testing.B) {
	n := serveUI(b, filledHome(b, *uiMemories))
	br := startBrowser(b)
	p := openTab(b, br, false)
	p.login(n.loginLink(b))
	p.waitFor(time.Minute, `document.querySelectorAll("#memory-list li").length > 0`)
	eval[bool](p, searchProbe)
	gen := corpus.New(29)
	keys := 0
	cpu := meterCPU(br, n)
	b.ResetTimer()
	for range b.N {
		q := gen.Query()
		eval[bool](p, `(() => { const s = document.querySelector("[data-search]"); s.value = ""; s.dispatchEvent(new Event("input")); return true; })()`)
		p.waitFor(time.Minute, `document.querySelector('#page span[aria-live="polite"]').textContent.includes("newest first")`)
		for _, r := range q {
			keys++
			p.do(chromedp.SendKeys(chromedp.CSS("[data-search]"), string(r)))
			p.waitFor(time.Minute, `window.__bench.lat.length === `+strconv.Itoa(keys))
		}
	}
	b.StopTimer()
	cpu.report(b, b.N)
	lat := eval[[]float64](p, `window.__bench.lat`)
	b.ReportMetric(float64(len(lat))/float64(b.N), "keys/op")
	reportPercentiles(b, "ms", lat)
	if problems := p.watch.Problems(); len(problems) != 0 {
		b.Fatalf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
	}
}

// peerProbe records the time (ms since the epoch) at which each memory's
// row enters the list.
const peerProbe = `(() => {
	window.__arrived = {};
	new MutationObserver((records) => {
		const now = performance.timeOrigin + performance.now();
		for (const r of records) for (const li of r.addedNodes) {
			if (li.dataset && li.dataset.id && !(li.dataset.id in window.__arrived)) window.__arrived[li.dataset.id] = now;
		}
	}).observe(document.querySelector("#memory-list"), { childList: true });
	return true;
})()`

// arrival waits for memory id's row on the list (peerProbe records it)
// and returns the milliseconds from start until it entered.
func arrival(p *tab, id string, start time.Time) float64 {
	p.tb.Helper()
	p.waitFor(time.Minute, `window.__arrived[`+jsString(id)+`] !== undefined`)
	return eval[float64](p, `window.__arrived[`+jsString(id)+`]`) - float64(start.UnixNano())/1e6
}

// BenchmarkDashboardPeerCapture measures a capture on one machine until
// its row is on the other machine's open memory list: the capture, its
// sync over QUIC, the event stream, and the page's rendering.
func BenchmarkDashboardPeerCapture(b *testing.B) {
	a, o := startUIPair(b)
	br := startBrowser(b)
	p := openTab(b, br, false)
	p.login(a.loginLink(b))
	p.waitFor(time.Minute, `document.querySelector("#memory-list") !== null`)
	eval[bool](p, peerProbe)
	var ms []float64
	cpu := meterCPU(br, a, o)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		id := o.remember(b, api.RememberRequest{Namespace: "team", Content: fmt.Sprintf("Captured on the other machine, number %d at %d", i, start.UnixNano())})
		ms = append(ms, arrival(p, id, start))
	}
	b.StopTimer()
	cpu.report(b, b.N)
	reportPercentiles(b, "ms", ms)
}

// BenchmarkDashboardReconnect measures how long an open memory list takes
// to show a memory captured while its event stream was down: from the
// moment the network between the browser and the daemon is back until the
// row is on the list (the stream reconnected, the page read its list
// again and rendered it).
func BenchmarkDashboardReconnect(b *testing.B) {
	n := startUINode(b, 1, "a")
	n.remember(b, api.RememberRequest{Namespace: "team", Content: "A memory for the list to start with"})
	link := n.loginLink(b)
	net := startCutter(b, n)
	br := startBrowser(b)
	p := openTab(b, br, false)
	p.login("http://" + net.addr + link[strings.Index(link, "/ui/"):])
	p.waitFor(time.Minute, `document.querySelector("#memory-list li") !== null && document.querySelector("#live.on") !== null`)
	eval[bool](p, peerProbe)
	var ms []float64
	cpu := meterCPU(br, n)
	b.ResetTimer()
	for i := range b.N {
		net.cut(true)
		p.waitFor(time.Minute, `document.querySelector("#live.down") !== null`)
		id := n.remember(b, api.RememberRequest{Namespace: "team", Content: fmt.Sprintf("Captured while the stream was down, number %d", i)})
		start := time.Now()
		net.cut(false)
		ms = append(ms, arrival(p, id, start))
	}
	b.StopTimer()
	cpu.report(b, b.N)
	reportPercentiles(b, "ms", ms)
}
