package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDashboardLoginThroughTheBinary: `memmesh ui --print-url` prints a
// one-time link to the daemon's listener that logs a client in; the
// dashboard then serves its shell, the API and the event stream beside
// /mcp, which still wants its bearer token; the link does not work twice.
func TestDashboardLoginThroughTheBinary(t *testing.T) {
	home := newHome(t)
	endpoint, addr := startServeHTTP(t, home)
	link := strings.TrimSpace(ok(t, home, "ui", "--print-url"))
	if !strings.HasPrefix(link, "http://"+addr+"/ui/login?code=") {
		t.Fatalf("memmesh ui --print-url printed %q", link)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	shell, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(shell), "/static/app.js") || resp.Request.URL.Path != "/" {
		t.Fatalf("login link: %d at %s: %s", resp.StatusCode, resp.Request.URL, shell)
	}
	if again, err := (&http.Client{Timeout: 30 * time.Second}).Get(link); err != nil || again.StatusCode != http.StatusUnauthorized {
		t.Errorf("second use of the link: %v, %v; want 401", again.Status, err)
	}

	resp, err = c.Get("http://" + addr + "/ui/api/session")
	if err != nil {
		t.Fatal(err)
	}
	var session struct {
		CSRF   string `json:"csrf"`
		Device string `json:"device"`
	}
	json.NewDecoder(resp.Body).Decode(&session)
	resp.Body.Close()
	if session.CSRF == "" || session.Device == "" {
		t.Fatalf("session %+v", session)
	}

	// A capture through the CLI reaches the open event stream.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/ui/api/events", nil)
	stream, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	lines := bufio.NewScanner(stream.Body)
	if !lines.Scan() || lines.Text() != "retry: 1000" || !lines.Scan() || lines.Text() != "event: ping" {
		t.Fatalf("the stream did not open with its reconnection delay and a ping: %q", lines.Text())
	}
	var captured struct {
		ID string `json:"id"`
	}
	okJSON(t, home, &captured, "capture", "the dashboard sees captures live")
	found := false
	for !found && lines.Scan() {
		found = strings.HasPrefix(lines.Text(), "data: ") && strings.Contains(lines.Text(), captured.ID)
	}
	if !found {
		t.Fatalf("no event for %s: %v", captured.ID, lines.Err())
	}

	if status := postStatus(t, endpoint, ""); status != http.StatusUnauthorized {
		t.Errorf("/mcp without the token beside the dashboard: %d, want 401", status)
	}
	if status := postStatus(t, endpoint, "Bearer "+httpToken(t, home)); status != http.StatusOK {
		t.Errorf("/mcp with the token: %d, want 200", status)
	}
}

// TestDashboardOff: with [ui] enabled = false the listener serves /mcp
// only, and `memmesh ui` says why there is no dashboard.
func TestDashboardOff(t *testing.T) {
	home := newHome(t)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[ui]\nenabled = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint, addr := startServeHTTP(t, home)
	r := mm(t, home, "", "ui", "--print-url")
	if r.code == 0 || !strings.Contains(r.stderr, "dashboard is off") {
		t.Errorf("memmesh ui with the dashboard off: exit %d, %q", r.code, r.stderr)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET / with the dashboard off: %d, want 404", resp.StatusCode)
	}
	if status := postStatus(t, endpoint, "Bearer "+httpToken(t, home)); status != http.StatusOK {
		t.Errorf("/mcp with the dashboard off: %d, want 200", status)
	}
}

// TestConfigHTTPAddress: two homes on one machine, each with its own http
// in config.toml, get a daemon each (started in the background, no flags)
// serving its dashboard on its own address; an http that is no loopback
// address is refused by every command, naming the key.
func TestConfigHTTPAddress(t *testing.T) {
	for range 2 {
		home := newHome(t)
		addr := freeLoopbackAddr(t)
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("http = \""+addr+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := strings.TrimSpace(ok(t, home, "ui", "--print-url"))
		if !strings.HasPrefix(link, "http://"+addr+"/ui/login?code=") {
			t.Fatalf("http = %q in config.toml: memmesh ui --print-url printed %q", addr, link)
		}
		jar, _ := cookiejar.New(nil)
		resp, err := (&http.Client{Jar: jar, Timeout: 30 * time.Second}).Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("login at %s: %s", addr, resp.Status)
		}
	}

	home := newHome(t)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("http = \"0.0.0.0:7421\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := mm(t, home, "", "status")
	if r.code == 0 || !strings.Contains(r.stderr, "config: http") || !strings.Contains(r.stderr, "loopback") {
		t.Errorf("http = \"0.0.0.0:7421\": exit %d, %q; want a refusal naming the key", r.code, r.stderr)
	}
}
