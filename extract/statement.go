package extract

import (
	"strings"
)

// emphasis matches the Markdown marks a written statement wraps words in.
var emphasis = strings.NewReplacer("**", "", "__", "", "`", "")

// KindOfStatement returns the kind of a statement that a person wrote
// down for agents (a bullet point or paragraph of CLAUDE.md, AGENTS.md or
// .cursorrules), judged by the rules that read a session's speech: the
// first sentence that states a decision makes it a decision; a pitfall
// ("X doesn't work because Y", "X is not supported") a note; a
// preference ("I prefer ...") a preference; "remember that ..." a fact.
// Anything else written for agents is a convention, which is what such
// files hold. The rule says which applied (RuleInstruction for the
// default).
func KindOfStatement(text string) (kind string, rule Rule) {
	for _, s := range sentences(text, DefaultLimits().Sentence) {
		s = emphasis.Replace(s)
		if strings.HasSuffix(s, "?") {
			continue
		}
		body := stripFillers(s)
		lower := strings.ToLower(body)
		switch {
		case clauseMatches(body, decision, true) && !tentative.MatchString(lower):
			return KindDecision, RuleDecision
		case pitfall.MatchString(lower):
			return KindNote, RulePitfall
		case clauseMatches(body, preference, false):
			return KindPreference, RulePreference
		case remember.MatchString(strings.ToLower(s)):
			return KindFact, RuleFact
		}
	}
	return KindConvention, RuleInstruction
}
