package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/model"
)

// TestMaintenanceInBrowser drives the Maintenance page in headless
// Chromium against a real daemon: the stale queue with its reasons and
// actions, a compaction proposal reviewed and applied, the brief compared
// with what an agent receives over MCP, and the sessions. Then the live
// stream: dropped (the browser offline) while a memory is captured, the
// page says it is reconnecting, and once back the row is on the open list.
func TestMaintenanceInBrowser(t *testing.T) {
	a := startUINode(t, 1, "a")
	keep := a.remember(t, api.RememberRequest{Namespace: "shop", Title: "Staging", Content: "Staging deploys run from the staging branch every hour"})
	drop := a.remember(t, api.RememberRequest{Namespace: "shop", Title: "Heroku", Content: "The shop runs on Heroku dynos"})
	var similar []string
	for _, where := range []string{"the CI runners", "the build machines", "the nightly runners"} {
		similar = append(similar, a.remember(t, api.RememberRequest{Namespace: "shop",
			Content: "The Gradle build cache lives in /var/cache/gradle on " + where + " and is cleared every Sunday night"}))
	}
	for _, id := range append([]string{keep, drop}, similar...) {
		ok(t, a.home, "update", id, "--status", "stale")
	}
	a.remember(t, api.RememberRequest{Namespace: "shop", Kind: "decision", Title: "Payments", Content: "Payments go through Stripe, never stored card numbers"})
	// Stale by git: the function it quotes was renamed since.
	repo := t.TempDir()
	writeFiles(t, repo, map[string]string{"src/auth.ts": "export function validateToken(t: string) {}\n"})
	gitIn(t, repo, "init", "-q")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "first")
	renamed := a.remember(t, api.RememberRequest{Namespace: "shop", Content: "`src/auth.ts` exports `validateToken()`; the API calls it on every request."})
	checkGit := func() {
		if r := mmIn(t, a.home, repo, nil, "", "stale", "--git", "--ns", "shop"); r.code != 0 {
			t.Fatalf("stale --git: exit %d\n%s", r.code, r.stderr)
		}
	}
	checkGit()
	nextSecond()
	writeFiles(t, repo, map[string]string{"src/auth.ts": "export function checkToken(t: string) {}\n"})
	gitIn(t, repo, "commit", "-q", "-am", "rename validateToken")
	checkGit()
	ok(t, a.home, "map", "/home/dev/src/fetchkit", "shop")
	copyTranscript(t, a.home, claudeSession)
	ok(t, a.home, "sessions", "ingest")

	br := startBrowser(t)
	p := openTab(t, br, false)
	p.login(a.loginLink(t))
	eval[bool](p, `(() => {
		const pick = document.querySelector("#ns-picker");
		pick.value = "shop";
		pick.dispatchEvent(new Event("change"));
		return true;
	})()`)
	p.goTo("/maintenance", `document.querySelectorAll('[data-testid="stale-item"]').length === 6`)
	eval[bool](p, `(window.__sameDocument = true)`)
	item := func(id string) string { return `[data-testid="stale-item"][data-id=` + jsString(id) + `]` }

	t.Run("the stale queue", func(t *testing.T) {
		p := p.in(t)
		if reasons := eval[string](p, `document.querySelector('`+item(keep)+` [data-testid="stale-reasons"]').innerText`); reasons != "marked stale" {
			t.Errorf("the reasons shown are %q", reasons)
		}
		// Marked stale while the page is open: it joins the queue live.
		late := a.remember(t, api.RememberRequest{Namespace: "shop", Title: "Late", Content: "Marked stale while the page is open"})
		ok(t, a.home, "update", late, "--status", "stale")
		p.waitFor(30*time.Second, `document.querySelector('`+item(late)+`') !== null`)
		p.do(chromedp.Click(chromedp.CSS(item(late) + ` [data-testid="stale-keep"]`)))
		p.waitFor(30*time.Second, `document.querySelector('`+item(late)+`') === null`)

		p.do(chromedp.Click(chromedp.CSS(item(keep) + ` [data-testid="stale-keep"]`)))
		p.waitFor(30*time.Second, `document.querySelector('`+item(keep)+`') === null`)
		if m := getMemory(t, a, keep); m.Status != model.StatusActive {
			t.Errorf("kept, the memory is %s", m.Status)
		}
		reasons := `document.querySelector('` + item(renamed) + ` [data-testid="stale-reasons"]').innerText`
		if got := eval[string](p, reasons); !strings.Contains(got, "validateToken no longer in src/auth.ts") || !strings.Contains(got, "'rename validateToken'") {
			t.Errorf("the reasons of the memory git made stale are %q", got)
		}
		p.do(chromedp.Click(chromedp.CSS(item(renamed) + ` [data-testid="stale-keep"]`)))
		p.waitFor(30*time.Second, `document.querySelector('`+item(renamed)+`') === null`)
		if m := getMemory(t, a, renamed); m.Provenance.ConfirmedAt.IsZero() {
			t.Error("kept, the memory git made stale is not confirmed")
		}
		p.do(chromedp.Click(chromedp.CSS(item(drop) + ` [data-testid="stale-forget"]`)))
		p.waitFor(10*time.Second, `document.activeElement === document.querySelector('dialog.confirm button[value="ok"]')`)
		p.do(chromedp.KeyEvent(kb.Escape))
		p.waitFor(10*time.Second, `document.querySelector("dialog.confirm") === null`)
		if m := getMemory(t, a, drop); m.Status != model.StatusStale {
			t.Fatalf("a cancelled forget left the memory %s", m.Status)
		}
		p.do(chromedp.Click(chromedp.CSS(item(drop) + ` [data-testid="stale-forget"]`)))
		p.waitFor(10*time.Second, `document.activeElement === document.querySelector('dialog.confirm button[value="ok"]')`)
		p.do(chromedp.KeyEvent(kb.Enter))
		p.waitFor(30*time.Second, `document.querySelector('`+item(drop)+`') === null`)
		if m := getMemory(t, a, drop); m.Status == model.StatusActive || m.Status == model.StatusStale {
			t.Errorf("forgotten, the memory is %s", m.Status)
		}
	})

	t.Run("a compaction reviewed and applied", func(t *testing.T) {
		p := p.in(t)
		cluster := `[data-testid="compact-cluster"]`
		p.waitFor(30*time.Second, `document.querySelectorAll('`+cluster+`').length === 1`)
		shown := eval[[]string](p, `[...document.querySelectorAll('`+cluster+` li input[type="checkbox"]')].map((b) => b.value).sort()`)
		if strings.Join(shown, " ") != strings.Join(sorted(similar), " ") {
			t.Fatalf("the proposal's members are %v, want %v", shown, sorted(similar))
		}
		summary := "The Gradle build cache lives in /var/cache/gradle on every runner, cleared on Sunday nights"
		p.do(chromedp.SendKeys(chromedp.CSS(cluster+` [data-testid="compact-title"]`), "Gradle cache"),
			chromedp.SetValue(chromedp.CSS(cluster+` [data-testid="compact-summary"]`), summary),
			chromedp.Click(chromedp.CSS(cluster+` [data-testid="compact-apply"]`)))
		p.waitFor(10*time.Second, `document.activeElement === document.querySelector('dialog.confirm button[value="ok"]')`)
		p.do(chromedp.KeyEvent(kb.Enter))
		p.waitFor(30*time.Second, `document.querySelector('`+cluster+`') === null`)
		into := ""
		for _, id := range similar {
			m := getMemory(t, a, id)
			if m.Status != model.StatusCompacted || m.CompactedInto == "" || (into != "" && m.CompactedInto != into) {
				t.Fatalf("member %s is %s, compacted into %q", id, m.Status, m.CompactedInto)
			}
			into = m.CompactedInto
		}
		if m := getMemory(t, a, into); m.Content != summary || m.Title != "Gradle cache" {
			t.Errorf("the summary is %q %q", m.Title, m.Content)
		}
	})

	t.Run("the brief as an agent receives it", func(t *testing.T) {
		p := p.in(t)
		p.do(chromedp.SetValue(chromedp.CSS(`[data-testid="brief-budget"]`), "1500"),
			chromedp.Click(chromedp.CSS(`[data-testid="brief-load"]`)))
		p.waitFor(30*time.Second, `document.querySelector('[data-testid="brief-tokens"]').innerText.endsWith("of 1500 tokens")`)
		page := eval[string](p, `document.querySelector('[data-testid="brief-text"]').textContent`)
		count, err := strconv.Atoi(eval[string](p, `document.querySelector('[data-testid="brief-tokens"]').dataset.tokens`))
		if err != nil {
			t.Fatal(err)
		}
		agent := mcpContext(t, a.home, `{"namespace":"shop","budget":1500}`)
		if page != agent {
			t.Errorf("the page's brief differs from the MCP tool's:\npage:\n%s\nMCP:\n%s", page, agent)
		}
		if !strings.Contains(page, "Stripe") || count != tokens.Count(page) || count > 1500 {
			t.Errorf("the page says %d tokens for a brief of %d:\n%s", count, tokens.Count(page), page)
		}
	})

	t.Run("the brief with all namespaces shown", func(t *testing.T) {
		p := p.in(t)
		pickNS := func(ns string) {
			eval[bool](p, `(() => {
				const pick = document.querySelector("#ns-picker");
				pick.value = `+jsString(ns)+`;
				pick.dispatchEvent(new Event("change"));
				return true;
			})()`)
		}
		pickNS("")
		defer pickNS("shop")
		p.waitFor(30*time.Second, `document.querySelector('[data-testid="brief-ns"]')?.value === "shop"`+
			` && document.querySelector('[data-testid="brief-text"]').textContent.includes("Stripe")`)
	})

	t.Run("sessions", func(t *testing.T) {
		p := p.in(t)
		row := `[data-testid="session-item"][data-id=` + jsString(claudeSession) + `]`
		p.waitFor(30*time.Second, `document.querySelector('`+row+`') !== null`)
		p.do(chromedp.Click(chromedp.CSS(row + ` button`)))
		p.waitFor(30*time.Second, `document.querySelector('[data-testid="session-detail"]').innerText.includes("go test ./client")`)
	})

	t.Run("hostile text stays text", func(t *testing.T) {
		p := p.in(t)
		var want []string
		for _, req := range hostileMemories {
			req.Namespace = "shop"
			ok(t, a.home, "update", a.remember(t, req), "--status", "stale")
			want = append(want, req.Title)
		}
		p.goTo("/maintenance", `document.querySelectorAll('[data-testid="stale-item"]').length === `+strconv.Itoa(len(hostileMemories))+
			` && document.querySelector('[data-testid="brief-text"]').textContent.includes("hostile")`)
		assertInert(t, p, "the maintenance page", want)
	})

	t.Run("live after a dropped stream", func(t *testing.T) {
		// A tab of its own, through a network that the test cuts (the
		// session's cookie is the host's, whatever the port).
		net := startCutter(t, a)
		q := openTab(t, br, false)
		q.do(chromedp.Navigate("http://" + net.addr + "/memories"))
		q.waitFor(30*time.Second, `document.querySelector("#memory-list li") !== null && document.querySelector("#live.on") !== null`)
		eval[bool](q, `(window.__sameDocument = true)`)
		net.cut(true)
		q.waitFor(30*time.Second, `document.querySelector("#live.down")?.innerText.includes("reconnecting")`)
		id := a.remember(t, api.RememberRequest{Namespace: "shop", Title: "Meanwhile", Content: "Captured while the page's stream was down"})
		time.Sleep(time.Second) // the daemon's stream would have sent it by now
		net.cut(false)
		q.waitFor(60*time.Second, `document.querySelector('#memory-list li[data-id=`+jsString(id)+`]') !== null`+
			` && document.querySelector("#live.on") !== null && !document.querySelector("#live").innerText.includes("reconnecting")`)
		if !eval[bool](q, `window.__sameDocument === true`) {
			t.Error("the page was loaded again")
		}
		// The browser reports the stream it lost, and nothing else.
		lost := "/ui/api/events)"
		if problems := slices.DeleteFunc(q.watch.Problems(), func(p string) bool { return strings.HasSuffix(p, lost) }); len(problems) != 0 {
			t.Errorf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
		}
	})

	if !eval[bool](p, `window.__sameDocument === true`) {
		t.Error("the page was loaded again")
	}
	if problems := p.watch.Problems(); len(problems) != 0 {
		t.Errorf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
	}

	// A restart logs browsers out: once the daemon is back, the open page
	// says how to log in again instead of waiting for a stream that is
	// refused.
	t.Run("a restarted daemon sends the page to the login", func(t *testing.T) {
		p := p.in(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a.client.Shutdown(ctx)
		eventually(t, 30*time.Second, "the daemon still runs after its shutdown", func() bool {
			return exited(a.pid)
		})
		p.waitFor(30*time.Second, `document.querySelector("#live.down") !== null`)
		startServe(t, a.home, "--no-mesh", "--http", a.addr)
		// The page goes elsewhere: each look is a call of its own.
		eventually(t, 30*time.Second, "the page is not at the login page", func() bool {
			ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
			defer cancel()
			at, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`location.pathname === "/ui/login" && document.body.innerText.includes("memmesh ui")`))
			return err == nil && at
		})
	})
}

// cutter is a loopback proxy to a dashboard whose connections can be cut:
// the network between the browser and the daemon, which a test can take
// down (what is under way fails, new connections are closed at once)
// and bring back.
type cutter struct {
	addr string
	mu   sync.Mutex
	down bool
	cuts []context.CancelFunc // of the requests under way
}

// startCutter proxies a free loopback port to n's dashboard.
func startCutter(t testing.TB, n *uiNode) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{addr: ln.Addr().String()}
	proxy := &httputil.ReverseProxy{ErrorLog: log.New(io.Discard, "", 0), Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: "http", Host: n.addr})
		r.Out.Host = n.addr // the daemon checks Host and Origin
		if r.In.Header.Get("Origin") != "" {
			r.Out.Header.Set("Origin", "http://"+n.addr)
		}
	}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		c.mu.Lock()
		down := c.down
		if !down {
			c.cuts = append(c.cuts, cancel)
		}
		c.mu.Unlock()
		if down {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		proxy.ServeHTTP(w, r.WithContext(ctx))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return c
}

// cut takes the network down, or brings it back.
func (c *cutter) cut(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
	if down {
		for _, cancel := range c.cuts {
			cancel()
		}
		c.cuts = nil
	}
}

// mcpContext calls the MCP tool context with args through `memmesh mcp`
// on home and returns its text.
func mcpContext(t *testing.T, home, args string) string {
	t.Helper()
	s := startStdio(t, home)
	s.send(mcpInitialize)
	s.next("initialize")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"context","arguments":` + args + `}}`)
	m := s.next("context")
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("context over MCP: %+v %s", m.Error, m.Result)
	}
	return res.Content[0].Text
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
}

// exited says whether the child pid has exited (a zombie until it is
// waited for).
func exited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}
