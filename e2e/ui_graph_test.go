package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/web"
)

// graphHome returns a home holding nodes corpus memories (seed 31) and two
// edges from each (related_to its successor, depends_on one seven ahead).
func graphHome(b *testing.B, nodes int) string {
	b.Helper()
	return cachedHome(b, "graph-"+strconv.Itoa(nodes), func(c *web.Client) {
		var file bytes.Buffer
		if err := corpus.New(31).WriteImport(&file, nodes); err != nil {
			b.Fatal(err)
		}
		var ids []string
		sc := bufio.NewScanner(bytes.NewReader(file.Bytes()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct{ ID string }
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, line.ID)
		}
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

// BenchmarkDashboardGraph draws the graph page's view of the newest 2,000
// memories with the 4,000 edges between them, from the memory list: the
// time from the click to the drawn graph (its data fetched, laid out and
// on screen), and the page's own figure of the drawing alone (from the
// data to the first frame).
func BenchmarkDashboardGraph(b *testing.B) {
	const nodes = 2000
	n := serveUI(b, graphHome(b, nodes))
	br := startBrowser(b)
	p := openTab(b, br, false)
	p.login(n.loginLink(b))
	var total, draw []float64
	cpu := meterCPU(br, n)
	b.ResetTimer()
	for range b.N {
		p.goTo("/memories", `document.querySelector("#memory-list li") !== null`)
		start := time.Now()
		p.goTo("/graph?size="+strconv.Itoa(nodes), `document.querySelector('[data-testid="graph-node-count"]')?.dataset.nodes === "`+strconv.Itoa(nodes)+`"`)
		total = append(total, float64(time.Since(start).Microseconds())/1000)
		draw = append(draw, eval[float64](p, `Number(document.querySelector('[data-testid="graph-node-count"]').dataset.renderMs)`))
	}
	b.StopTimer()
	cpu.report(b, b.N)
	if edges := eval[string](p, `document.querySelector('[data-testid="graph-node-count"]').dataset.edges`); edges != strconv.Itoa(2*nodes) {
		b.Errorf("the graph drew %s edges, want %d", edges, 2*nodes)
	}
	reportPercentiles(b, "ms", total)
	reportPercentiles(b, "draw-ms", draw)
}
