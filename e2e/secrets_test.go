package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/homescan"
)

// e2eSecrets are realistic lines holding a secret, with the secret.
var e2eSecrets = []struct{ line, secret string }{
	{"export GH_TOKEN=ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D", "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"},
	{"$ mysql -h db.internal -u root -pS3cretRoot77 shop", "S3cretRoot77"},
	{"FYI the staging db password is hunter2x9, rotate it", "hunter2x9"},
	{"DATABASE_URL=postgres://app:Sup3rS3cretPg@db.internal:5432/shop", "Sup3rS3cretPg"},
	{"docker login -u ci -p dckr_pat_sZfYcMMDktXP-tKsf2rcDkdfrUn registry.example.com", "dckr_pat_sZfYcMMDktXP-tKsf2rcDkdfrUn"},
	{"DIGITALOCEAN_ACCESS_TOKEN=dop_v1_a4c123b1612dd272d1371c17149d439536b3216fdaeeb975729fae923d5a4fd1", "a4c123b1612dd272d1371c17149d439536b3216fdaeeb975729fae923d5a4fd1"},
	{"AccountName=acme;AccountKey=dma+8hW5KCv+IAcml+d3zqclnNOY+nmo71knjIwhBQPM+LmmGoa/7yNv/N8x0982B0A2SoA9w5ZTQotr1SEP6A==;", "dma+8hW5KCv+IAcml+d3zqclnNOY+nmo71knjIwhBQPM"},
	{"aws_secret_access_key = X2GvrKik/rgXKSmrh4jX5BbG8BO4tEU7Ig1kxrZl", "X2GvrKik/rgXKSmrh4jX5BbG8BO4tEU7Ig1kxrZl"},
}

// TestSecretsNeverReachTheHome drives the binary with secrets in every
// field it takes (content, title, tags, namespace, kind, update, edge
// endpoints, notes and relation, namespace settings, compaction summary,
// references), with the daemon logging at debug level: no output and no
// error message carries a secret, and once the daemon has stopped no file
// under the home (Pebble, the search index, memmesh.log) holds one.
func TestSecretsNeverReachTheHome(t *testing.T) {
	home := newHome(t)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("log_level = \"debug\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var outputs []string
	runIn := func(stdin string, wantOK bool, args ...string) result {
		t.Helper()
		r := mm(t, home, stdin, args...)
		if (r.code == 0) != wantOK {
			t.Fatalf("memmesh %s: exit %d (want success %v)\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, wantOK, r.stdout, r.stderr)
		}
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}
	run := func(wantOK bool, args ...string) result {
		t.Helper()
		return runIn("", wantOK, args...)
	}
	decode := func(out string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
	}
	for i, s := range e2eSecrets {
		var c captureOut
		r := run(true, "capture", "--ns", "e2e", "--title", s.line, "--", "Deploy notes: "+s.line)
		decode(r.stdout, &c)
		runIn("A transcript:\n"+s.line+"\nand more.", true, "capture", "--ns", "e2e", "--kind", "fact", "--file", "-")
		other := run(true, "capture", "--ns", "e2e", "member two of secret "+string(rune('a'+i)))
		var o captureOut
		decode(other.stdout, &o)
		run(true, "update", c.ID, "--content", "Updated: "+s.line, "--title", "Updated "+s.line)
		run(true, "link", c.ID, "touches", "url:https://ci.example.com/run?q="+s.line, "--note", "seen in "+s.line)
		run(true, "graph", c.ID)
		run(true, "compact", "apply", c.ID, o.ID, "--summary", "Both said: "+s.line)
		run(false, "capture", "--tag", s.line, "tagged")
		run(false, "capture", "--ns", s.line, "namespaced")
		run(false, "capture", "--kind", s.line, "kinded")
		run(false, "update", c.ID, "--tag-add", s.line)
		run(false, "link", c.ID, s.line, "file:x.go")
		run(false, "ns", "set", s.line, "--sync", "all")
		run(false, "show", s.line)
	}
	for _, out := range outputs {
		for _, s := range e2eSecrets {
			if strings.Contains(out, s.secret) {
				t.Errorf("output carries %q:\n%s", s.secret, out)
			}
		}
	}
	stopHome(t, home)
	checkFilesHoldNoSecret(t, home)
}

// TestDeviceNameWithSecret starts a daemon whose --name holds a token: it
// refuses to start, and says why without the token.
func TestDeviceNameWithSecret(t *testing.T) {
	home := newHome(t)
	const token = "glpat-3tN-vX1GFBiBXTVsAsvt"
	r := mm(t, home, "", "serve", "--name", "laptop "+token, "--listen", "127.0.0.1:0", "--http", "")
	if r.code == 0 || !strings.Contains(r.stderr, "device name") || strings.Contains(r.stdout+r.stderr, token) {
		t.Fatalf("serve --name with a token: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	checkFilesHoldNoSecret(t, home)
}

// checkFilesHoldNoSecret fails for every secret of e2eSecrets found in a
// file under home.
func checkFilesHoldNoSecret(t *testing.T, home string) {
	t.Helper()
	files, err := homescan.Files(home, func(path string, data []byte) {
		for _, s := range e2eSecrets {
			if bytes.Contains(data, []byte(s.secret)) || bytes.Contains(data, []byte(strings.ToLower(s.secret))) {
				t.Errorf("%s holds %q", strings.TrimPrefix(path, home), s.secret)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no file under the home")
	}
}

// TestDaemonLogHoldsNoSecret sends the daemon's MCP endpoint a request that
// it refuses and logs, with a token in its Origin: the log does not keep
// the token.
func TestDaemonLogHoldsNoSecret(t *testing.T) {
	home := newHome(t)
	url, _ := startServeHTTP(t, home)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(mcpInitialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example/?token="+e2eSecrets[0].secret)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d, want 403", resp.StatusCode)
	}
	stopHome(t, home)
	log, err := os.ReadFile(filepath.Join(home, "serve-http.log"))
	if err != nil || !strings.Contains(string(log), "refused") {
		t.Fatalf("the refusal is not logged (%v):\n%s", err, log)
	}
	checkFilesHoldNoSecret(t, home)
}
