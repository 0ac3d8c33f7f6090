package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/browser"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/web"
)

// graphHome returns a home holding nodes corpus memories (seed 31) and two
// edges from each (related_to its successor, depends_on one seven ahead).
func graphHome(b *testing.B, nodes int) string {
	b.Helper()
	return cachedHome(b, "graph-"+strconv.Itoa(nodes), func(c *web.Client) {
		var file bytes.Buffer
		ids := writeCorpus(b, &file, nodes, 31)
		for i, id := range ids {
			for _, e := range []struct {
				rel  string
				step int
			}{{"related_to", 1}, {"depends_on", 7}} {
				fmt.Fprintf(&file, `{"type":"edge","from":%q,"rel":%q,"to":%q,"strength":1,"origin":"import","created_at":"2026-01-01T00:00:00Z"}`+"\n",
					id, e.rel, ids[(i+e.step)%len(ids)])
			}
		}
		res, err := c.Import(context.Background(), &file)
		if err != nil || res.Imported != nodes {
			b.Fatalf("import %d memories and their edges: %+v, %v", nodes, res, err)
		}
	})
}

// writeCorpus writes an import of count corpus memories (seed) to file
// and returns their ids, in order.
func writeCorpus(tb testing.TB, file *bytes.Buffer, count int, seed uint64) []string {
	tb.Helper()
	if err := corpus.New(seed).WriteImport(file, count); err != nil {
		tb.Fatal(err)
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(file.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ ID string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, line.ID)
	}
	return ids
}

// graphSession serves a home of nodes memories with their edges (see
// graphHome) and logs a browser's tab in to it.
func graphSession(b *testing.B, nodes int) (*uiNode, *browser.Browser, *tab) {
	b.Helper()
	n := serveUI(b, graphHome(b, nodes))
	br := startBrowser(b)
	p := openTab(b, br, false)
	p.login(n.loginLink(b))
	return n, br, p
}

// openGraph goes from the memory list to the graph page's view of the
// newest nodes memories (query adds to its address), and returns the time
// from the list until the graph is drawn.
func (p *tab) openGraph(nodes int, query string) time.Duration {
	p.tb.Helper()
	p.goTo("/memories", `document.querySelector("#memory-list li") !== null`)
	start := time.Now()
	p.goTo("/graph?size="+strconv.Itoa(nodes)+query, `document.querySelector('[data-testid="graph-node-count"]')?.dataset.nodes === "`+strconv.Itoa(nodes)+`"`)
	return time.Since(start)
}

// BenchmarkDashboardGraph draws the graph page's view of the newest 2,000
// memories with the 4,000 edges between them, from the memory list: the
// time from the click to the drawn graph (its data fetched, laid out and
// on screen), and the page's own figures of the drawing alone (from the
// data to the first frame) and of the layout's part of it.
func BenchmarkDashboardGraph(b *testing.B) {
	const nodes = 2000
	n, br, p := graphSession(b, nodes)
	var total, draw, layout []float64
	cpu := meterCPU(br, n)
	b.ResetTimer()
	for range b.N {
		took := p.openGraph(nodes, "")
		total = append(total, float64(took.Microseconds())/1000)
		draw = append(draw, eval[float64](p, `Number(document.querySelector('[data-testid="graph-node-count"]').dataset.renderMs)`))
		if ms := eval[float64](p, `Number(document.querySelector('[data-testid="graph-node-count"]').dataset.layoutMs ?? -1)`); ms >= 0 {
			layout = append(layout, ms)
		}
	}
	b.StopTimer()
	cpu.report(b, b.N)
	if edges := eval[string](p, `document.querySelector('[data-testid="graph-node-count"]').dataset.edges`); edges != strconv.Itoa(2*nodes) {
		b.Errorf("the graph drew %s edges, want %d", edges, 2*nodes)
	}
	b.Logf("drawn with %s", eval[string](p, `document.querySelector('[data-testid="graph-node-count"]').dataset.render || "canvas"`))
	reportPercentiles(b, "ms", total)
	reportPercentiles(b, "draw-ms", draw)
	reportPercentiles(b, "layout-ms", layout)
}

// frameProbe counts the page's frames: the time of each animation frame
// while window.__frames.on holds.
const frameProbe = `(() => {
	const f = window.__frames = { t: [], on: true };
	const tick = (ts) => {
		f.t.push(ts);
		if (f.on) requestAnimationFrame(tick);
	};
	requestAnimationFrame(tick);
	return true;
})()`

// emptySpot is a point of the graph's canvas (page coordinates) with no
// node within 20 pixels, where a press pans instead of grabbing a node,
// the nearest such to the centre. It reads Cytoscape's instance off its
// container.
const emptySpot = `(() => {
	const box = document.querySelector('[data-testid="graph-canvas"]');
	const cy = box._cyreg.cy;
	const r = box.getBoundingClientRect();
	const near = 20, cells = new Map();
	cy.nodes().forEach((n) => {
		const p = n.renderedPosition();
		const k = Math.floor(p.x / near) + "," + Math.floor(p.y / near);
		if (!cells.has(k)) cells.set(k, []);
		cells.get(k).push(p);
	});
	const free = (x, y) => {
		const cx = Math.floor(x / near), cy = Math.floor(y / near);
		for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) {
			for (const p of cells.get((cx + dx) + "," + (cy + dy)) || []) if (Math.hypot(p.x - x, p.y - y) < near) return false;
		}
		return true;
	};
	let best = [near, near], bestD = Infinity;
	for (let y = near; y < r.height - near; y += 4) for (let x = near; x < r.width - near; x += 4) {
		const d = Math.hypot(x - r.width / 2, y - r.height / 2);
		if (d < bestD && free(x, y)) { best = [x, y]; bestD = d; }
	}
	return [r.left + best[0], r.top + best[1]];
})()`

// gestures pans and zooms the graph's canvas as a person does, through
// the browser's input (wheel and mouse events, each sent at most every
// 16 ms, as a mouse delivers them when turned fast): 72 notches of the
// wheel in at the canvas's centre (Cytoscape zooms about 8 times for
// them: from the whole graph to its labels), two drags of half a second
// on its background in opposite directions, 72 notches out.
func (p *tab) gestures(cx, cy float64) {
	p.tb.Helper()
	tick := time.NewTicker(16 * time.Millisecond)
	defer tick.Stop()
	send := func(a chromedp.Action[chromedp.Void]) {
		<-tick.C
		p.do(a)
	}
	wheel := func(dy float64) {
		for range 72 {
			send(wheelEvent(cx, cy, dy))
		}
	}
	drag := func(dx, dy float64) {
		at := eval[[]float64](p, emptySpot)
		x, y := at[0], at[1]
		send(chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
		for range 30 {
			x, y = x+dx, y+dy
			send(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y, chromedp.ButtonLeft))
		}
		send(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	}
	viewport := func() []float64 {
		return eval[[]float64](p, `(() => { const cy = document.querySelector('[data-testid="graph-canvas"]')._cyreg.cy; return [cy.zoom(), cy.pan().x, cy.pan().y]; })()`)
	}
	v0 := viewport()
	wheel(-100)
	v1 := viewport()
	drag(8, 4)
	v2 := viewport()
	drag(-8, -4)
	wheel(100)
	v3 := viewport()
	if v1[0] < 3*v0[0] || v2[1] == v1[1] || v3[0] > v1[0]/3 {
		p.tb.Fatalf("the gestures did not move the graph: zoom and pan at the start %v, zoomed in %v, dragged %v, zoomed out %v", v0, v1, v2, v3)
	}
	p.tb.Logf("zoom %.2f, in to %.2f, out to %.2f", v0[0], v1[0], v3[0])
}

// wheelEvent turns the mouse wheel by dy pixels at x, y. The protocol
// wants deltaX too, which DispatchMouseEventParams leaves out when 0.
func wheelEvent(x, y, dy float64) chromedp.Action[chromedp.Void] {
	wheel := cdp.Command[map[string]any, cdp.Empty]{Method: input.CommandDispatchMouseEvent}
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, wheel, map[string]any{"type": input.DispatchMouseEventTypeMouseWheel, "x": x, "y": y, "deltaX": 0, "deltaY": dy})
		return err
	})
}

// BenchmarkDashboardGraphFrames measures how smoothly the graph of 2,000
// memories and their 4,000 edges follows a person's pan and zoom (see
// gestures): the time of every animation frame while the gestures run
// and 300 ms after (the full redraw when the motion stops), as p50, p95
// and longest frame, and frames per second. Each renderer the page offers
// (render=canvas, render=webgl) is measured in the same run; the drawing
// is software (headless Chromium: SwiftShader for WebGL).
func BenchmarkDashboardGraphFrames(b *testing.B) {
	const nodes = 2000
	n, br, p := graphSession(b, nodes)
	for _, render := range []string{"canvas", "webgl"} {
		b.Run(render, func(b *testing.B) {
			p := p.in(b)
			var frames []float64
			var busy time.Duration
			var daemon, brows time.Duration
			for range b.N {
				p.openGraph(nodes, "&render="+render)
				if got := eval[string](p, `document.querySelector('[data-testid="graph-node-count"]').dataset.render || "canvas"`); got != render {
					b.Fatalf("asked to draw with %s, the page drew with %s", render, got)
				}
				// the first frames after the graph appears are not the gestures'
				eval[bool](p, `new Promise((r) => setTimeout(() => r(true), 500))`)
				box := eval[[]float64](p, `(() => { const r = document.querySelector('[data-testid="graph-canvas"]').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
				cpu := meterCPU(br, n)
				start := time.Now()
				eval[bool](p, frameProbe)
				p.gestures(box[0], box[1])
				eval[bool](p, `new Promise((r) => setTimeout(() => { window.__frames.on = false; r(true); }, 300))`)
				busy += time.Since(start)
				d, c := cpu.now()
				daemon, brows = daemon+d-cpu.daemon, brows+c-cpu.brows
				ts := eval[[]float64](p, `window.__frames.t`)
				for i := 1; i < len(ts); i++ {
					frames = append(frames, ts[i]-ts[i-1])
				}
			}
			b.StopTimer()
			reportFrames(b, frames)
			b.ReportMetric(busy.Seconds()/float64(b.N), "gesture-s/op")
			b.ReportMetric(float64(brows.Milliseconds())/busy.Seconds()/10, "browser-cpu-%")
			b.ReportMetric(float64(daemon.Milliseconds())/busy.Seconds()/10, "daemon-cpu-%")
			if problems := graphProblems(p.watch); len(problems) != 0 {
				b.Fatalf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
			}
		})
	}
}

// graphProblems is what the watched tab reported, less the GL driver's
// performance notes (a WebGL renderer that reads pixels back to find the
// element under the mouse gets "GPU stall due to ReadPixels").
func graphProblems(w *browser.Watch) []string {
	return slices.DeleteFunc(w.Problems(), func(p string) bool {
		return strings.Contains(p, "GL Driver Message (OpenGL, Performance")
	})
}

// reportFrames reports frame times (ms): p50, p95, the longest, and the
// frames per second they make.
func reportFrames(b *testing.B, frames []float64) {
	if len(frames) == 0 {
		b.Fatal("no frame was drawn")
	}
	var total float64
	for _, f := range frames {
		total += f
	}
	slices.Sort(frames)
	b.ReportMetric(frames[len(frames)/2], "p50-frame-ms")
	b.ReportMetric(frames[int(0.95*float64(len(frames)-1))], "p95-frame-ms")
	b.ReportMetric(frames[len(frames)-1], "max-frame-ms")
	b.ReportMetric(float64(len(frames))/total*1000, "fps")
}

// TestDashboardGraphInBrowser drives the graph page in headless Chromium
// against a real daemon. With all namespaces shown, the analysis asks for
// one and analyses the one picked (it is of one namespace). On each
// renderer, a click on a node opens its panel, and the depth, relation
// and as-of controls draw the neighbourhood they ask for.
func TestDashboardGraphInBrowser(t *testing.T) {
	n := startUINode(t, 1, "a")
	br := startBrowser(t)
	p := openTab(t, br, false)
	p.login(n.loginLink(t))
	ctx := context.Background()
	mem := func(ns, title, content string) string {
		return n.remember(t, api.RememberRequest{Namespace: ns, Title: title, Content: content})
	}
	deploy := mem("team", "Deploy", "Deploys go out on Tuesdays")
	freeze := mem("team", "Freeze", "The code freeze starts on Mondays")
	rollback := mem("team", "Rollback", "Roll back with the previous image")
	image := mem("team", "Images", "Images are built by the release pipeline")
	mem("ops", "Pager", "The pager rotates weekly")
	day := func(s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, l := range []api.LinkRequest{
		{From: deploy, Rel: "related_to", To: rollback, ValidFrom: day("2026-01-01")},
		// valid in January and February only
		{From: deploy, Rel: "depends_on", To: freeze, ValidFrom: day("2026-01-01"), ValidTo: day("2026-03-01")},
		{From: rollback, Rel: "part_of", To: image},
	} {
		if _, err := n.client.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	const count = `document.querySelector('[data-testid="graph-node-count"]')`

	t.Run("the analysis of all namespaces asks for one", func(t *testing.T) {
		p := p.in(t)
		p.goTo("/graph", `document.querySelector('[data-testid="graph-analysis-ns"]') !== null`)
		if text := eval[string](p, `document.querySelector('[data-testid="graph-analysis"]').innerText`); strings.Contains(text, " in default") {
			t.Errorf("with all namespaces shown, the analysis is of the default namespace:\n%s", text)
		}
		want, err := n.client.Analyze(ctx, api.AnalyzeRequest{Namespace: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		p.do(chromedp.SetValue(chromedp.CSS(`[data-testid="graph-analysis-ns"]`), "ops"))
		eval[bool](p, `document.querySelector('[data-testid="graph-analysis-ns"]').dispatchEvent(new Event("change"))`)
		p.waitFor(30*time.Second, `document.querySelector('[data-testid="graph-analysis"]').innerText.includes(`+
			jsString(fmt.Sprintf("%d memories, %d edges in ops.", want.Memories, want.Edges))+`)`)
	})

	for _, render := range []string{"canvas", "webgl"} {
		t.Run(render, func(t *testing.T) {
			p := p.in(t)
			drawn := func(nodes int) string {
				return count + `?.dataset.render === ` + jsString(render) + ` && ` + count + `.dataset.nodes === "` + strconv.Itoa(nodes) + `"`
			}
			// now: deploy, rollback, and at two hops the images
			p.goTo("/graph?depth=2&render="+render+"&focus="+deploy, drawn(3))

			// a click on the rollback node opens its panel
			at := eval[[]float64](p, `(() => {
				const box = document.querySelector('[data-testid="graph-canvas"]');
				const r = box.getBoundingClientRect();
				const q = box._cyreg.cy.getElementById(`+jsString(rollback)+`).renderedPosition();
				return [r.left + q.x, r.top + q.y];
			})()`)
			p.do(chromedp.MouseClickXY(at[0], at[1]))
			p.waitFor(30*time.Second, `document.querySelector('[data-testid="graph-details"] h2')?.textContent === "Rollback"`)

			// a click right after the canvas was resized (the window, or
			// the panel beside it) finds the node under it
			if got := eval[string](p, `(() => {
				const box = document.querySelector('[data-testid="graph-canvas"]');
				const cy = box._cyreg.cy;
				cy.resize();
				const r = box.getBoundingClientRect();
				const q = cy.getElementById(`+jsString(deploy)+`).renderedPosition();
				const at = { clientX: r.left + q.x, clientY: r.top + q.y, bubbles: true, cancelable: true, button: 0, view: window };
				const top = document.elementFromPoint(at.clientX, at.clientY);
				top.dispatchEvent(new MouseEvent('mousedown', at));
				top.dispatchEvent(new MouseEvent('mouseup', at));
				return document.querySelector('[data-testid="graph-details"] h2')?.textContent || '';
			})()`); got != "Deploy" {
				t.Errorf("a click after a resize opened %q, want Deploy", got)
			}

			// depth 1: the images are two hops away
			p.do(chromedp.SetValue(chromedp.CSS(`[data-testid="graph-depth"]`), "1"), chromedp.Click(chromedp.CSS(`[data-testid="graph-show"]`)))
			p.waitFor(30*time.Second, drawn(2)+` && location.search.includes("depth=1")`)

			// as of February the freeze was a dependency too
			p.do(chromedp.SetValue(chromedp.CSS(`[data-testid="graph-asof"]`), "2026-02-01"), chromedp.Click(chromedp.CSS(`[data-testid="graph-show"]`)))
			p.waitFor(30*time.Second, drawn(3)+` && location.search.includes("asof=2026-02-01")`)

			// and that one relation alone: deploy and the freeze
			p.do(chromedp.Click(chromedp.CSS(`[data-testid="graph-rels"] summary`)),
				chromedp.Click(chromedp.CSS(`[data-testid="graph-rels"] input[value="depends_on"]`)),
				chromedp.Click(chromedp.CSS(`[data-testid="graph-show"]`)))
			p.waitFor(30*time.Second, drawn(2)+` && location.search.includes("rels=depends_on")`)
			if ids := eval[[]string](p, `document.querySelector('[data-testid="graph-canvas"]')._cyreg.cy.nodes().map((n) => n.id()).sort()`); !slices.Equal(ids, sortedCopy(deploy, freeze)) {
				t.Errorf("depends_on as of February drew %v, want the deploy and the freeze", ids)
			}
		})
	}

	if problems := graphProblems(p.watch); len(problems) != 0 {
		t.Errorf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
	}
}

func sortedCopy(s ...string) []string {
	return slices.Sorted(slices.Values(s))
}

// clusterHome imports memories corpus memories (seed) in clusters of 50,
// each memory linked to its cluster's first (its hub) with probability
// 0.7 and to another of its cluster, plus 40 links across clusters, and
// returns the memories' ids by degree, the most connected first, and
// each memory's neighbours.
func clusterHome(t *testing.T, c *web.Client, memories int, seed uint64) ([]string, map[string]map[string]bool) {
	t.Helper()
	var file bytes.Buffer
	ids := writeCorpus(t, &file, memories, seed)
	rng := rand.New(rand.NewPCG(seed, 26))
	near := map[string]map[string]bool{}
	link := func(from, rel, to string) {
		if from == to || near[from][to] {
			return
		}
		for _, pair := range [][2]string{{from, to}, {to, from}} {
			if near[pair[0]] == nil {
				near[pair[0]] = map[string]bool{}
			}
			near[pair[0]][pair[1]] = true
		}
		fmt.Fprintf(&file, `{"type":"edge","from":%q,"rel":%q,"to":%q,"strength":1,"origin":"import","created_at":"2026-01-01T00:00:00Z"}`+"\n", from, rel, to)
	}
	const size = 50
	for i, id := range ids {
		first := i / size * size
		if rng.Float64() < 0.7 {
			link(id, "related_to", ids[first])
		}
		link(id, "depends_on", ids[first+rng.IntN(min(size, len(ids)-first))])
	}
	for range 40 {
		link(ids[rng.IntN(len(ids))], "related_to", ids[rng.IntN(len(ids))])
	}
	res, err := c.Import(context.Background(), &file)
	if err != nil || res.Imported != memories {
		t.Fatalf("import %d memories and their links: %+v, %v", memories, res, err)
	}
	slices.SortStableFunc(ids, func(a, b string) int { return len(near[b]) - len(near[a]) })
	return ids, near
}

// TestDashboardGraphOverview: the graph page without a start shows, of
// 2,000 memories in clusters, the most connected with their neighbours:
// at most 80 nodes, every one labelled and its label drawn at the zoom
// shown, the edges between them drawn, the ten most connected among them;
// its button shows all 2,000. A screenshot of it is kept where
// MEMMESH_SCREENSHOTS says.
func TestDashboardGraphOverview(t *testing.T) {
	const memories, bound = 2000, 80
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	n := startUINode(t, 1, "a")
	byDegree, near := clusterHome(t, n.client, memories, seed)
	br := startBrowser(t)
	p := openTab(t, br, false)
	p.login(n.loginLink(t))
	const count = `document.querySelector('[data-testid="graph-node-count"]')`
	p.goTo("/graph", count+`?.dataset.nodes !== undefined`)
	if view := eval[string](p, count+`.dataset.view || ""`); view != "overview" {
		t.Errorf("the graph page without a start shows the view %q, want the overview", view)
	}

	// A label is drawn when its size at the zoom shown is at least the
	// style's min-zoomed-font-size.
	got := eval[struct {
		Nodes, Edges, Drawn, Unlabelled int
		IDs                             []string
		Smallest                        float64
	}](p, `(() => {
		const cy = document.querySelector('[data-testid="graph-canvas"]')._cyreg.cy;
		const z = cy.zoom();
		let unlabelled = 0, smallest = Infinity;
		cy.nodes().forEach((n) => {
			const size = parseFloat(n.style('font-size')) * z;
			if (!n.data('label') || n.style('label') === '' || size < parseFloat(n.style('min-zoomed-font-size'))) unlabelled++;
			smallest = Math.min(smallest, size);
		});
		const drawn = cy.edges().filter((e) => e.visible() && parseFloat(e.style('width')) > 0 && parseFloat(e.style('line-opacity')) > 0).length;
		return { nodes: cy.nodes().length, edges: cy.edges().length, drawn, unlabelled, smallest, ids: cy.nodes().map((n) => n.id()) };
	})()`)
	t.Logf("overview: %d nodes, %d edges, smallest label %.1f px, drawn in %s ms (layout %s ms)", got.Nodes, got.Edges, got.Smallest,
		eval[string](p, count+`.dataset.renderMs`), eval[string](p, count+`.dataset.layoutMs`))
	if got.Nodes > bound || got.Nodes < bound/2 {
		t.Errorf("the overview of %d memories has %d nodes, want %d to %d", memories, got.Nodes, bound/2, bound)
	}
	if got.Unlabelled != 0 {
		t.Errorf("%d of the overview's %d nodes have no label drawn", got.Unlabelled, got.Nodes)
	}
	want := 0
	for _, a := range got.IDs {
		for _, b := range got.IDs {
			if a < b && near[a][b] {
				want++
			}
		}
	}
	if want == 0 || got.Edges != want || got.Drawn != want {
		t.Errorf("the overview's nodes have %d edges between them; it has %d, %d of them drawn", want, got.Edges, got.Drawn)
	}
	for _, id := range byDegree[:10] {
		if !slices.Contains(got.IDs, id) {
			t.Errorf("the overview leaves out %s, one of the ten most connected memories", id)
		}
	}
	if dir := os.Getenv("MEMMESH_SCREENSHOTS"); dir != "" {
		ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "graph-overview.png"), png, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}

	all := `document.querySelector('[data-testid="graph-show-all"]')`
	if text := eval[string](p, all+`?.hidden ? "" : `+all+`?.textContent || ""`); text != fmt.Sprintf("Show all %d memories", memories) {
		t.Fatalf("the overview's button says %q", text)
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-testid="graph-show-all"]`)))
	p.waitFor(2*time.Minute, count+`?.dataset.view === "all" && `+count+`.dataset.nodes === "`+strconv.Itoa(memories)+`"`)
	if problems := graphProblems(p.watch); len(problems) != 0 {
		t.Errorf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
	}
}
