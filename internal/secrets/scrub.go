// Package secrets finds and redacts secrets (API keys, tokens, passwords,
// private keys, connection strings, <private> spans) in text: the node
// scrubs every memory, edge and name before storing it, the MCP server
// the provenance it records, and ScrubLogs every log record. It imports
// nothing of memmesh.
package secrets

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// redactedPrefix starts every marker Scrub writes: "[REDACTED:<kind>]".
const redactedPrefix = "[REDACTED:"

const (
	// minEchoLen is the length from which a detected secret is also redacted
	// wherever else it occurs in the same text ("DB_PASSWORD=x ... psql -p x").
	// Shorter values are too likely to be ordinary words.
	minEchoLen = 8
	// maxEchoValues caps the distinct secrets searched for again, keeping
	// Scrub linear in the size of its input.
	maxEchoValues = 64
)

// secretRule finds one kind of secret. A rule's pattern runs only if one
// of its hints occurs in the text; all hints are looked for in one pass, so
// benign text costs little more than reading it once.
type secretRule struct {
	kind string
	// hints are substrings one of which must occur for the rule to run.
	hints []string
	// fold makes the rule case-insensitive: its hints and pattern are
	// written in lower case and run on the ASCII-lower-cased text, which has
	// the same byte offsets (and, unlike (?i), keeps literal prefixes fast).
	fold bool
	// word counts a hint only at the start of a word; the pattern starts
	// with \b.
	word bool
	// follows, when set, counts a hint only when it accepts the text after
	// it (assignmentFollows: an '=' or ':' follows).
	follows func(rest string) bool
	re      *regexp.Regexp
	// locate returns the bounds of the secret in a match (m holds the
	// submatch indices), or ok=false to reject the match. nil means the
	// first submatch if the pattern has one, else the whole match, kept
	// only if valid (when set) accepts it.
	locate func(text string, m []int) (start, end int, ok bool)
	valid  func(secret string) bool
}

// secretRules lists every kind of secret Scrub redacts, in priority order:
// when matches of several rules overlap, their union is redacted under the
// kind of the earliest rule. testdata/secrets has samples of every kind.
var secretRules = []secretRule{
	// <private>...</private> spans, tags included, over any number of lines.
	{kind: "private", fold: true, hints: []string{"<private>"},
		re: regexp.MustCompile(`(?s)<private>.*?</private>`)},
	// PEM and PGP private key blocks through the END line.
	{kind: "private-key", hints: []string{"-----BEGIN"},
		re: regexp.MustCompile(`(?s)-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----`)},
	// A private key block cut off before its END line, through its last
	// base64 or header line. (A separate rule: as an alternative of the
	// one above, every block would search the rest of the text for END.)
	{kind: "private-key", hints: []string{"-----BEGIN"},
		re: regexp.MustCompile(`-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----` +
			`(?:(?:\s|\\[rn])+(?:[A-Za-z0-9+/=]{16,}|(?:Proc-Type|DEK-Info|Version|Comment):[^\n\\]*))+`)},
	// Anthropic: sk-ant-api03-..., sk-ant-admin01-... (before OpenAI's sk-).
	{kind: "anthropic-key", word: true, hints: []string{"sk-ant-"},
		re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`)},
	// OpenAI: sk-<48>, sk-proj-..., sk-svcacct-..., sk-admin-....
	{kind: "openai-key", word: true, hints: []string{"sk-"},
		re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), valid: lettersAndDigits},
	// Google API keys: AIza + 35.
	{kind: "google-api-key", word: true, hints: []string{"AIza"},
		re: regexp.MustCompile(`\bAIza[A-Za-z0-9_-]{35,}`)},
	// Stripe secret and restricted keys, live and test, and webhook
	// signing secrets.
	{kind: "stripe-key", word: true, hints: []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_"},
		re: regexp.MustCompile(`\b(?:[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})`)},
	// SendGrid: SG.<22>.<43>.
	{kind: "sendgrid-key", word: true, hints: []string{"SG."},
		re: regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`)},
	// Twilio API key sids: SK + 32 hex.
	{kind: "twilio-key", word: true, hints: []string{"SK"},
		re: regexp.MustCompile(`\bSK[0-9a-fA-F]{32}\b`)},
	// Twilio auth tokens and API key secrets, recognisable by the account
	// sid or API key sid they are given with: AC...:TOKEN (as curl -u and
	// URLs take them), Client("AC...", "TOKEN"). The account sid is no
	// secret and stays.
	{kind: "twilio-key", word: true, hints: []string{"AC", "SK"}, follows: hexFollows(32),
		re: regexp.MustCompile(`\b(?:AC|SK)[0-9a-fA-F]{32}["']?[ \t]*[,:][ \t]*["']?([A-Za-z0-9]{32})\b`)},
	// Hugging Face user access tokens: hf_ + 34 letters.
	{kind: "huggingface-token", word: true, hints: []string{"hf_"},
		re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`)},
	// npm automation and publish tokens: npm_ + 36.
	{kind: "npm-token", word: true, hints: []string{"npm_"},
		re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36,}`)},
	// PyPI API tokens: pypi- + a base64url macaroon.
	{kind: "pypi-token", word: true, hints: []string{"pypi-"},
		re: regexp.MustCompile(`\bpypi-[A-Za-z0-9_-]{40,}`), valid: lettersAndDigits},
	// RubyGems API keys: rubygems_ + 48 hex.
	{kind: "rubygems-key", word: true, hints: []string{"rubygems_"}, follows: hexFollows(48),
		re: regexp.MustCompile(`\brubygems_[a-f0-9]{48}\b`)},
	// NuGet.org API keys: oy2 + 43 lower-case letters and digits.
	{kind: "nuget-key", word: true, hints: []string{"oy2"}, follows: base32Follows(43),
		re: regexp.MustCompile(`\boy2[a-z0-9]{43}\b`)},
	// Databricks personal access tokens: dapi + 32 hex, with a -N suffix
	// on Azure.
	{kind: "databricks-token", word: true, hints: []string{"dapi"}, follows: hexFollows(32),
		re: regexp.MustCompile(`\bdapi[a-f0-9]{32}(?:-[0-9]+)?\b`)},
	// Mailgun private API keys: key- + 32 hex (not pubkey-...).
	{kind: "mailgun-key", word: true, hints: []string{"key-"}, follows: hexFollows(32),
		re: regexp.MustCompile(`\bkey-[a-f0-9]{32}\b`)},
	// GitHub: ghp_ gho_ ghu_ ghs_ ghr_ + 36, and fine-grained github_pat_....
	{kind: "github-token", word: true, hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
	// GitLab personal, deploy, runner, pipeline trigger, feed and CI/CD
	// job tokens: a prefix + 20 or more.
	{kind: "gitlab-token", word: true, hints: []string{"glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-"},
		re: regexp.MustCompile(`\bgl(?:pat|dt|rt|ptt|ft|cbt)-[A-Za-z0-9_-]{20,}`)},
	// DigitalOcean personal access, OAuth and refresh tokens.
	{kind: "digitalocean-token", hints: []string{"_v1_"},
		re: regexp.MustCompile(`\bdo[opr]_v1_[a-f0-9]{64}\b`)},
	// Azure storage account keys and Service Bus / Event Hubs shared access
	// keys in connection strings.
	{kind: "azure-key", fold: true, hints: []string{"tkey=", "skey="},
		re: regexp.MustCompile(`(?:accountkey|sharedaccesskey)=([a-z0-9+/]{20,}={0,2})`)},
	// Azure API Management and Cognitive Services subscription keys, in
	// their header or query parameter: 32 hex.
	{kind: "azure-key", fold: true, follows: assignmentFollows, hints: []string{"subscription-key"},
		re: regexp.MustCompile(`subscription-key["']?[ \t]*[:=][ \t]*["']?([a-f0-9]{32})\b`)},
	// Azure shared access signatures: the sig parameter of a SAS token (an
	// HMAC-SHA256 in base64, URL-encoded or not) in a URL's query, a
	// connection string's SharedAccessSignature=... or a Service Bus
	// "SharedAccessSignature sr=...&sig=..." header.
	{kind: "azure-sas", word: true, hints: []string{"sig="},
		re: regexp.MustCompile(`\bsig=([A-Za-z0-9%+/]{40,}=*)`), valid: lettersAndDigits},
	// Slack incoming webhooks: the path after /services/ is the secret.
	{kind: "slack-webhook", hints: []string{"https://hooks.slack.com/"},
		re: regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/-]{16,})`)},
	// Slack bot, user, app, refresh and session tokens.
	{kind: "slack-token", word: true, hints: []string{"xox"},
		re: regexp.MustCompile(`\bxox[abeoprs]-[A-Za-z0-9-]{10,}`), valid: lettersAndDigits},
	// AWS access key ids, long-term (AKIA) and temporary (ASIA).
	{kind: "aws-access-key-id", word: true, hints: []string{"AKIA", "ASIA"},
		re: regexp.MustCompile(`\bA(?:KIA|SIA)[A-Z0-9]{16}\b`)},
	// AWS secret access keys, recognisable only by the name they are
	// assigned to: aws_secret_access_key = <40 base64 characters>, or
	// "SecretAccessKey": "..." in the JSON the AWS CLI prints.
	{kind: "aws-secret-key", fold: true, follows: assignmentFollows, hints: []string{"secret_access_key", "secretaccesskey"},
		re: regexp.MustCompile(`secret(?:_access_|access)key["']?[ \t]*(?::=|=>|[:=])[ \t]*["']?([a-z0-9/+=]{40,})`)},
	// JSON web tokens: three base64url segments, the header starting eyJ
	// ({"); the signature is empty for unsigned tokens.
	{kind: "jwt", word: true, hints: []string{"eyJ"},
		re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`)},
	// Authorization headers carrying a bearer token (any length).
	{kind: "bearer-token", fold: true, follows: assignmentFollows, hints: []string{"authorization"},
		re:    regexp.MustCompile(`authorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|token)[ \t]+([a-z0-9._~+/-]{8,}=*)`),
		valid: notPlaceholder},
	// Authorization headers carrying basic credentials.
	{kind: "basic-auth", fold: true, follows: assignmentFollows, hints: []string{"authorization"},
		re:    regexp.MustCompile(`authorization["']?[ \t]*[:=][ \t]*["']?basic[ \t]+([a-z0-9+/]{8,}=*)`),
		valid: notPlaceholder},
	// Registry credentials kept as base64 "user:password": the "auth" of
	// Docker's config.json and the _auth of npm's .npmrc.
	{kind: "basic-auth", follows: assignmentFollows, hints: []string{`"auth"`, "_auth"},
		re:    regexp.MustCompile(`(?:"auth"|\b_auth)[ \t]*[:=][ \t]*"?([A-Za-z0-9+/]{8,}={0,2})`),
		valid: encodesCredentials},
	// "Bearer <token>" anywhere else, for long tokens of letters and digits.
	{kind: "bearer-token", fold: true, word: true, hints: []string{"bearer"},
		re: regexp.MustCompile(`\bbearer[ \t]+([a-z0-9._~+/-]{20,}=*)`), valid: lettersAndDigits},
	// Passwords in URLs: scheme://user:password@host.
	{kind: "url-password", hints: []string{"://"},
		re: regexp.MustCompile(`://[^\s:@/?#\[]*:([^\s/?]+)@`), valid: notPlaceholder},
	// Passwords in Go MySQL DSNs: user:password@tcp(host:3306)/db.
	{kind: "url-password", hints: []string{"@tcp(", "@unix("},
		re: regexp.MustCompile(`[A-Za-z0-9_.-]+:([^\s:@/"'\x60\[\]]+)@(?:tcp|unix)\(`), valid: notPlaceholder},
	// Values assigned to secret-looking names (see assignment).
	assignment("password", "password", "passwd", "_pwd", "-pwd", ".pwd"),
	assignment("token", "token"),
	assignment("api-key", "api_key", "api-key", "apikey"),
	assignment("secret", "secret", "secret_key", "secret-key", "secretkey",
		"access_key", "access-key", "accesskey", "private_key", "private-key", "privatekey"),
	// The rules below come after the assignments: where their matches
	// overlap an assignment's (an echo of API_TOKEN's value in curl -u), the
	// assignment names the kind.
	//
	// Passwords in ADO.NET and ODBC connection strings, whatever their
	// shape: ...;Password=...; and ...;PWD=...;.
	{kind: "password", fold: true, follows: assignmentFollows, hints: []string{"password", ";pwd"},
		re: regexp.MustCompile(`;[ \t]*(?:password|pwd)[ \t]*=[ \t]*([^;\n"'\x60]*[^;\n"'\x60 \t])|` +
			`\bpassword[ \t]*=[ \t]*([^;\n"'\x60 \t][^;\n"'\x60]*);`),
		locate: cliValue},
	// Passwords in DSNs, whatever their shape, where the password is one
	// parameter among others: in a URL's query
	// (jdbc:postgresql://db/shop?user=app&password=X) or a libpq key=value
	// list (host=db user=app password=X dbname=shop); see dsnPassword.
	{kind: "password", fold: true, follows: equalsFollows, hints: []string{"password", "passwd"},
		re: regexp.MustCompile(`([?&])pass(?:word|wd)=([^&\s"'\x60#]+)|` +
			`\bpass(?:word|wd)[ \t]*=[ \t]*([^\s"'\x60;&]+)`),
		locate: dsnPassword},
	// Passwords in .netrc files (read by curl, git, ftp and pip): the
	// value after "password" in an entry that starts with machine HOST, or
	// default, and has a login, on one line or several; see netrcPassword.
	{kind: "password", word: true, hints: []string{"machine", "default"}, follows: netrcFollows,
		re:     regexp.MustCompile(`\b(?:machine[ \t\r\n]+\S+|default)((?:[ \t\r\n]+(?:login|account|port|password)[ \t\r\n]+\S+)+)`),
		locate: netrcPassword},
	// Passwords on command lines. mysql and mariadb take one glued to -p
	// (a bare -p prompts, and the word after it is the database).
	commandPassword(`\b(?:mysql|mariadb)[a-z_-]*`, `-p`, " -p", "\t-p"),
	// docker, podman and nerdctl login take -p VALUE or --password VALUE
	// (not --password-stdin).
	commandPassword(`\b(?:docker|podman|nerdctl)[ \t]+login\b`, `(?:-p|--password)(?:[ \t]+|=)`, " -p", "\t-p", " --password", "\t--password"),
	// sshpass -p VALUE (not -f FILE or -e).
	commandPassword(`\bsshpass\b`, `-p[ \t]*`, " -p", "\t-p"),
	// redis-cli -a VALUE, and the MongoDB shell and tools' -p VALUE or
	// --password VALUE (without a value, both prompt).
	// (Their hints are the commands' names, rarer than their options; the
	// patterns start with the names, which Go's regexp then finds fast.)
	commandPassword(`redis-cli\b`, `(?:-a|--pass)[ \t]+`, "redis-cli"),
	commandPassword(`mongo(?:sh|dump|restore|import|export|stat|top)?\b`, `(?:-p|--password)(?:[ \t]+|=)`, "mongo"),
	// curl -u USER:PASSWORD (USER alone, or USER: makes curl prompt).
	commandPassword(`\bcurl\b`, `(?:-u[ \t]*|--user(?:[ \t]+|=))['"]?[^\s:'"]*:`, " -u", "\t-u", " --user", "\t--user"),
	// Passwords in prose: "the password is X", "the password for the wifi
	// was X", "Admin password: X" (see proseValue).
	// The pattern starts at "ass", a literal that Go's regexp finds fast and
	// that needs no lower-cased copy of the text; proseValue checks the p
	// or P before it.
	{kind: "password", hints: []string{"sword", "phrase", "sswd"}, follows: proseFollows,
		re: regexp.MustCompile(`ass(?:word|phrase|wd)\b` +
			`(?:[ \t]+(?:for|of|on|to)[ \t][^\n.,;:!?="'\x60]*?)?` +
			`(?:[ \t]+(?:is|was|will be)[ \t]*:?[ \t]+(?:(?:now|still|also|currently|set to)[ \t]+)?|([ \t]*:[ \t]*))` +
			`(?:"([^"\n]+)"|'([^'\n]+)'|\x60([^\x60\n]+)\x60|([^\s"'\x60]+))`),
		locate: proseValue},
}

// commandPassword returns the rule for a password given on the command
// line of a program: after the command's words (command, a regular
// expression), on the same line and before a |, ; or &, the option (flag,
// a regular expression that ends where the value starts) and the value,
// quoted or bare. Its hints are the option with the blank before it: " -p"
// is rarer in text than a command's name.
func commandPassword(command, flag string, hints ...string) secretRule {
	return secretRule{
		kind:  "password",
		hints: hints,
		re: regexp.MustCompile(command + `[^\n|;&]*?[ \t]` + flag +
			`(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"\x60-][^\s'"\x60]*))`),
		locate: cliValue,
	}
}

// cliValue locates the value of a command-line or connection-string
// password: the first submatch that took part, without the punctuation
// that ends a sentence or a bracket; it must hold a letter or a digit and
// be no placeholder.
func cliValue(text string, m []int) (start, end int, ok bool) {
	for g := 1; 2*g < len(m); g++ {
		if start, end = m[2*g], m[2*g+1]; start >= 0 {
			v := strings.TrimRight(text[start:end], ".,;:)]}>")
			end = start + len(v)
			return start, end, notPlaceholder(v) && strings.ContainsFunc(v, isAlnum)
		}
	}
	return 0, 0, false
}

// dsnPassword locates the password of a DSN match. Submatches: 2 the value
// of a URL query's password parameter, 3 that of a password=VALUE whose
// line also holds another libpq keyword (host=, dbname=, ...). Either is a
// password unless it is a placeholder: a DSN's password may be a word.
func dsnPassword(text string, m []int) (start, end int, ok bool) {
	if start, end = m[4], m[5]; start < 0 {
		start, end = m[6], m[7]
		if !libpqKeywordPattern.MatchString(lineAround(text, m[0], m[1])) {
			return 0, 0, false
		}
	}
	return start, end, notPlaceholder(text[start:end])
}

// libpqKeywordPattern finds a keyword of a libpq connection string other
// than the password.
var libpqKeywordPattern = regexp.MustCompile(`(?i)(?:^|[\s'"])(?:host|hostaddr|dbname|user|port|sslmode|connect_timeout)[ \t]*=`)

// maxLineAround bounds the text lineAround returns on each side of a
// match, keeping a rule that looks at a match's line linear.
const maxLineAround = 256

// lineAround returns the line of text that holds text[start:end], without
// the match itself and at most maxLineAround bytes on each side.
func lineAround(text string, start, end int) string {
	from := max(0, start-maxLineAround)
	if i := strings.LastIndexByte(text[from:start], '\n'); i >= 0 {
		from += i + 1
	}
	to := min(len(text), end+maxLineAround)
	if i := strings.IndexByte(text[end:to], '\n'); i >= 0 {
		to = end + i
	}
	return text[from:start] + " " + text[end:to]
}

// netrcPassword locates the password of a .netrc entry: submatch 1 holds
// the entry's keyword and value pairs after machine HOST (or default). An
// entry without a login is no .netrc (it may be prose: "the default
// password is ...").
func netrcPassword(text string, m []int) (start, end int, ok bool) {
	var login bool
	start = -1
	for i := m[2]; i < m[3]; {
		kw, kwEnd := nextField(text, i, m[3])
		v, vEnd := nextField(text, kwEnd, m[3])
		switch text[kw:kwEnd] {
		case "login":
			login = true
		case "password":
			if start < 0 {
				start, end = v, vEnd
			}
		}
		i = vEnd
	}
	if !login || start < 0 {
		return 0, 0, false
	}
	raw := text[start:end]
	v := strings.TrimRight(raw, ".,;:)]}>")
	return start, start + len(v), notPlaceholder(raw) && notPlaceholder(v)
}

// nextField returns the bounds of the next blank-separated field of
// text[i:limit].
func nextField(text string, i, limit int) (start, end int) {
	for i < limit && isBlank(text[i]) {
		i++
	}
	start = i
	for i < limit && !isBlank(text[i]) {
		i++
	}
	return start, i
}

// encodesCredentials reports whether v is the base64 of "user:password"
// in printable text, as registries' auth entries are.
func encodesCredentials(v string) bool {
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	}
	user, password, found := strings.Cut(string(raw), ":")
	return err == nil && found && user != "" && password != "" && utf8.Valid(raw) &&
		!strings.ContainsFunc(string(raw), unicode.IsControl)
}

// assignment returns the rule for values assigned to names ending in one of
// keys, in env files (KEY=value, export KEY="value"), YAML (key: value),
// JSON ("key": "value"), TOML and code (key = "value", key := "value") and
// URL queries (?key=value). A bare "pwd" is no key: PWD=/home/me is the
// working directory. Submatches: 1 the key's ending, 2 the separator, 3 a
// double-quoted, 4 a single-quoted, 5 a bare value; assignedValue decides.
func assignment(kind string, keys ...string) secretRule {
	alts := make([]string, len(keys))
	for i, k := range keys {
		alts[i] = regexp.QuoteMeta(k)
	}
	return secretRule{
		kind:    kind,
		fold:    true,
		follows: assignmentFollows,
		hints:   keys,
		re: regexp.MustCompile(`(` + strings.Join(alts, "|") + `)["']?([ \t]*(?::=|=>|[:=])[ \t]*)` +
			`(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'\x60;,]+))`),
		locate: assignedValue,
	}
}

// assignedValue locates the value of an assignment match. Quoted values are
// secrets unless they are placeholders. Bare values are secrets when they
// are no placeholder, code reference or small number, and either follow an
// upper-case KEY= directly, as in env files, or mix letters with digits (or
// are long and mix three character classes); this keeps prose such as
// "Token: see the docs" and code such as token=tok unchanged. A key that is
// the user name of a URL is left to the url-password rule.
func assignedValue(text string, m []int) (start, end int, ok bool) {
	for g := 3; g <= 4; g++ {
		if start, end = m[2*g], m[2*g+1]; start >= 0 {
			return start, end, notPlaceholder(text[start:end])
		}
	}
	start = m[10]
	raw := text[start:m[11]]
	if loc := queryParamPattern.FindStringIndex(raw); loc != nil {
		raw = raw[:loc[0]]
	}
	v := strings.TrimRight(raw, ".,:;!?)]}>")
	end = start + len(v)
	key, sep := text[m[2]:m[3]], text[m[4]:m[5]]
	switch {
	case !notPlaceholder(raw) || !notPlaceholder(v) || isCodeRef(v) || isSmallNumber(v) || inURLUserinfo(text, m[2]):
		return 0, 0, false
	case sep == "=" && strings.ToUpper(key) == key:
		return start, end, true
	default:
		return start, end, lettersAndDigits(v) || len(v) >= 12 && charClasses(v) >= 3
	}
}

// proseValue locates the password that prose names. Submatches: 1 the
// colon of "password: X", 2 to 4 a quoted value, 5 a bare one. A quoted
// value is a password unless it is a placeholder. A bare one is not when
// it describes the password instead ("is required", "was reset", "is
// stored hashed", "is the same"), is a small number ("is 12 characters")
// or code, or, after a colon, is not the last word of its clause
// ("Password: min 12 chars").
func proseValue(text string, m []int) (start, end int, ok bool) {
	if p := m[0] - 1; p < 0 || text[p] != 'p' && text[p] != 'P' || p > 0 && isWordByte(text[p-1]) {
		return 0, 0, false
	}
	for g := 2; g <= 4; g++ {
		if start, end = m[2*g], m[2*g+1]; start >= 0 {
			return start, end, notPlaceholder(text[start:end])
		}
	}
	start = m[10]
	v := strings.TrimRight(text[start:m[11]], ".,;:)]}>")
	end = start + len(v)
	switch {
	case !notPlaceholder(v), isSmallNumber(v), isCodeRef(v), describesPassword(v):
		return 0, 0, false
	case m[2] >= 0 && !clauseEnds(text[end:]):
		return 0, 0, false
	}
	return start, end, true
}

// passwordWords are the words that, after "the password is" or
// "password:", say something about the password rather than give it.
var passwordWords = map[string]bool{
	"a": true, "an": true, "the": true, "this": true, "that": true, "it": true, "its": true,
	"not": true, "no": true, "never": true, "too": true, "very": true, "so": true, "then": true,
	"in": true, "on": true, "at": true, "of": true, "for": true, "from": true, "by": true,
	"with": true, "without": true, "to": true, "into": true, "as": true, "like": true,
	"what": true, "which": true, "who": true, "where": true, "how": true, "my": true,
	"our": true, "their": true, "his": true, "her": true, "same": true, "different": true,
	"empty": true, "blank": true, "set": true, "unset": true, "reset": true, "required": true,
	"optional": true, "mandatory": true, "correct": true, "incorrect": true, "wrong": true,
	"right": true, "invalid": true, "valid": true, "missing": true, "unknown": true,
	"weak": true, "strong": true, "long": true, "short": true, "secure": true,
	"insecure": true, "safe": true, "unsafe": true, "ok": true, "okay": true, "fine": true,
	"sent": true, "kept": true, "lost": true, "shown": true, "hidden": true, "given": true,
	"written": true, "chosen": true, "taken": true, "known": true, "new": true, "old": true,
	"default": true, "random": true, "case": true, "min": true, "max": true, "minimum": true,
	"maximum": true, "at-least": true, "plaintext": true, "cleartext": true, "here": true,
	"there": true, "see": true, "ask": true, "use": true, "check": true, "enter": true,
	// type names: def login(password: str) -> bool
	"str": true, "string": true, "bytes": true, "text": true, "char": true, "varchar": true,
	"any": true, "secretstr": true,
}

// describesPassword reports whether v is a word that says something about
// a password (one of passwordWords, or an -ed, -ing, -ly, -able, -ible
// or -ive word: hashed, expiring, usually, guessable, visible, sensitive).
func describesPassword(v string) bool {
	w := strings.ToLower(v)
	if strings.Trim(w, "abcdefghijklmnopqrstuvwxyz-") != "" {
		return false
	}
	if passwordWords[w] {
		return true
	}
	for _, suffix := range []string{"ed", "ing", "ly", "able", "ible", "ive"} {
		if strings.HasSuffix(w, suffix) {
			return true
		}
	}
	return false
}

// clauseEnds reports whether rest, what follows a value, starts with the
// end of a line or of a clause.
func clauseEnds(rest string) bool {
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" || rest[0] == '\n' || rest[0] == '\r' {
		return true
	}
	return strings.IndexByte(".,;)!?", rest[0]) >= 0 && (len(rest) == 1 || strings.IndexByte(" \t\r\n", rest[1]) >= 0)
}

// isAlnum reports whether r is a letter or a digit.
func isAlnum(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// queryParamPattern finds the next parameter of a URL query, which ends a
// bare value: ?token=abc&page=2. Other '&' belong to the value.
var queryParamPattern = regexp.MustCompile(`&[A-Za-z_][A-Za-z0-9_.-]*=`)

// inURLUserinfo reports whether the key whose ending starts at text[i] is
// the user name of a URL (https://x-access-token:secret@host).
func inURLUserinfo(text string, i int) bool {
	for i > 0 && (isWordByte(text[i-1]) || text[i-1] == '.' || text[i-1] == '-') {
		i--
	}
	return strings.HasSuffix(text[:i], "://")
}

// placeholderWords are values that stand for a secret rather than being one.
var placeholderWords = map[string]bool{
	"password": true, "passwd": true, "pass": true, "secret": true, "token": true,
	"none": true, "null": true, "nil": true, "true": true, "false": true, "undefined": true,
}

// notPlaceholder reports whether v may be a real secret: it is not empty,
// not a redaction marker, not a reference to a variable or template ($X,
// ${X}, {{ x }}, {x}, <your-token>, %(x)s), not masked (****, xxxx) and not
// a stand-in such as "password" or "your_api_key".
func notPlaceholder(v string) bool {
	if v == "" || strings.Contains(v, "REDACTED") {
		return false
	}
	lower := strings.ToLower(v)
	switch {
	case v[0] == '$', v[0] == '{', strings.HasPrefix(v, "%("),
		v[0] == '<' && v[len(v)-1] == '>',
		strings.Trim(lower, "*x.-_•") == "",
		placeholderWords[lower],
		lower == "your", strings.HasPrefix(lower, "your_"), strings.HasPrefix(lower, "your-"), strings.HasPrefix(lower, "your "):
		return false
	}
	return true
}

// codeRefPattern matches dotted references such as cfg.APIKey or
// process.env.TOKEN.
var codeRefPattern = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+$`)

// isCodeRef reports whether a bare value is code that computes a secret
// (a call, an index or a dotted reference) rather than a literal.
func isCodeRef(v string) bool {
	return strings.ContainsAny(v, "([") || codeRefPattern.MatchString(v)
}

// isSmallNumber reports whether v is a number too short to be a secret,
// such as the 4096 of max_token=4096.
func isSmallNumber(v string) bool {
	return len(v) < 8 && strings.Trim(v, "0123456789") == ""
}

// lettersAndDigits reports whether s holds both an ASCII letter and a digit,
// as random tokens do and words do not.
func lettersAndDigits(s string) bool {
	return strings.ContainsAny(s, "0123456789") &&
		strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// charClasses counts the classes among lower case, upper case, digits and
// other characters that occur in s.
func charClasses(s string) int {
	var lower, upper, digit, other int
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z':
			lower = 1
		case 'A' <= c && c <= 'Z':
			upper = 1
		case '0' <= c && c <= '9':
			digit = 1
		default:
			other = 1
		}
	}
	return lower + upper + digit + other
}

// Scrub returns text with every secret replaced by a marker
// "[REDACTED:<kind>]" and the list of kinds found (deduplicated, sorted).
// Benign text is returned unchanged.
//
// Scrub finds API keys and tokens by their shape (OpenAI, Anthropic, Google,
// Stripe, SendGrid, Twilio, Mailgun, Hugging Face, npm, PyPI, RubyGems,
// NuGet, Databricks, GitHub, GitLab, Slack, AWS, DigitalOcean), Twilio auth
// tokens beside their account sid, Azure account, shared access and
// subscription keys and SAS signatures, JWTs, bearer and basic credentials
// (with registries' base64 auth entries), private key blocks, passwords in
// URLs, DSNs, connection strings and .netrc entries, on command lines
// (mysql -p, docker login, sshpass, redis-cli -a, mongosh -p, curl -u) and
// in prose ("the password is ..."), values assigned to
// secret-looking names (keeping the name, as in
// DB_PASSWORD=[REDACTED:password]) and <private>...</private> spans. A
// secret of minEchoLen bytes or more is also redacted wherever else it
// occurs in the text. Scrub is idempotent and linear in the length of text.
func Scrub(text string) (string, []string) {
	spans := findSecrets(text)
	if len(spans) == 0 {
		return text, nil
	}
	var b strings.Builder
	b.Grow(len(text))
	kinds := make([]string, 0, len(spans))
	last := 0
	for _, s := range spans {
		kind := secretRules[s.rule].kind
		b.WriteString(text[last:s.start])
		b.WriteString(redactedPrefix)
		b.WriteString(kind)
		b.WriteByte(']')
		last = s.end
		kinds = append(kinds, kind)
	}
	b.WriteString(text[last:])
	slices.Sort(kinds)
	return b.String(), slices.Compact(kinds)
}

// secretSpan is a range of the text to redact; rule indexes secretRules.
type secretSpan struct {
	start, end, rule int
}

// findSecrets returns the sorted, disjoint spans of text that Scrub redacts.
func findSecrets(text string) []secretSpan {
	var spans []secretSpan
	lower := ""
	for i, set := 0, hintedRules(text); set != 0; i, set = i+1, set>>1 {
		if set&1 == 0 {
			continue
		}
		r := &secretRules[i]
		hay := text
		if r.fold {
			if lower == "" {
				lower = asciiLower(text)
			}
			hay = lower
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(hay, -1) {
			if start, end, ok := r.find(text, m); ok && start < end {
				spans = append(spans, secretSpan{start, end, i})
			}
		}
	}
	if len(spans) == 0 {
		return nil
	}
	spans = mergeSpans(spans)
	return mergeSpans(append(spans, echoes(text, spans)...))
}

// find applies the rule's locate or valid to a match.
func (r *secretRule) find(text string, m []int) (start, end int, ok bool) {
	if r.locate != nil {
		return r.locate(text, m)
	}
	start, end = m[0], m[1]
	if len(m) > 2 {
		start, end = m[2], m[3]
	}
	return start, end, r.valid == nil || r.valid(text[start:end])
}

// echoes returns a span for every occurrence in text of the value of a span
// at least minEchoLen long, for the first maxEchoValues values.
func echoes(text string, spans []secretSpan) []secretSpan {
	var out []secretSpan
	seen := make(map[string]bool)
	for _, s := range spans {
		v := text[s.start:s.end]
		if len(v) < minEchoLen || seen[v] || len(seen) == maxEchoValues {
			continue
		}
		seen[v] = true
		for i := 0; ; {
			j := strings.Index(text[i:], v)
			if j < 0 {
				break
			}
			i += j + len(v)
			out = append(out, secretSpan{i - len(v), i, s.rule})
		}
	}
	return out
}

// mergeSpans sorts spans and joins overlapping ones, keeping the rule that
// comes first in secretRules.
func mergeSpans(spans []secretSpan) []secretSpan {
	slices.SortFunc(spans, func(a, b secretSpan) int { return a.start - b.start })
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start >= last.end {
			out = append(out, s)
			continue
		}
		last.end = max(last.end, s.end)
		last.rule = min(last.rule, s.rule)
	}
	return out
}

// secretHint is a hint of secretRules[rule], with the rule's conditions on it.
type secretHint struct {
	text       string
	rule       int
	fold, word bool
	follows    func(string) bool
}

// secretHintTable indexes the hints of secretRules by their first two
// bytes, and by their first three, under both cases for case-insensitive
// rules.
type secretHintTable struct {
	starting [256][]secretHint // the hints that start with a byte
	pairs    [256][4]uint64    // bit b of pairs[a] is set if a hint starts with a, b
	// triples has bit tripleBit(a, b, c) set if a hint starts with a, b, c
	// or is a, b: most pairs of ordinary text that start a hint ("de" of
	// "default" in "code") are dropped by their third byte, before the
	// hints that start with a are compared.
	triples [1 << 16 / 64]uint64
}

// secretHints is the index hintedRules searches with.
var secretHints = indexSecretHints()

func indexSecretHints() *secretHintTable {
	if len(secretRules) > 64 {
		panic("secrets: secretRules has more rules than hintedRules' 64-bit set holds")
	}
	t := new(secretHintTable)
	for i, r := range secretRules {
		for _, text := range r.hints {
			if len(text) < 2 {
				panic("secrets: secret hint " + text + " is shorter than two bytes")
			}
			h := secretHint{text, i, r.fold, r.word, r.follows}
			for _, a := range caseVariants(text[0], r.fold) {
				t.starting[a] = append(t.starting[a], h)
				for _, b := range caseVariants(text[1], r.fold) {
					t.pairs[a][b/64] |= 1 << (b % 64)
					t.addTriples(a, b, text, r.fold)
				}
			}
		}
	}
	return t
}

// addTriples sets the triples bits of a hint that starts with a, b: of its
// third byte, or of every byte when it has none.
func (t *secretHintTable) addTriples(a, b byte, text string, fold bool) {
	thirds := []byte{}
	if len(text) > 2 {
		thirds = caseVariants(text[2], fold)
	} else {
		for c := range 256 {
			thirds = append(thirds, byte(c))
		}
	}
	for _, c := range thirds {
		bit := tripleBit(a, b, c)
		t.triples[bit/64] |= 1 << (bit % 64)
	}
}

// tripleBit hashes three bytes to a bit of secretHintTable.triples.
func tripleBit(a, b, c byte) uint32 {
	return (uint32(a)<<16 | uint32(b)<<8 | uint32(c)) * 2654435761 >> 16
}

// caseVariants returns c and, when fold is set and c is a lower-case ASCII
// letter, its upper-case form.
func caseVariants(c byte, fold bool) []byte {
	if fold && 'a' <= c && c <= 'z' {
		return []byte{c, c - 'a' + 'A'}
	}
	return []byte{c}
}

// hintedRules returns the set of rules that have a hint in text, bit i
// standing for secretRules[i], in one pass over text.
func hintedRules(text string) (set uint64) {
	for i := 0; i+1 < len(text); i++ {
		a, b := text[i], text[i+1]
		if secretHints.pairs[a][b/64]&(1<<(b%64)) == 0 {
			continue
		}
		if i+2 < len(text) {
			if bit := tripleBit(a, b, text[i+2]); secretHints.triples[bit/64]&(1<<(bit%64)) == 0 {
				continue
			}
		}
		rest := text[i:]
		for _, h := range secretHints.starting[a] {
			switch {
			case h.fold && !hasPrefixFold(rest, h.text), !h.fold && !strings.HasPrefix(rest, h.text),
				h.word && i > 0 && isWordByte(text[i-1]),
				h.follows != nil && !h.follows(rest[len(h.text):]):
				continue
			}
			set |= 1 << h.rule
		}
	}
	return set
}

// hasPrefixFold reports whether s begins with the lower-case ASCII prefix,
// ignoring the case of ASCII letters in s.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// hexFollows returns a follows that accepts text starting with n
// hexadecimal digits, as the rest of a key after its prefix does.
func hexFollows(n int) func(string) bool {
	return func(s string) bool { return runOf(s, n, "0123456789abcdefABCDEF") }
}

// base32Follows returns a follows that accepts text starting with n lower
// case letters or digits.
func base32Follows(n int) func(string) bool {
	return func(s string) bool { return runOf(s, n, "abcdefghijklmnopqrstuvwxyz0123456789") }
}

// runOf reports whether s starts with n bytes of set.
func runOf(s string, n int, set string) bool {
	if len(s) < n {
		return false
	}
	for i := 0; i < n; i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

// equalsFollows reports whether s starts with blanks and '='.
func equalsFollows(s string) bool {
	s = strings.TrimLeft(s, " \t")
	return s != "" && s[0] == '='
}

// netrcFollows reports whether s, the text after "machine" or "default",
// goes on as a .netrc entry: (for machine, a host and) a keyword of the
// entry's, each after blanks.
func netrcFollows(s string) bool {
	if len(s) == 0 || !isBlank(s[0]) {
		return false
	}
	i, end := nextField(s, 0, len(s))
	if !netrcKeywords[s[i:end]] {
		// machine HOST: the keyword is the next field.
		i, end = nextField(s, end, len(s))
	}
	return netrcKeywords[s[i:end]] && end < len(s) && isBlank(s[end])
}

// netrcKeywords are the keywords of a .netrc entry that take a value.
var netrcKeywords = map[string]bool{"login": true, "password": true, "account": true, "port": true}

// isBlank reports whether c separates the fields of a .netrc file.
func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// assignmentFollows reports whether s starts with an optional closing
// quote, blanks, and '=' or ':'.
func assignmentFollows(s string) bool {
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		s = s[1:]
	}
	s = strings.TrimLeft(s, " \t")
	return s != "" && (s[0] == '=' || s[0] == ':')
}

// proseFollows reports whether s, the text after "password" (or
// "passphrase", "passwd"), may lead to its value as the prose rule reads
// it: after blanks, a colon, or one of the words that start a verb (is,
// was, will) or name what the password is for (for, of, on, to).
func proseFollows(s string) bool {
	rest := strings.TrimLeft(s, " \t")
	if rest != "" && rest[0] == ':' {
		return true
	}
	if len(rest) == len(s) {
		return false
	}
	for _, w := range []string{"is", "was", "will", "for", "of", "on", "to"} {
		if strings.HasPrefix(rest, w) && (len(rest) == len(w) || !isWordByte(rest[len(w)])) {
			return true
		}
	}
	return false
}

// asciiLower returns s with ASCII letters in lower case. Unlike
// strings.ToLower it keeps every byte offset.
func asciiLower(s string) string {
	i := strings.IndexAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// isWordByte reports whether c is an ASCII letter, digit or '_'.
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}
