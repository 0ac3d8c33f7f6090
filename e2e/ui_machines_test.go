package e2e

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// TestMachinesInBrowser drives the Machines page in headless Chromium
// against two real daemons joined in a mesh: the peers and devices with
// their state, an invite whose command, run with the binary on a third
// home, joins, a revoke that asks first, a sync conflict and a
// contradiction resolved side by side, and a stopped peer turning dead on
// the open page.
func TestMachinesInBrowser(t *testing.T) {
	a, b := startUIPair(t)
	br := startBrowser(t)
	p := openTab(t, br, false)
	p.login(a.loginLink(t))
	bRow := `[data-testid="peer-row"][data-device=` + jsString(b.client.DeviceID()) + `]`
	p.goTo("/machines", `document.querySelector('`+bRow+`')?.innerText.includes("alive")`)
	eval[bool](p, `(window.__sameDocument = true)`)

	t.Run("peers and devices", func(t *testing.T) {
		p := p.in(t)
		version := eval[string](p, `fetch("/ui/api/session").then((r) => r.json()).then((s) => s.version)`)
		// A pull from b completes within seconds of the join.
		p.waitFor(30*time.Second, `(() => {
			const cells = [...document.querySelector('`+bRow+`').cells].map((c) => c.innerText);
			return cells[0].startsWith("b") && cells[1].startsWith("alive") && / ms$/.test(cells[2]) &&
				cells[3] !== "" && !cells[3].startsWith("never") && /^\d+$/.test(cells[4]) && cells[5] === `+jsString(version)+`;
		})()`)
		if n := eval[int](p, `document.querySelectorAll('[data-testid="device-row"]').length`); n != 2 {
			t.Errorf("the devices table has %d rows, want 2", n)
		}
		if !eval[bool](p, `document.querySelector('[data-testid="machines-status"]').innerText.includes("1 of 1 peers alive")`) {
			t.Errorf("the status line says %q", eval[string](p, `document.querySelector('[data-testid="machines-status"]').innerText`))
		}
	})

	c := startUINode(t, 3, "c")
	cDevice := `[data-testid="device-row"][data-device=` + jsString(c.client.DeviceID()) + `]`
	t.Run("an invite's command joins a third machine", func(t *testing.T) {
		p := p.in(t)
		p.do(chromedp.Click(chromedp.CSS(`[data-testid="invite-button"]`)))
		p.waitFor(30*time.Second, `document.querySelector('[data-testid="invite-command"]') !== null`)
		token := eval[string](p, `document.querySelector('[data-testid="invite-token"]').textContent`)
		command := eval[string](p, `document.querySelector('[data-testid="invite-command"]').textContent`)
		args := strings.Fields(command)
		if !strings.HasPrefix(token, "mmj1") || len(args) < 3 || args[0] != "memmesh" || args[len(args)-1] != token {
			t.Fatalf("the invite shows token %q and command %q", token, command)
		}
		ok(t, c.home, args[1:]...)
		// The page learns of the new device without being loaded again.
		p.waitFor(60*time.Second, `document.querySelector('`+cDevice+`') !== null`+
			` && document.querySelector('[data-testid="peer-row"][data-device=`+jsString(c.client.DeviceID())+`]') !== null`)
	})

	t.Run("revoke asks first", func(t *testing.T) {
		p := p.in(t)
		p.do(chromedp.Click(chromedp.CSS(cDevice + ` [data-testid="revoke-button"]`)))
		p.waitFor(10*time.Second, `document.activeElement === document.querySelector("dialog.confirm input")`)
		p.do(chromedp.KeyEvent(kb.Escape))
		p.waitFor(10*time.Second, `document.querySelector("dialog.confirm") === null`)
		if revoked(t, a, c) {
			t.Fatal("a cancelled revoke revoked")
		}
		p.do(chromedp.Click(chromedp.CSS(cDevice + ` [data-testid="revoke-button"]`)))
		p.waitFor(10*time.Second, `document.activeElement === document.querySelector("dialog.confirm input")`)
		p.do(chromedp.SendKeys(chromedp.CSS("dialog.confirm input"), "c"), chromedp.KeyEvent(kb.Enter))
		p.waitFor(30*time.Second, `document.querySelector('`+cDevice+`')?.innerText.includes("revoked")`)
		if !revoked(t, a, c) {
			t.Error("the page says revoked, the daemon does not")
		}
	})

	t.Run("a sync conflict kept one way and merged the other", func(t *testing.T) {
		p := p.in(t)
		kept := conflict(t, a, "Deploys", "Deploys go out from the release branch", "Deploys go out on Tuesdays", "Deploys go out on Thursdays")
		item := `[data-testid="conflict"][data-id=` + jsString(kept) + `]`
		p.waitFor(30*time.Second, `document.querySelectorAll('`+item+` .side-by-side pre').length === 2`+
			` && [...document.querySelectorAll('`+item+` .side-by-side pre')].map((e) => e.textContent).sort().join("|") === "Deploys go out on Thursdays|Deploys go out on Tuesdays"`)
		nth := eval[int](p, `[...document.querySelectorAll('`+item+` .side-by-side pre')].findIndex((e) => e.textContent === "Deploys go out on Tuesdays") + 1`)
		p.do(chromedp.Click(chromedp.CSS(item + ` .side-by-side > div:nth-child(` + strconv.Itoa(nth) + `) [data-testid="keep-revision"]`)))
		p.waitFor(30*time.Second, `document.querySelector('`+item+`') === null`)
		m := getMemory(t, a, kept)
		if len(m.Conflict) != 0 || m.Content != "Deploys go out on Tuesdays" || !hasRevision(m, "Deploys go out on Tuesdays") || !hasRevision(m, "Deploys go out on Thursdays") {
			t.Errorf("after keeping one version: content %q, %d leaves, revisions %+v", m.Content, len(m.Conflict), m.Revisions)
		}

		merged := conflict(t, a, "Freeze", "The code freeze starts at noon", "The code freeze starts at 10:00", "The code freeze starts at 14:00")
		item = `[data-testid="conflict"][data-id=` + jsString(merged) + `]`
		p.waitFor(30*time.Second, `document.querySelector('`+item+` [data-testid="merge-edit"]') !== null`)
		// Escape closes the editor, the focus back where it was.
		p.do(chromedp.Click(chromedp.CSS(item + ` [data-testid="merge-edit"]`)))
		p.waitFor(10*time.Second, `document.activeElement === document.querySelector('`+item+` [data-testid="merge-text"]')`)
		p.do(chromedp.KeyEvent(kb.Escape))
		p.waitFor(10*time.Second, `document.querySelector('`+item+` [data-testid="merge-text"]') === null`+
			` && document.activeElement === document.querySelector('`+item+` [data-testid="merge-edit"]')`)
		p.do(chromedp.KeyEvent(kb.Enter))
		p.waitFor(10*time.Second, `document.activeElement === document.querySelector('`+item+` [data-testid="merge-text"]')`)
		p.do(chromedp.SetValue(chromedp.CSS(item+` [data-testid="merge-text"]`), "The code freeze starts at 10:00 on weekdays, 14:00 on Fridays"))
		// Another memory edited meanwhile does not take the text being
		// merged away (the page reads the conflicts again a second after
		// an edit).
		title := "Deploys, edited elsewhere"
		if _, err := a.client.Update(context.Background(), kept, api.UpdateRequest{Title: &title}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if got := eval[string](p, `document.querySelector('`+item+` [data-testid="merge-text"]')?.value ?? "(gone)"`); got != "The code freeze starts at 10:00 on weekdays, 14:00 on Fridays" {
			t.Fatalf("after another memory's edit the text being merged is %q", got)
		}
		p.do(chromedp.Click(chromedp.CSS(item + ` [data-testid="merge-save"]`)))
		p.waitFor(30*time.Second, `document.querySelector('`+item+`') === null`)
		if m := getMemory(t, a, merged); len(m.Conflict) != 0 || m.Content != "The code freeze starts at 10:00 on weekdays, 14:00 on Fridays" {
			t.Errorf("after merging by editing: content %q, %d leaves", m.Content, len(m.Conflict))
		}
	})

	t.Run("a contradiction resolved", func(t *testing.T) {
		p := p.in(t)
		x := a.remember(t, api.RememberRequest{Namespace: "team", Title: "Port", Content: "The API listens on port 8080"})
		y := a.remember(t, api.RememberRequest{Namespace: "team", Title: "Port again", Content: "The API listens on port 9090"})
		if _, err := a.client.Link(context.Background(), api.LinkRequest{From: x, Rel: "contradicts", To: y}); err != nil {
			t.Fatal(err)
		}
		// Linked while the page is open: it shows up without a reload.
		pair := `[data-testid="contradiction"][data-a=` + jsString(x) + `]`
		p.waitFor(30*time.Second, `[...document.querySelectorAll('`+pair+` .side-by-side pre')].map((e) => e.textContent).join("|") === "The API listens on port 8080|The API listens on port 9090"`)
		p.do(chromedp.Click(chromedp.CSS(pair + ` .side-by-side > div:first-child [data-testid="keep-memory"]`)))
		p.waitFor(10*time.Second, `document.activeElement === document.querySelector('dialog.confirm button[value="ok"]')`)
		p.do(chromedp.KeyEvent(kb.Enter))
		p.waitFor(30*time.Second, `document.querySelector('`+pair+`') === null`)
		if m := getMemory(t, a, y); m.Status == model.StatusActive {
			t.Errorf("the forgotten side is %s", m.Status)
		}
		if m := getMemory(t, a, x); m.Status != model.StatusActive {
			t.Errorf("the kept side is %s", m.Status)
		}
	})

	t.Run("hostile text stays text", func(t *testing.T) {
		p := p.in(t)
		h := hostileMemories
		id := conflict(t, a, h[0].Title, "hostile, at first", h[0].Content, h[1].Content)
		x := a.remember(t, api.RememberRequest{Namespace: "team", Title: h[2].Title, Content: h[2].Content})
		y := a.remember(t, api.RememberRequest{Namespace: "team", Title: h[3].Title, Content: h[3].Content})
		if _, err := a.client.Link(context.Background(), api.LinkRequest{From: x, Rel: "contradicts", To: y, Notes: hostileEdgeNotes}); err != nil {
			t.Fatal(err)
		}
		p.waitFor(30*time.Second, `document.querySelectorAll('[data-testid="conflict"][data-id=`+jsString(id)+`] pre').length === 2`+
			` && document.querySelector('[data-testid="contradiction"][data-a=`+jsString(x)+`]') !== null`)
		assertInert(t, p, "the machines page", []string{h[0].Title, h[0].Content, h[1].Content, h[2].Title, h[2].Content, h[3].Title, h[3].Content})
	})

	t.Run("a stopped peer turns dead on the open page", func(t *testing.T) {
		p := p.in(t)
		if err := syscall.Kill(b.pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		p.waitFor(60*time.Second, `/^(dead|left)/.test(document.querySelector('`+bRow+`').cells[1].innerText)`)
	})

	if !eval[bool](p, `window.__sameDocument === true`) {
		t.Error("the page was loaded again")
	}
	if problems := p.watch.Problems(); len(problems) != 0 {
		t.Errorf("the dashboard reported problems:\n%s", strings.Join(problems, "\n"))
	}
}

// revoked says whether a's registry has other revoked.
func revoked(t *testing.T, a, other *uiNode) bool {
	t.Helper()
	devices, err := a.client.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devices {
		if d.Key == other.client.DeviceID() {
			return !d.RevokedAt.IsZero()
		}
	}
	t.Fatalf("%s is not in the registry", other.client.DeviceID())
	return false
}

// conflict stores a memory on n and edits it twice from its first
// revision, as two machines apart do: a sync conflict of the two texts.
func conflict(t *testing.T, n *uiNode, title, first, one, other string) string {
	t.Helper()
	id := n.remember(t, api.RememberRequest{Namespace: "team", Title: title, Content: first})
	base := getMemory(t, n, id).Revisions[0].ID
	for _, text := range []string{one, other} {
		if _, err := n.client.Update(context.Background(), id, api.UpdateRequest{Content: &text, Base: base}); err != nil {
			t.Fatal(err)
		}
	}
	if m := getMemory(t, n, id); len(m.Conflict) != 2 {
		t.Fatalf("two edits of one base made %d leaves", len(m.Conflict))
	}
	return id
}

func getMemory(t *testing.T, n *uiNode, id string) api.Memory {
	t.Helper()
	m, err := n.client.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func hasRevision(m api.Memory, text string) bool {
	for _, r := range m.Revisions {
		if r.Text == text {
			return true
		}
	}
	return false
}
