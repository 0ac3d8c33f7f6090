package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memmesh/memmesh/api"
)

// TestDashboardInBrowser drives the dashboard in headless Chromium, as a
// person does, against two real daemons joined in a mesh, with one
// browser for every step: the login link, refusal without a session,
// search, a memory's page, editing, linking and the edge in the graph,
// purging, a capture on the
// other machine appearing live, and hostile memory text that must stay
// text.
func TestDashboardInBrowser(t *testing.T) {
	a, b := startUIPair(t)
	// Memories of one millisecond for the list's pages, written before
	// the page opens its event stream: else they arrive live, each to the
	// top of the list.
	fromB := seedBurst(t, a, b)
	br := startBrowser(t)
	p := openTab(t, br, false)

	t.Run("refused without a session", func(t *testing.T) {
		anon := openTab(t, br, true)
		anon.do(chromedp.Navigate(a.url("/memories")))
		anon.waitFor(30*time.Second, `document.body && document.body.innerText.includes("memmesh ui")`)
		if path := eval[string](anon, `location.pathname`); path != "/ui/login" {
			t.Errorf("a page without a session ended at %s, want the login page", path)
		}
		if eval[bool](anon, `document.querySelector("script") !== null || document.querySelector("#page") !== null`) {
			t.Error("the login page runs the dashboard without a session")
		}
		status := eval[int](anon, `fetch("/ui/api/v1/memories").then((r) => r.status)`)
		if status != 401 {
			t.Errorf("the API without a session answered %d, want 401", status)
		}
	})

	if !t.Run("login", func(t *testing.T) {
		p := p.in(t)
		link := strings.TrimSpace(ok(t, a.home, "ui", "--print-url"))
		p.login(link)
		p.waitFor(30*time.Second, `document.querySelector("#live.on") !== null`)
		again := openTab(t, br, true)
		again.do(chromedp.Navigate(link))
		if eval[bool](again, `document.querySelector("#page") !== null`) {
			t.Error("a login link worked twice")
		}
	}) {
		t.FailNow()
	}

	rel := a.remember(t, api.RememberRequest{Namespace: "team", Title: "Release day", Content: "Release branches are cut on Thursdays after the code freeze"})
	pg := a.remember(t, api.RememberRequest{Namespace: "team", Title: "Vacuum", Content: "Postgres vacuum runs nightly at 02:00"})

	t.Run("search", func(t *testing.T) {
		p := p.in(t)
		p.goTo("/memories", `document.querySelector("#memory-list li") !== null`)
		p.do(chromedp.SendKeys(chromedp.CSS("[data-search]"), "thursdays"))
		p.waitFor(30*time.Second, `(() => {
			const rows = document.querySelectorAll("#memory-list li");
			return rows.length === 1 && rows[0].dataset.id === `+jsString(rel)+`;
		})()`)
	})

	t.Run("open a memory", func(t *testing.T) {
		p := p.in(t)
		p.do(chromedp.Click(chromedp.CSS("#memory-list li a")))
		p.waitFor(30*time.Second, `location.pathname === `+jsString("/memories/"+rel)+
			` && document.querySelector("#memory-title")?.textContent === "Release day"`+
			` && document.querySelector("#memory-content")?.textContent === "Release branches are cut on Thursdays after the code freeze"`)
	})

	t.Run("edit and see the revision", func(t *testing.T) {
		p := p.in(t)
		edited := "Release branches are cut on Wednesdays now"
		p.do(chromedp.Click(chromedp.ID("edit")), chromedp.WaitVisible(chromedp.CSS("#editor textarea")))
		p.do(chromedp.SetValue(chromedp.CSS("#editor textarea"), edited), chromedp.Click(chromedp.CSS(`#editor button[type="submit"]`)))
		p.waitFor(30*time.Second, `document.querySelector("#memory-content")?.textContent === `+jsString(edited)+
			` && document.querySelectorAll(".revisions > li").length === 2`)
		m, err := a.client.Get(context.Background(), rel)
		if err != nil || m.Content != edited || len(m.Revisions) != 2 {
			t.Errorf("after the edit in the browser the daemon has %q in %d revisions (%v)", m.Content, len(m.Revisions), err)
		}
	})

	t.Run("link two memories", func(t *testing.T) {
		p := p.in(t)
		p.do(chromedp.Click(chromedp.ID("link")), chromedp.WaitVisible(chromedp.CSS(`dialog.link input[aria-label="Target"]`)))
		p.do(chromedp.SendKeys(chromedp.CSS(`dialog.link input[aria-label="Target"]`), pg),
			chromedp.Click(chromedp.CSS(`dialog.link button[value="ok"]`)))
		p.waitFor(30*time.Second, `[...document.querySelectorAll("#memory-edges tr[data-edge]")].some((tr) => tr.innerText.includes(`+jsString(pg)+`))`)
		edges, err := a.client.Edges(context.Background(), api.EdgesRequest{Endpoints: []string{rel}})
		if err != nil || len(edges) != 1 || edges[0].To != pg {
			t.Errorf("after the link in the browser the daemon has edges %+v (%v)", edges, err)
		}
	})

	t.Run("the edge in the graph", func(t *testing.T) {
		p := p.in(t)
		p.goTo("/graph?focus="+rel+"&depth=2", `Number(document.querySelector('[data-testid="graph-node-count"]')?.dataset.edges) >= 1`+
			` && document.querySelector('[data-testid="graph-details"] a[href$=`+jsString("/memories/"+pg)+`]') !== null`)
		if n := eval[string](p, `document.querySelector('[data-testid="graph-node-count"]').dataset.nodes`); n != "2" {
			t.Errorf("the neighbourhood of the linked memory drew %s nodes, want 2", n)
		}
	})

	t.Run("purge with confirmation", func(t *testing.T) {
		p := p.in(t)
		doomed := a.remember(t, api.RememberRequest{Namespace: "team", Title: "Doomed", Content: "A memory to purge from the dashboard"})
		m, err := a.client.Get(context.Background(), doomed)
		if err != nil {
			t.Fatal(err)
		}
		p.goTo("/memories/"+doomed, `document.querySelector("#memory-title")?.textContent === "Doomed"`)
		p.do(chromedp.Click(chromedp.ID("purge")), chromedp.WaitVisible(chromedp.CSS("dialog.confirm input")))
		if !eval[bool](p, `document.querySelector('dialog.confirm button[value="ok"]').disabled`) {
			t.Error("purge can be confirmed before the id is typed")
		}
		p.do(chromedp.Click(chromedp.CSS(`dialog.confirm button[value="cancel"]`)))
		p.waitFor(10*time.Second, `document.querySelector("dialog.confirm") === null`)
		if _, err := a.client.Get(context.Background(), doomed); err != nil {
			t.Fatalf("a cancelled purge purged: %v", err)
		}
		p.do(chromedp.Click(chromedp.ID("purge")), chromedp.WaitVisible(chromedp.CSS("dialog.confirm input")))
		p.do(chromedp.SendKeys(chromedp.CSS("dialog.confirm input"), m.ShortID),
			chromedp.Click(chromedp.CSS(`dialog.confirm button[value="ok"]`)))
		p.waitFor(30*time.Second, `location.pathname === "/memories"`)
		if _, err := a.client.Get(context.Background(), doomed); err == nil {
			t.Error("the memory is still there after its purge was confirmed")
		}
	})

	t.Run("a capture on the other machine appears live", func(t *testing.T) {
		p := p.in(t)
		p.goTo("/memories", `document.querySelector("#memory-list li") !== null`)
		eval[bool](p, `(window.__sameDocument = true)`)
		id := b.remember(t, api.RememberRequest{Namespace: "team", Title: "From b", Content: "Captured on the other machine while the page is open"})
		p.waitFor(60*time.Second, `document.querySelector('#memory-list li[data-id=`+jsString(id)+`]') !== null`)
		if !eval[bool](p, `window.__sameDocument === true`) {
			t.Error("the page was loaded again")
		}
	})

	t.Run("revisions name their agents", func(t *testing.T) {
		p := p.in(t)
		id := strings.TrimSpace(ok(t, a.home, "capture", "--format", "brief", "--ns", "team", "--agent", "claude-code/2.0", "Deploys need a green canary for ten minutes"))
		ok(t, a.home, "update", id, "--agent", "codex/0.9", "--content", "Deploys need a green canary for fifteen minutes")
		ok(t, a.home, "update", id, "--content", "Deploys need a green canary for twenty minutes")
		var m api.Memory
		okJSON(t, a.home, &m, "show", id, "--json")
		var agents []string
		for _, r := range m.Revisions {
			agents = append(agents, r.Agent)
		}
		if want := []string{"claude-code/2.0", "codex/0.9", ""}; !slices.Equal(agents, want) {
			t.Fatalf("show --json: revisions' agents %q, want %q", agents, want)
		}
		if human := ok(t, a.home, "show", id, "--format", "human"); !strings.Contains(human, "claude-code/2.0") || !strings.Contains(human, "codex/0.9") {
			t.Errorf("show does not name the revisions' agents:\n%s", human)
		}
		p.goTo("/memories/"+m.ID, `document.querySelectorAll(".revisions > li").length === 3`)
		// Newest first: the person's edit names no agent.
		got := eval[[]string](p, `[...document.querySelectorAll(".revisions > li")].map((li) => li.querySelector(".agent")?.textContent ?? "")`)
		if want := []string{"", "codex/0.9", "claude-code/2.0"}; !slices.Equal(got, want) {
			t.Errorf("the memory's page shows the revisions' agents %q, want %q", got, want)
		}
	})

	t.Run("hostile text stays text", func(t *testing.T) {
		p := p.in(t)
		hostileSet(t, a, b, p)
	})

	t.Run("pages through one millisecond, filtered by device on the server", func(t *testing.T) {
		p := p.in(t)
		rows := `document.querySelectorAll("#memory-list li").length`
		distinct := `new Set([...document.querySelectorAll("#memory-list li")].map((li) => li.dataset.id)).size`
		p.goTo("/memories?kind=burst", rows+` === 100 && !document.querySelector("#page .actions button").hidden`)
		for _, want := range []int{200, 208} {
			p.do(chromedp.Click(chromedp.CSS("#page .actions button")))
			p.waitFor(30*time.Second, fmt.Sprintf(`%s === %d && %s === %d`, rows, want, distinct, want))
		}
		if !eval[bool](p, `document.querySelector("#page .actions button").hidden`) {
			t.Error("Load more is offered after the last page")
		}
		// The CLI pages and filters the same way.
		seen := map[string]bool{}
		args := []string{"list", "--all-ns", "--kind", "burst", "--limit", "100", "--json"}
		for cursor := ""; ; {
			var page api.ListPage
			okJSON(t, a.home, &page, append(args, "--cursor", cursor)...)
			for _, m := range page.Memories {
				if seen[m.ID] {
					t.Errorf("memmesh list: %s on two pages", m.ID)
				}
				seen[m.ID] = true
			}
			if cursor = page.Next; cursor == "" || len(seen) > 208 {
				break
			}
		}
		var byB api.ListPage
		okJSON(t, a.home, &byB, "list", "--all-ns", "--kind", "burst", "--device", "b", "--json")
		if len(seen) != 208 || len(byB.Memories) != 3 {
			t.Errorf("memmesh list: %d memories over its pages, want 208; %d of device b, want 3", len(seen), len(byB.Memories))
		}
		for _, device := range []string{strings.ToLower(b.client.DeviceID()[:8]), "b"} {
			eval[bool](p, `(() => { const i = document.querySelector('input[aria-label="Device"]'); i.value = `+jsString(device)+`; i.dispatchEvent(new Event("input")); return true; })()`)
			p.waitFor(30*time.Second, rows+` === 3 && [...document.querySelectorAll("#memory-list li")].every((li) => `+jsArray(fromB)+`.includes(li.dataset.id))`)
		}
	})

	if problems := p.watch.Problems(); len(problems) != 0 {
		t.Errorf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
	}
}

// jsArray writes strings as a JavaScript array.
func jsArray(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// seedBurst writes 205 memories on a and 3 on b of kind burst, all
// updated in one millisecond, so that the boundaries of the list's pages
// fall inside it, and waits until a holds b's; it returns b's ids.
func seedBurst(t *testing.T, a, b *uiNode) []string {
	t.Helper()
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var fromB []string
	for i := range 3 {
		fromB = append(fromB, b.remember(t, api.RememberRequest{Namespace: "team", Kind: "burst", Content: fmt.Sprintf("Burst note %d written on b", i), At: at}))
	}
	// Eight writers at once share the daemon's fsyncs.
	var wg sync.WaitGroup
	errs := make(chan error, 205)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 205; i += 8 {
				_, err := a.client.Remember(context.Background(), api.RememberRequest{Namespace: "team", Kind: "burst", Content: fmt.Sprintf("Burst note %d written on a", i), At: at})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ms, err := a.client.List(context.Background(), api.ListRequest{Kind: "burst", Device: b.client.DeviceID(), Limit: 10})
		if err == nil && len(ms) == 3 {
			return fromB
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's memories did not reach a: %d (%v)", len(ms), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
