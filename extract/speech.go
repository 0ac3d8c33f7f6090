package extract

import (
	"regexp"
	"strings"

	"github.com/memmesh/memmesh/transcript"
)

// clauseStart matches where a clause can start inside a sentence: a
// standing instruction often follows a request ("fix it and always add a
// test").
var clauseStart = regexp.MustCompile(`(?i)(,?\s+and|,?\s+but|,|;|:|\s—|\s-)\s+`)

// Patterns over a clause, lower-cased, from its start to the sentence's end.
var (
	instruction = regexp.MustCompile(`^(always|never)\s+\w|` +
		`^(don't|do not|dont)\s+\w|` +
		`^we (use|always|never|don't|do not|prefer|stick to|follow|only use|keep)\b|` +
		`^use \S.*\b(not|instead of|rather than|over)\b|` +
		`^stop \w+ing\b|` +
		`^(from now on|going forward|in the future|in future|in this (repo|project|codebase))\b`)
	// oneOff marks an instruction that holds for now, not for good, and a
	// "don't" that is no instruction ("don't know why").
	oneOff = regexp.MustCompile(`\b(for now|this time|yet|right now|today|worry|bother|know|think|understand)\b`)
	// tentative marks a decision taken only until it is looked at again.
	tentative  = regexp.MustCompile(`\b(for now|this time|revisit|temporarily|for the moment)\b`)
	remember   = regexp.MustCompile(`^((also|and|btw|oh|ok|okay|please|pls),?\s+)*(remember that|keep in mind|note that|be aware that|for future reference)\b`)
	correction = regexp.MustCompile(`^(use|run|call|put|keep|write|name|stick)\b`)
	preference = regexp.MustCompile(`^i('d| would)? (prefer|rather|like)\b`)
	decision   = regexp.MustCompile(`^(decided|decision)\b|` +
		`^we('ve| have)? (decided|agreed|chose|settled on)\b|` +
		`^(let's|lets|let us|we'll|we will|i'll|i will) (go with|stick with|settle on)\b|` +
		`^(let's|lets|let us) (use|switch to|move to|keep)\b`)
	// proposal is the agent recommending a choice, a decision once the
	// user agrees.
	proposal = regexp.MustCompile(`^(i'd|i would|i'll|i will) (go with|recommend|suggest|pick|choose|use)\b|^i (recommend|suggest)\b`)
	agreed   = regexp.MustCompile(`^(?i)(agreed|yes|yep|sure|ok|okay|sounds good|go ahead|do it|let's do it|makes sense|perfect|great)\b`)
	// hesitant marks an agreement that is not one ("ok, maybe later").
	hesitant = regexp.MustCompile(`(?i)\b(maybe|later|not|don't|no|but)\b`)
	// reason marks a sentence that says why.
	reason  = regexp.MustCompile(`\b(because|since|as|so that)\b|:`)
	pitfall = regexp.MustCompile(`\b(doesn't|does not|didn't|did not|won't|will not|can't|cannot|isn't|is not|wasn't) work\b.*\b(because|since)\b|` +
		`\b(breaks|fails|broke|failed) because\b|` +
		`\b(isn't|is not|aren't|are not) supported\b`)
)

// speech finds what the user and the agent said: instructions,
// preferences, decisions and pitfalls. Tool calls and their output are not
// speech.
func (x *extraction) speech() {
	for i, t := range x.turns {
		if t.Tool != "" || t.Command != "" {
			continue
		}
		switch t.Role {
		case transcript.RoleUser:
			x.userSpeech(i)
		case transcript.RoleAssistant:
			x.agentSpeech(i)
		}
	}
}

// said gathers the sentences of one turn that one rule matched.
type said struct {
	kind  string
	rule  Rule
	lines []string
}

func (s *said) add(line string) { s.lines = append(s.lines, capitalise(line)) }

func (x *extraction) userSpeech(i int) {
	conv := said{kind: KindConvention, rule: RuleInstruction}
	pref := said{kind: KindPreference, rule: RulePreference}
	dec := said{kind: KindDecision, rule: RuleDecision}
	fact := said{kind: KindFact, rule: RuleFact}
	var pit said
	for _, s := range sentences(x.text(i), x.lim.Sentence) {
		if strings.HasSuffix(s, "?") {
			continue
		}
		body := stripFillers(s)
		switch {
		case clauseMatches(body, decision, true) && !tentative.MatchString(strings.ToLower(body)):
			dec.add(body)
		case pitfall.MatchString(strings.ToLower(body)):
			pit = said{kind: KindNote, rule: RulePitfall, lines: []string{capitalise(body)}}
		case clauseMatches(body, preference, false):
			pref.add(body)
		case corrections.MatchString(s) && correction.MatchString(strings.ToLower(body)):
			conv.rule = RuleCorrection
			conv.add(body)
		case clauseMatches(body, instruction, false) && !oneOff.MatchString(strings.ToLower(body)):
			conv.add(instructionOf(body))
		case remember.MatchString(strings.ToLower(s)):
			fact.add(body)
		}
	}
	if conv.rule == RuleCorrection {
		if c := x.lastCommandBefore(i); c != "" {
			conv.lines = append(conv.lines, "(The user said so after the agent ran `"+c+"`.)")
		}
	}
	for _, s := range []said{dec, pit, pref, conv, fact} {
		x.addSaid(i, s)
	}
}

// agentSpeech reads the agent's own text for decisions with their reason
// and for pitfalls; the agent's plans are skipped.
func (x *extraction) agentSpeech(i int) {
	ss := sentences(x.text(i), x.lim.Sentence)
	for j, s := range ss {
		if strings.HasSuffix(s, "?") {
			continue
		}
		lower := strings.ToLower(s)
		if (decision.MatchString(lower) || proposal.MatchString(lower) && x.userAgrees(i)) && reason.MatchString(lower) {
			x.addSaid(i, said{kind: KindDecision, rule: RuleDecision, lines: []string{s}})
			continue
		}
		if pitfall.MatchString(lower) {
			lines := []string{s}
			if j+1 < len(ss) && !plan.MatchString(ss[j+1]) && !strings.HasSuffix(ss[j+1], "?") {
				lines = append(lines, ss[j+1])
			}
			x.addSaid(i, said{kind: KindNote, rule: RulePitfall, lines: lines})
			return
		}
	}
}

func (x *extraction) addSaid(i int, s said) {
	if len(s.lines) == 0 {
		return
	}
	content := strings.Join(s.lines, " ")
	x.add(Candidate{
		Kind:     s.kind,
		Title:    s.lines[0],
		Content:  content,
		Touches:  fileRefs(content),
		Evidence: Evidence{Turns: []int{i}},
		Rule:     s.rule,
	})
}

// clauseMatches reports whether re matches s, lower-cased, from the start
// of s or, unless atStart, from the start of one of its clauses.
func clauseMatches(s string, re *regexp.Regexp, atStart bool) bool {
	if re.MatchString(strings.ToLower(s)) {
		return true
	}
	return !atStart && matchingClause(s, re) >= 0
}

// matchingClause returns the index in s of the first clause re matches
// from, or -1.
func matchingClause(s string, re *regexp.Regexp) int {
	for _, loc := range clauseStart.FindAllStringIndex(s, 8) {
		if re.MatchString(strings.ToLower(stripFillers(s[loc[1]:]))) {
			return loc[0]
		}
	}
	return -1
}

// instructionOf returns the instruction of a sentence without the request
// it was joined to: "Fix it and always add a test" gives "always add a
// test".
func instructionOf(s string) string {
	if instruction.MatchString(strings.ToLower(s)) {
		return s
	}
	i := matchingClause(s, instruction)
	if i < 0 {
		return s
	}
	loc := clauseStart.FindStringIndex(s[i:])
	if sep := strings.ToLower(s[i : i+loc[1]]); strings.Contains(sep, "and") || strings.Contains(sep, "but") || strings.Contains(sep, ";") {
		return stripFillers(s[i+loc[1]:])
	}
	return s
}

// lastCommandBefore returns the last command the agent ran before turn i.
func (x *extraction) lastCommandBefore(i int) string {
	for j := i - 1; j >= 0; j-- {
		switch {
		case x.turns[j].Command != "":
			return oneLine(truncate(x.turns[j].Command, 200))
		case x.turns[j].Role == transcript.RoleUser:
			return ""
		}
	}
	return ""
}

// userAgrees reports whether the user's next prompt after turn i starts by
// agreeing.
func (x *extraction) userAgrees(i int) bool {
	for j := i + 1; j < len(x.turns); j++ {
		if x.turns[j].Role == transcript.RoleUser {
			text := strings.TrimSpace(x.text(j))
			return agreed.MatchString(text) && !hesitant.MatchString(text)
		}
	}
	return false
}
