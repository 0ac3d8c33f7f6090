package secrets

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/internal/secrets/secretstest"
)

func TestScrubSecretCorpus(t *testing.T) {
	cases := secretstest.Cases(t)
	if len(cases) < 40 {
		t.Fatalf("%d secret samples, want at least 40", len(cases))
	}
	kinds := make(map[string]bool)
	for _, r := range secretRules {
		kinds[r.kind] = false
	}
	for _, c := range cases {
		kinds[c.Kind] = true
		t.Run(c.Name, func(t *testing.T) {
			out, got := Scrub(c.Input)
			for _, s := range c.Secrets {
				if strings.Contains(out, s) {
					t.Errorf("secret %q survived in %q", s, out)
				}
			}
			if out != c.Want {
				t.Errorf("Scrub(%q)\n got %q\nwant %q", c.Input, out, c.Want)
			}
			if want := []string{c.Kind}; !reflect.DeepEqual(got, want) {
				t.Errorf("kinds = %q, want %q", got, want)
			}
		})
	}
	for kind, covered := range kinds {
		if !covered {
			t.Errorf("kind %s has no sample in testdata/secrets", kind)
		}
	}
}

func TestScrubBenignCorpus(t *testing.T) {
	texts := secretstest.Benign(t)
	if len(texts) < 30 {
		t.Fatalf("%d benign samples, want at least 30", len(texts))
	}
	for name, text := range texts {
		if out, kinds := Scrub(text); out != text || kinds != nil {
			t.Errorf("%s changed (kinds %q):\n%s", name, kinds, out)
		}
	}
}

func TestScrub(t *testing.T) {
	const (
		ghToken  = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"
		awsID    = "AKIAO20CLRDF1Q9UZZWY"
		awsKey   = "X2GvrKik/rgXKSmrh4jX5BbG8BO4tEU7Ig1kxrZl"
		slackBot = "xoxb-633949001157-0667768193776-NRHqwtCOep4Z0oswxpsmsaLT"
		jwt      = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJlMTIzNDU2"
	)
	tests := []struct {
		name  string
		in    string
		want  string
		kinds []string
	}{
		{"empty", "", "", nil},
		{"secret is the whole text", ghToken, "[REDACTED:github-token]", []string{"github-token"}},
		{"secret at start", ghToken + " is the CI token", "[REDACTED:github-token] is the CI token", []string{"github-token"}},
		{"secret at end", "the CI token is " + ghToken, "the CI token is [REDACTED:github-token]", []string{"github-token"}},
		{"secret at end of sentence", "Use " + ghToken + ".", "Use [REDACTED:github-token].", []string{"github-token"}},
		{"in backticks", "run `export GH_TOKEN=" + ghToken + "`", "run `export GH_TOKEN=[REDACTED:github-token]`", []string{"github-token"}},
		{
			"aws credentials file",
			"[ci]\naws_access_key_id = " + awsID + "\naws_secret_access_key = " + awsKey + "\n",
			"[ci]\naws_access_key_id = [REDACTED:aws-access-key-id]\naws_secret_access_key = [REDACTED:aws-secret-key]\n",
			[]string{"aws-access-key-id", "aws-secret-key"},
		},
		{
			"several kinds, sorted and deduplicated",
			"bot " + slackBot + ", again " + slackBot + ", DB_PASSWORD=hunter2x and jwt " + jwt,
			"bot [REDACTED:slack-token], again [REDACTED:slack-token], DB_PASSWORD=[REDACTED:password] and jwt [REDACTED:jwt]",
			[]string{"jwt", "password", "slack-token"},
		},
		{
			"unicode around secrets",
			"Schlüssel für Grafana: " + ghToken + " — 注意: パスワード password: Tr0ub4dor&3 ✓",
			"Schlüssel für Grafana: [REDACTED:github-token] — 注意: パスワード password: [REDACTED:password] ✓",
			[]string{"github-token", "password"},
		},
		{
			"value echoed elsewhere",
			"API_TOKEN=k9Vx2Lq7Zp4M\nthen: curl -u me:k9Vx2Lq7Zp4M https://api.example.com",
			"API_TOKEN=[REDACTED:token]\nthen: curl -u me:[REDACTED:token] https://api.example.com",
			[]string{"token"},
		},
		{
			"short value not echoed",
			"DB_PASSWORD=x1 and x1 elsewhere",
			"DB_PASSWORD=[REDACTED:password] and x1 elsewhere",
			[]string{"password"},
		},
		{
			"query parameters after a token stay",
			"GET /cb?token=Zx81kq0pQ&state=abc&page=2",
			"GET /cb?token=[REDACTED:token]&state=abc&page=2",
			[]string{"token"},
		},
		{
			"ampersand inside a password",
			"PASSWORD=ab&cd12 ok",
			"PASSWORD=[REDACTED:password] ok",
			[]string{"password"},
		},
		{
			"private span wins over secrets inside it",
			"a <private>token " + ghToken + "</private> b",
			"a [REDACTED:private] b",
			[]string{"private"},
		},
		{
			"jwt in a bearer header is reported as a jwt",
			"Authorization: Bearer " + jwt,
			"Authorization: Bearer [REDACTED:jwt]",
			[]string{"jwt"},
		},
		{
			"token inside a URL with credentials",
			"https://x-access-token:" + ghToken + "@github.com/acme/app.git",
			"https://x-access-token:[REDACTED:github-token]@github.com/acme/app.git",
			[]string{"github-token"},
		},
		{
			".netrc entries over several lines",
			"machine api.heroku.com\n  login ops@acme.io\n  password 8c6f3a1b-2d4e-4f5a-9b6c-7d8e9f0a1b2c\nmachine git.heroku.com\n  password Tr0ub4dor\n  login ops@acme.io\n",
			"machine api.heroku.com\n  login ops@acme.io\n  password [REDACTED:password]\nmachine git.heroku.com\n  password [REDACTED:password]\n  login ops@acme.io\n",
			[]string{"password"},
		},
		{"a netrc-like sentence without a login", "the default password is in the vault", "the default password is in the vault", nil},
		{"docker auth that encodes no password", `{"auth": "dXNlcm5hbWU="}`, `{"auth": "dXNlcm5hbWU="}`, nil},
		{"unclosed private tag is left alone", "wrap it in <private> next time", "wrap it in <private> next time", nil},
		{"empty assignment", "set PASSWORD= in your env", "set PASSWORD= in your env", nil},
		{"placeholder", `"password": "<your password>"`, `"password": "<your password>"`, nil},
		{"env reference", "DB_PASSWORD=$DB_PASSWORD", "DB_PASSWORD=$DB_PASSWORD", nil},
		{"plain word after colon", "Token: required", "Token: required", nil},
		{"bearer alone", "Bearer", "Bearer", nil},
		{"sk inside a word", "a risk-based-approach-for-everyone-2024 plan", "a risk-based-approach-for-everyone-2024 plan", nil},
		{"marker is kept", "DB_PASSWORD=[REDACTED:password]", "DB_PASSWORD=[REDACTED:password]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, kinds := Scrub(tt.in)
			if out != tt.want {
				t.Errorf("Scrub(%q)\n got %q\nwant %q", tt.in, out, tt.want)
			}
			if !reflect.DeepEqual(kinds, tt.kinds) {
				t.Errorf("kinds = %q, want %q", kinds, tt.kinds)
			}
		})
	}
}

func TestScrubIsIdempotent(t *testing.T) {
	for _, c := range secretstest.Cases(t) {
		once, _ := Scrub(c.Input)
		if twice, kinds := Scrub(once); twice != once || kinds != nil {
			t.Errorf("%s: second Scrub changed %q to %q (kinds %q)", c.Name, once, twice, kinds)
		}
	}
}

// markerPattern matches the markers Scrub writes.
var markerPattern = regexp.MustCompile(`\[REDACTED:[a-z-]+\]`)

func FuzzScrub(f *testing.F) {
	for _, c := range secretstest.Cases(f) {
		f.Add(c.Input)
	}
	for _, text := range secretstest.Benign(f) {
		f.Add(text)
	}
	f.Add("password=abc123 password=abc123x [REDACTED:password] <private>x</private>")
	f.Fuzz(func(t *testing.T, text string) {
		out, kinds := Scrub(text)
		if (out == text) != (kinds == nil) {
			t.Fatalf("Scrub(%q) = %q with kinds %q", text, out, kinds)
		}
		if again, more := Scrub(out); again != out || more != nil {
			t.Fatalf("not idempotent: Scrub(%q) = %q, then %q (kinds %q)", text, out, again, more)
		}
		hinted, lower := hintedRules(text), asciiLower(text)
		for i, r := range secretRules {
			hay := text
			if r.fold {
				hay = lower
			}
			if hinted&(1<<i) == 0 && r.re.MatchString(hay) {
				t.Fatalf("rule %d (%s) matches %q but none of its hints %q is found", i, r.kind, text, r.hints)
			}
		}
		spans := findSecrets(text)
		if len(spans) > maxEchoValues {
			return
		}
		// Outside the markers, no detected secret long enough to be
		// searched for elsewhere may remain.
		pieces := markerPattern.Split(out, -1)
		for _, s := range spans {
			secret := text[s.start:s.end]
			if len(secret) < minEchoLen {
				continue
			}
			if slices.ContainsFunc(pieces, func(p string) bool { return strings.Contains(p, secret) }) {
				t.Fatalf("Scrub(%q) = %q still holds %q", text, out, secret)
			}
		}
	})
}

// TestScrubLargeInputs runs Scrub on large inputs built to make a careless
// matcher quadratic: many starts of a secret that never complete, or that
// all wait for one far-away end.
func TestScrubLargeInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	const size = 256 << 10
	for _, piece := range []string{
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu\n",
		"<private>", "eyJhbGciOiJIUzI1NiJ9.", "xsk-", "sk-", "://a:b", "Authorization: Bearer ",
		"password=", "PASSWORD=abc123x ", "token=a1&b", "secret_access_key=",
		"mysql -p", "mysql -pX ", "docker login -p ", "sshpass ", "curl -u a:", "curl -u a:b ",
		"the password is ", "password for the ", "password: x ", ";pwd=", ";Password=a;", "a:b@tcp(",
		"AccountKey=", "glrt-", "&sig=", "machine a login b ", "machine a password ", "default login a password ",
		"&password=", "password=a ", "host=a password=", "\"auth\": \"", "_auth=", "redis-cli -a ", "mongosh -p ",
		"AC0123456789abcdef0123456789abcdef:",
	} {
		text := strings.Repeat(piece, size/len(piece))
		out, _ := Scrub(text)
		if again, _ := Scrub(out); again != out {
			t.Errorf("%q repeated: not idempotent", piece)
		}
	}
}

// benignMemory is a typical 1 KB memory that names no secret but mentions
// passwords and tokens, so the cheap pre-check lets some rules run.
const benignMemory = `Decision: sessions use opaque tokens, not JWTs.

The session middleware (internal/auth/session.go) issues a 256-bit random token on login and
stores only its SHA-256 in Postgres; the cookie is HttpOnly, Secure, SameSite=Lax. Tokens expire
after 14 days of inactivity and are rotated on privilege changes. The password reset flow reuses
the same store with a 30-minute TTL. We rejected JWTs because revocation needs a denylist anyway
and the payload leaked tenant ids to the browser. Related: commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d,
tenant 018f3c2e-7b1a-7c4d-9e2f-3a4b5c6d7e8f, docs at https://wiki.example.com/auth/sessions.
Rate limiting is a token bucket per client (capacity 100, refill 10/s) in internal/ratelimit.
Tests: go test ./internal/auth/... -run TestSession; the fixture users have no password set,
login goes through the test helper newTestSession(t). Reviewed by the platform team.
`

// plainMemory is a typical 1 KB memory with none of the pre-check hints.
const plainMemory = `Convention: every package under internal/ has a doc.go with a package comment that
explains what the package owns and what it must not import. Table tests use want fields and
t.Run names; helpers call t.Helper(). Integration tests that need Postgres are behind the
integration build tag and run in CI with a service container, never against a shared database.
Logging: log/slog with a component attribute; no fmt.Println outside main. Errors are wrapped with
%w and the sentinel errors are documented on the interface that returns them. Timeouts come from
the config, not literals, so tests can shrink them. When a change touches the sync protocol,
bump the protocol version and add a compatibility test with the previous release binary.
Benchmarks for the hot paths live next to the code and are run on the 2-core CI machine;
regressions above 10% block the merge. Commit subjects follow "pkg: what changed".
`

func BenchmarkScrubBenign(b *testing.B) {
	for _, bm := range []struct{ name, text string }{{"plain", plainMemory}, {"mentions", benignMemory}} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(bm.text)))
			for b.Loop() {
				if out, _ := Scrub(bm.text); len(out) != len(bm.text) {
					b.Fatal("benign text changed")
				}
			}
		})
	}
}

func BenchmarkScrubSecrets(b *testing.B) {
	var text strings.Builder
	for _, c := range secretstest.Cases(b)[:12] {
		text.WriteString(c.Input)
		text.WriteString("\n")
	}
	b.SetBytes(int64(text.Len()))
	for b.Loop() {
		Scrub(text.String())
	}
}
