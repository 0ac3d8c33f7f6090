package browser

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/memmesh/memmesh/internal/testwait"
)

const csp = "default-src 'none'; script-src 'self'; style-src 'self'"

// testPage serves a page under a strict CSP, with the script src when set.
func testPage(src string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		if strings.HasSuffix(r.URL.Path, ".js") {
			w.Header().Set("Content-Type", "text/javascript")
			w.Write([]byte(src))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><title>t</title><p id="p">hello</p><script src="/app.js"></script>`))
	}
}

func runPage(t *testing.T, b *Browser, fresh bool, script string) *Watch {
	t.Helper()
	srv := httptest.NewServer(testPage(script))
	t.Cleanup(srv.Close)
	ctx, cancel, err := b.Tab(fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	ctx, cancelTime := context.WithTimeout(ctx, testwait.Limit)
	defer cancelTime()
	w, err := NewWatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.ID("p"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.done === true`)); err != nil {
		t.Fatal(err)
	}
	// Log entries arrive after the script that caused them.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise((r) => setTimeout(() => r(true), 200))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWatchSeesWhatPagesReport: a clean page reports nothing; console
// errors, uncaught exceptions, CSP violations and dialogs are each seen
// (and the dialog dismissed); the browser's processes and its user data
// directory are gone after Close.
func TestWatchSeesWhatPagesReport(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium: ./test runs it, ./test -short does not")
	}
	b, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := b.dir
	var started []int
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if n := processesUsing(dir, false); n != 0 {
			t.Errorf("%d processes of the browser outlived Close", n)
		}
		for _, pid := range started {
			if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && strings.Contains(exe, "chrom") {
				t.Errorf("process %d (%s) of the browser outlived Close", pid, exe)
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the user data directory is still there: %v", err)
		}
	}()
	if n := processesUsing(dir, false); n == 0 {
		t.Fatal("no process runs with the browser's user data directory")
	}

	if cpu := b.CPU(); cpu <= 0 {
		t.Errorf("the started browser used no CPU time: %s", cpu)
	}
	clean := runPage(t, b, false, `console.log("fine"); window.done = true;`)
	started = b.processes()
	if len(started) < 3 {
		t.Errorf("the browser's processes: %v; want the browser and its helpers", started)
	}
	if p, d := clean.Problems(), clean.Dialogs(); len(p) != 0 || len(d) != 0 {
		t.Errorf("a clean page: problems %q, dialogs %q", p, d)
	}
	if bytes, n := clean.Transferred(); n < 2 || bytes <= 0 {
		t.Errorf("a clean page transferred %v bytes in %d responses; want the page and its script", bytes, n)
	}

	bad := runPage(t, b, true, `
console.error("broken");
const s = document.createElement("div");
document.body.append(s);
s.setAttribute("onclick", "1");
const i = document.createElement("img");
i.setAttribute("src", "data:,x");
document.body.append(i);
alert("pwned");
setTimeout(() => { window.done = true; throw new Error("uncaught"); }, 0);
`)
	problems := strings.Join(bad.Problems(), "\n")
	for _, want := range []string{"console.error: broken", "uncaught", "Content Security Policy"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems do not mention %q:\n%s", want, problems)
		}
	}
	if d := bad.Dialogs(); !slices.Equal(d, []string{`alert: "pwned"`}) {
		t.Errorf("dialogs %q, want the alert", d)
	}
}

// TestStartWithoutChromium: without the browser at $MEMMESH_CHROMIUM,
// Start fails with one line that says what to install.
func TestStartWithoutChromium(t *testing.T) {
	t.Setenv(PathEnv, filepath.Join(t.TempDir(), "chromium"))
	_, err := Start(context.Background())
	if !errors.Is(err, ErrMissing) {
		t.Fatalf("start without the browser: %v, want ErrMissing", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "apt-get install chromium") {
		t.Errorf("start without the browser: %q, want one line naming the package", msg)
	}
}

// TestStartChromiumThatFails: a browser that exits at once fails Start
// with one line that says what to install and what the browser said.
func TestStartChromiumThatFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chromium")
	script := "#!/bin/sh\necho 'error while loading shared libraries' >&2\necho 'second line' >&2\nexit 127\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := start(context.Background(), path)
	if err == nil {
		t.Fatal("start of a browser that exits at once succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "apt-get install chromium") || !strings.Contains(msg, "shared libraries") {
		t.Errorf("start of a browser that exits at once: %q, want one line naming the package and the browser's error", msg)
	}
}
