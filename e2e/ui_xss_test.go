package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memmesh/memmesh/api"
)

// hostileMemories hold, in their titles, contents, tags and an edge's
// notes, what would run if the dashboard rendered memory text as HTML or
// code: script tags, event handlers, javascript: links, style and CSS
// injection, attribute break-outs, template literals and Markdown links.
// Each payload sets window.__pwned or opens a dialog if it ever runs.
var hostileMemories = []api.RememberRequest{
	{
		Title:   `<script>window.__pwned = "title-script"</script>`,
		Content: `hostile <img src=x onerror="window.__pwned = 'img'"> <script>alert("content-script")</script>`,
		Tags:    []string{"javascript:alert"},
	},
	{
		Title:   `"><svg onload=window.__pwned="svg">`,
		Content: `hostile [click me](javascript:window.__pwned='markdown') and <a href="javascript:window.__pwned='anchor'">a link</a>`,
	},
	{
		Title:   `</style><style>*{display:none !important}</style>`,
		Content: `hostile <div style="background:url(javascript:window.__pwned='css')">x</div> <link rel=stylesheet href=//evil.test/x.css>`,
	},
	{
		Title:   "${window.__pwned = 'template'}`+alert(1)+`",
		Content: `hostile {{constructor.constructor('window.__pwned = "angular"')()}} https://example.test/"><img src=x onerror=alert("url")>`,
	},
	{
		Title:   `<iframe srcdoc="<script>parent.__pwned='iframe'</script>"></iframe>`,
		Content: "hostile javascript:alert(document.domain) <body onload=alert('body')>\nsecond line <object data=\"javascript:alert('object')\"></object>",
	},
}

// hostileEdgeNotes are the notes of an edge between two hostile memories.
const hostileEdgeNotes = `<img src=x onerror=alert("edge")>`

// hostilePeerTitle is the title of a hostile memory captured on the other
// machine while the page is open: it arrives through the live events.
const hostilePeerTitle = `<img src=x onerror=window.__pwned="peer">`

// inertCheck is JavaScript that lists what the page holds that memory text
// could have made: event handler attributes, scripts not of the
// dashboard, frames, style elements, links that are not http(s), and
// dangerous attributes holding the payloads.
const inertCheck = `(() => {
	const bad = [];
	const risky = /^(href|src|srcdoc|style|action|formaction|xlink:href|background|poster|data)$/i;
	// The payloads' own marks, not bare words: a memory's id in a link
	// to it is random base32, and may spell "evil" or "alert".
	for (const e of document.querySelectorAll("*")) {
		for (const a of e.attributes) {
			if (/^on/i.test(a.name) || (risky.test(a.name) && /__pwned|alert\(|javascript:|evil\.test/i.test(a.value))) {
				bad.push("<" + e.localName + " " + a.name + "=" + a.value + ">");
			}
		}
		const src = new URL(e.getAttribute("src") || e.getAttribute("href") || "about:blank", location.href);
		const own = src.origin === location.origin && src.pathname.startsWith("/static/");
		if (["script", "iframe", "frame", "object", "embed", "style", "base", "link", "meta"].includes(e.localName) &&
			!(own && ["script", "link"].includes(e.localName)) &&
			!(e.localName === "meta" && !e.hasAttribute("http-equiv"))) {
			bad.push(e.outerHTML.slice(0, 120));
		}
	}
	for (const a of document.querySelectorAll("a[href]")) {
		if (a.protocol !== "http:" && a.protocol !== "https:") bad.push("link to " + a.href);
	}
	if (window.__pwned !== undefined) bad.push("window.__pwned = " + String(window.__pwned));
	return bad;
})()`

// assertInert fails unless the page shows every text of want as text,
// and nothing of memory text ran or became an element, a dialog, or a
// report of the browser (a CSP violation among them).
func assertInert(t *testing.T, p *tab, where string, want []string) {
	t.Helper()
	// Handlers of elements created a moment ago (an image's error) run
	// after their load fails: give them the time.
	eval[bool](p, `new Promise((r) => setTimeout(() => r(true), 300))`)
	if bad := eval[[]string](p, inertCheck); len(bad) != 0 {
		t.Errorf("%s: the page holds what memory text made:\n%s", where, strings.Join(bad, "\n"))
	}
	if d := p.watch.Dialogs(); len(d) != 0 {
		t.Errorf("%s: dialogs opened: %q", where, d)
	}
	if problems := p.watch.Problems(); len(problems) != 0 {
		t.Errorf("%s: the browser reported:\n%s", where, strings.Join(problems, "\n"))
	}
	text := p.text()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s: the page does not show %q as text:\n%s", where, w, text)
		}
	}
}

// hostileSet stores the hostile memories on a (and one on b, which
// reaches a's open page live), and renders every page of the dashboard
// that shows them in p, logged in on a: the list, search results, each
// memory's page, and the graph.
func hostileSet(t *testing.T, a, b *uiNode, p *tab) {
	ids := make([]string, len(hostileMemories))
	var titles []string
	for i, req := range hostileMemories {
		req.Namespace = "hostile"
		ids[i] = a.remember(t, req)
		titles = append(titles, req.Title)
	}
	if _, err := a.client.Link(context.Background(), api.LinkRequest{From: ids[0], Rel: "related_to", To: ids[1], Notes: hostileEdgeNotes}); err != nil {
		t.Fatal(err)
	}
	rows := func(ids ...string) string {
		var conds []string
		for _, id := range ids {
			conds = append(conds, `document.querySelector('#memory-list li[data-id=`+jsString(id)+`]') !== null`)
		}
		return strings.Join(conds, " && ")
	}

	p.goTo("/memories", rows(ids...))
	peer := b.remember(t, api.RememberRequest{Namespace: "hostile", Title: hostilePeerTitle, Content: "hostile, from the other machine"})
	p.waitFor(60*time.Second, rows(peer))
	assertInert(t, p, "the list", append(titles, hostilePeerTitle))

	p.goTo("/memories", rows(ids...))
	p.do(chromedp.Clear(chromedp.CSS("[data-search]")), chromedp.SendKeys(chromedp.CSS("[data-search]"), "hostile"))
	p.waitFor(30*time.Second, `document.querySelector("[data-search]").value === "hostile" && `+rows(append(ids, peer)...)+
		` && document.querySelectorAll("#memory-list li").length === `+strconv.Itoa(len(ids)+1))
	assertInert(t, p, "the search results", append(titles, hostilePeerTitle))

	for i, req := range hostileMemories {
		p.goTo("/memories/"+ids[i], `document.querySelector("#memory-title")?.textContent === `+jsString(req.Title)+
			` && document.querySelector("#memory-content")?.textContent === `+jsString(req.Content)+
			` && document.querySelector("#memory-edges p, #memory-edges table") !== null && !document.querySelector("#memory-edges").innerText.includes("Loading")`)
		want := append([]string{req.Title}, strings.Split(req.Content, "\n")...)
		want = append(want, req.Tags...)
		if i == 0 {
			want = append(want, hostileEdgeNotes)
		}
		assertInert(t, p, "the page of memory "+strconv.Itoa(i), want)
	}

	// The graph draws on a canvas; its side panel shows the focused
	// memory's title, content and edges as text.
	p.goTo("/graph?focus="+ids[0]+"&depth=2", `document.querySelector('[data-testid="graph-details"] h2')?.textContent === `+jsString(titles[0])+
		` && document.querySelector('[data-testid="graph-node-count"]')?.dataset.edges === "1"`)
	assertInert(t, p, "the graph", []string{titles[0], hostileMemories[0].Content})
}
