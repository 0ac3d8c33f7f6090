package extract

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/transcript"
)

// run is one shell command the agent ran and what became of it.
type run struct {
	call    int      // the turn of the call
	result  int      // the turn of its result; -1 when none was recorded
	command string   // the command, normalised
	keys    []string // what makes two commands the same: one key a segment
	failed  bool
	output  string // the result's text, bounded
}

// passed reports whether the run is known to have succeeded.
func (r run) passed() bool { return r.result >= 0 && !r.failed }

// commandRuns pairs each command call of turns with its result: the call
// turn itself when it records the outcome, else the next unclaimed tool
// result of the same tool (and command, when the result names it) before
// the user speaks again. A result whose call was not read (it came before
// the turns read) is a run of its own.
func commandRuns(turns []transcript.Turn, textLimit int) []run {
	var runs []run
	claimed := map[int]bool{}
	for i, t := range turns {
		if t.Command == "" || claimed[i] {
			continue
		}
		r := run{call: i, result: -1, command: normalise(t.Command)}
		r.keys = runKeys(r.command)
		res := -1
		if t.Role == transcript.RoleTool || t.ExitCode != nil || t.Failed {
			res = i
		}
		for j := i + 1; res < 0 && j < len(turns) && turns[j].Role != transcript.RoleUser; j++ {
			u := turns[j]
			if u.Role == transcript.RoleTool && !claimed[j] && (u.Tool == t.Tool || u.Tool == "") &&
				(u.Command == "" || u.Command == t.Command) {
				res = j
			}
		}
		if res >= 0 {
			claimed[res] = true
			u := turns[res]
			r.result = res
			r.failed = u.Failed || (u.ExitCode != nil && *u.ExitCode != 0)
			r.output = plain(truncate(u.Text, textLimit))
		}
		runs = append(runs, r)
	}
	return runs
}

var (
	cdPrefix  = regexp.MustCompile(`^(cd\s+\S+\s*(&&|;)\s*)+`)
	envPrefix = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*=\S*\s+)+`)
	redirects = regexp.MustCompile(`\s*(\||2>&1|>\s*/dev/null).*$`)
	// separators split a command line into commands.
	separators = regexp.MustCompile(`\s*(&&|;|\|\|)\s*`)
)

// normalise returns the command as someone would type it again: one line,
// without a leading cd, environment assignments or a trailing pipe.
func normalise(cmd string) string {
	cmd = oneLine(truncate(cmd, 300))
	cmd = cdPrefix.ReplaceAllString(cmd, "")
	cmd = envPrefix.ReplaceAllString(cmd, "")
	return strings.TrimSpace(redirects.ReplaceAllString(cmd, ""))
}

// segments splits a command line into its commands.
func segments(cmd string) []string {
	var out []string
	for _, s := range separators.Split(cmd, 8) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// notChecks are programs that change or show things: a failure of theirs
// is not a bug, and they do not build or test a project.
var notChecks = map[string]bool{
	"git": true, "rm": true, "mv": true, "cp": true, "mkdir": true, "ls": true,
	"cat": true, "echo": true, "grep": true, "rg": true, "find": true, "sed": true,
	"curl": true, "wget": true, "head": true, "tail": true, "touch": true, "chmod": true,
	"pip": true, "pip3": true, "brew": true, "apt": true, "apt-get": true, "kill": true,
}

// installs are the sub-commands of package managers that change
// dependencies.
var installs = map[string]bool{"install": true, "i": true, "add": true, "remove": true, "uninstall": true, "update": true, "upgrade": true, "outdated": true, "ci": true}

// checkWords are words of a command that build, test or lint a project.
var checkWords = map[string]bool{
	"test": true, "tests": true, "build": true, "lint": true, "vet": true, "check": true,
	"clippy": true, "compile": true, "typecheck": true, "pytest": true, "jest": true,
	"vitest": true, "mocha": true, "ctest": true, "tsc": true, "make": true, "ruff": true,
	"mypy": true, "flake8": true, "eslint": true, "rspec": true, "phpunit": true,
	"tox": true, "nox": true, "gofmt": true, "ansible-lint": true, "golangci-lint": true,
	"shellcheck": true, "rubocop": true, "assembledebug": true, "assemblerelease": true,
	"assemble": true, "verify": true, "package": true,
}

// runKeys returns the keys of a command line's segments, under which two
// runs count as the same command: a segment's program and its first
// sub-commands, up to the first flag or path. A segment that only changes
// or shows things has none.
func runKeys(cmd string) []string {
	var keys []string
	for _, seg := range segments(cmd) {
		if k, _ := segmentKey(seg); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// covers reports whether r runs every command of keys: "cargo build &&
// cargo test" passing covers "cargo build" failing.
func (r run) covers(keys []string) bool {
	for _, k := range keys {
		if !slices.Contains(r.keys, k) {
			return false
		}
	}
	return true
}

// interpreters run the script or module named by their first argument,
// which is then part of the command's key.
var interpreters = map[string]bool{
	"bash": true, "sh": true, "zsh": true, "python": true, "python3": true, "node": true,
	"ruby": true, "perl": true, "deno": true, "bun": true,
}

// segmentKey returns the key of one command, and whether it builds, tests
// or lints the project.
func segmentKey(seg string) (key string, check bool) {
	words := strings.Fields(seg)
	for len(words) > 0 && (words[0] == "sudo" || words[0] == "time" || words[0] == "npx") {
		words = words[1:]
	}
	if len(words) == 0 || notChecks[path.Base(words[0])] {
		return "", false
	}
	kw := []string{words[0]}
	rest := words[1:]
	if interpreters[path.Base(words[0])] && len(rest) > 0 {
		if rest[0] == "-m" && len(rest) > 1 {
			kw, rest = append(kw, rest[:2]...), rest[2:]
		} else if !strings.HasPrefix(rest[0], "-") {
			kw, rest = append(kw, rest[0]), rest[1:]
		}
	}
	for _, w := range rest {
		if len(kw) == 3 || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "/.\"'=@:") {
			break
		}
		if installs[w] {
			return "", false
		}
		kw = append(kw, w)
	}
	for _, w := range words {
		if checkWords[strings.ToLower(strings.TrimLeft(w, "-"))] {
			check = true
		}
	}
	return strings.Join(kw, " "), check
}

// bugFixes finds a command that failed, files changed, then the same
// command passing. A failure caused only by files the agent had already
// changed in the session is its own slip, not a bug worth keeping. Bugs
// are found in the order of their first turn, so no more than the
// candidates returned are looked for.
func (x *extraction) bugFixes() {
	firstChange := map[string]int{}
	for i, t := range x.turns {
		for _, f := range x.changed(t) {
			if _, ok := firstChange[f]; !ok {
				firstChange[f] = i
			}
		}
	}
	found := 0
	for i, fail := range x.runs {
		if found == x.lim.Candidates {
			return
		}
		if !fail.failed || len(fail.keys) == 0 || x.streak(i) {
			continue
		}
		pass, ok := x.nextPass(i)
		if !ok {
			continue
		}
		fixed, turns := x.changes(fail.call, pass.call)
		slip := !slices.ContainsFunc(fixed, func(f string) bool { return firstChange[f] > fail.call })
		if len(fixed) == 0 || slip {
			continue
		}
		x.add(x.bugCandidate(fail, pass, fixed, turns))
		found++
	}
}

// streak reports whether the last run before x.runs[i] of its commands
// failed too: only the first failure of a streak starts a fix.
func (x *extraction) streak(i int) bool {
	for j := i - 1; j >= 0; j-- {
		if x.runs[j].covers(x.runs[i].keys) {
			return x.runs[j].failed
		}
	}
	return false
}

// nextPass returns the first later run of the same commands that passed.
func (x *extraction) nextPass(i int) (run, bool) {
	for _, r := range x.runs[i+1:] {
		if r.covers(x.runs[i].keys) && r.passed() {
			return r, true
		}
	}
	return run{}, false
}

// changes returns the files changed between turns from and to, and the
// turns that changed them.
func (x *extraction) changes(from, to int) (files []string, turns []int) {
	for i := from + 1; i < to; i++ {
		fs := x.changed(x.turns[i])
		if len(fs) == 0 {
			continue
		}
		turns = append(turns, i)
		for _, f := range fs {
			if len(files) < 10 && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	return files, turns
}

// changed returns the files a tool call changes, bounded, relative to the
// project's directory when they are in it.
func (x *extraction) changed(t transcript.Turn) []string {
	if !t.Changed || t.Role == transcript.RoleTool {
		return nil
	}
	var out []string
	for _, f := range t.Files[:min(len(t.Files), 20)] {
		f = oneLine(truncate(f, 300))
		if x.s.Project != "" {
			f = strings.TrimPrefix(f, strings.TrimSuffix(x.s.Project, "/")+"/")
		}
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (x *extraction) bugCandidate(fail, pass run, fixed []string, turns []int) Candidate {
	errLine := errorLine(fail.output)
	var b strings.Builder
	fmt.Fprintf(&b, "`%s` failed", fail.command)
	if errLine != "" {
		fmt.Fprintf(&b, ": %s", errLine)
	}
	if !strings.HasSuffix(errLine, ".") {
		b.WriteString(".")
	}
	if cause := x.cause(fail.result, pass.call); cause != "" {
		fmt.Fprintf(&b, " Cause: %s", cause)
	}
	fmt.Fprintf(&b, " Fixed by changing %s; then `%s` passed.", strings.Join(fixed, ", "), pass.command)
	title := "Fixed: " + fail.command + " failing"
	if errLine != "" {
		title = "Fixed: " + errLine
	}
	ev := append([]int{fail.call, pass.call}, turns...)
	if fail.result >= 0 {
		ev = append(ev, fail.result)
	}
	return Candidate{
		Kind:     KindBug,
		Title:    title,
		Content:  b.String(),
		Touches:  fixed,
		Evidence: Evidence{Turns: ev},
		Rule:     RuleBugFix,
	}
}

// causeWords mark a sentence of the agent that explains a failure.
var causeWords = regexp.MustCompile(`(?i)\b(because|since|cause|caused|problem is|issue is|removed|no longer|missing|without|instead of|does not|doesn't|only)\b`)

// cause returns what the agent said about the failure between turns from
// and to: the first sentence that gives a reason, else the first that is
// not a plan.
func (x *extraction) cause(from, to int) string {
	var first string
	for i := from + 1; i < to && i < len(x.turns); i++ {
		t := x.turns[i]
		if t.Role != transcript.RoleAssistant || t.Tool != "" || t.Command != "" {
			continue
		}
		for _, s := range sentences(x.text(i), x.lim.Sentence) {
			switch {
			case plan.MatchString(s) || strings.HasSuffix(s, "?"):
			case causeWords.MatchString(s):
				return s
			case first == "":
				first = s
			}
		}
	}
	return first
}

var (
	errorNamed = regexp.MustCompile(`\b(error|Error|ERROR)(:|\[)|\w(Error|Exception)\b|panicked|panic:|\bfailed (for|with)\b`)
	fileLine   = regexp.MustCompile(`\w\.\w+:\d+`)
	errorHint  = regexp.MustCompile(`(?i)\b(expected|cannot|can't|could not|undefined|not found|does not exist|overflow|assert|unsupported|not defined|no such|missing)\b`)
	pytestE    = regexp.MustCompile(`^E\s{2,}\S`)
	errorNoise = regexp.MustCompile(`(?i)^(failure: )?build failed|^fail\b|^\d+ (errors?|failed)|^tests?:|^> build error|^error: command failed|^npm (error|err!) code|^=+ |^!+ |^errors? [\w/]+\.\w+$|^\*+ `)
)

// errorLine picks the line of a failed command's output that says what
// went wrong: a named error, with a file and line, before a bare FAIL. A
// line ending in ":" (a Rust panic's location) takes the next one along.
func errorLine(out string) string {
	lines := strings.Split(out, "\n")
	best, bestScore := -1, 0
	for i, l := range lines {
		l = strings.TrimSpace(l)
		score := 0
		if errorNamed.MatchString(l) {
			score += 3
		}
		if fileLine.MatchString(l) {
			score += 2
		}
		if errorHint.MatchString(l) {
			score++
		}
		if pytestE.MatchString(l) {
			score += 4
		}
		if errorNoise.MatchString(l) {
			score -= 5
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return ""
	}
	line := strings.TrimSpace(lines[best])
	if strings.HasSuffix(line, ":") && best+1 < len(lines) {
		line += " " + strings.TrimSpace(lines[best+1])
	}
	line = strings.TrimSpace(strings.TrimPrefix(line, "E "))
	return clip(oneLine(line), 240)
}

// selective matches a command that runs some of the tests only: a
// selector flag, or a single source file.
var selective = regexp.MustCompile(`\s(-run|-k|--filter|-t|--testNamePattern|--grep|--test|--only)(\s|=)|\s\S+\.(py|ts|tsx|js|jsx|go|rb|rs|java|kt|php|ex|exs|c|cc|cpp|swift)(\s|$)`)

// projectCommands lists the checks that passed, the shortest form of
// each, leaving out the runs of some tests only.
func (x *extraction) projectCommands() {
	var order []string
	best := map[string]string{}
	var turns []int
	for _, r := range x.runs {
		if !r.passed() {
			continue
		}
		for _, seg := range segments(r.command) {
			k, check := segmentKey(seg)
			if !check || selective.MatchString(seg) {
				continue
			}
			cur, ok := best[k]
			if !ok {
				if len(order) == x.lim.Commands {
					continue
				}
				order = append(order, k)
			}
			if !ok || len(seg) < len(cur) {
				best[k] = seg
			}
			turns = append(turns, r.call)
		}
	}
	if len(order) == 0 {
		return
	}
	cmds := make([]string, len(order))
	for i, k := range order {
		cmds[i] = "`" + best[k] + "`"
	}
	where := "the project"
	if x.s.Project != "" {
		where = path.Base(x.s.Project)
	}
	x.add(Candidate{
		Kind:     KindFact,
		Title:    "Build and test commands of " + where,
		Content:  fmt.Sprintf("Commands that built, tested or checked %s and passed: %s.", where, strings.Join(cmds, ", ")),
		Evidence: Evidence{Turns: turns},
		Rule:     RuleCommands,
	})
}
