// Package extract derives candidate memories from a coding agent's session
// without a model: deterministic rules over the turns of a
// transcript.Session find what a careful person would write down after it.
//
//   - the user's standing instructions and corrections ("no, use pnpm",
//     "always run the linter first"), kind convention, and stated
//     preferences ("I prefer f-strings"), kind preference, and what
//     the user asks to be remembered ("remember that the GPU box only
//     has CUDA 11.8"), kind fact;
//   - decisions stated in the conversation ("let's go with zod because
//     ..."), or proposed by the agent with a reason and agreed to by the
//     user, kind decision;
//   - bug fixes: a check command (build, test, lint) that failed, files
//     changed, then the same command passing; with the error line, the
//     cause as far as the agent's text says, and the files changed; kind bug;
//   - the commands that built, tested or linted the project, kind fact;
//   - pitfalls: "X doesn't work because Y", "X isn't supported", kind note.
//
// Tool output is read only for the commands' results: what a tool printed
// never becomes an instruction or a decision. Greetings, questions, the
// agent's plans ("Let me ...", "I'll ...") and pasted logs are skipped.
// Every input is bounded (Limits), and every candidate's text goes through
// internal/secrets before Candidates returns it.
package extract

import (
	"cmp"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/transcript"
)

// Kinds of the candidates, as memories name them.
const (
	KindConvention = "convention"
	KindPreference = "preference"
	KindDecision   = "decision"
	KindBug        = "bug"
	KindFact       = "fact"
	KindNote       = "note"
)

// Rule names why a candidate was extracted.
type Rule string

const (
	RuleInstruction Rule = "user-instruction" // a standing instruction of the user
	RuleCorrection  Rule = "user-correction"  // the user corrected what the agent did
	RulePreference  Rule = "user-preference"  // "I prefer ..."
	RuleFact        Rule = "user-fact"        // "remember that ..."
	RuleDecision    Rule = "decision"         // a decision stated in the conversation
	RuleBugFix      Rule = "bug-fix"          // failed, files changed, then passed
	RuleCommands    Rule = "project-commands" // check commands that succeeded
	RulePitfall     Rule = "pitfall"          // "X doesn't work because Y"
)

// Candidate is a memory proposed from a session, with its evidence.
type Candidate struct {
	Kind    string   `json:"kind"`
	Title   string   `json:"title"`
	Content string   `json:"content"`
	Touches []string `json:"touches,omitempty"` // files, as the session wrote them
	// Evidence is where in the session the candidate was found.
	Evidence Evidence `json:"evidence"`
	Rule     Rule     `json:"rule"`
}

// Evidence points at the turns a candidate comes from.
type Evidence struct {
	Session string `json:"session"`
	Turns   []int  `json:"turns"` // turn indexes, ascending
}

// Limits bound the work done on one session.
type Limits struct {
	Turns      int // turns read, from the first
	TurnText   int // bytes of a turn's text read
	Sentence   int // longer sentences are not read as speech (pasted output)
	Candidates int // candidates returned, in the order of their first turn
	Commands   int // commands listed in the project's commands
	Content    int // bytes of a candidate's content
	Title      int // runes of a candidate's title
}

// DefaultLimits are the limits Candidates uses.
func DefaultLimits() Limits {
	return Limits{
		Turns:      5000,
		TurnText:   16 << 10,
		Sentence:   400,
		Candidates: 12,
		Commands:   6,
		Content:    800,
		Title:      80,
	}
}

// Candidates returns the candidate memories of s under DefaultLimits.
func Candidates(s transcript.Session) []Candidate {
	return CandidatesWithin(s, DefaultLimits())
}

// CandidatesWithin returns the candidate memories of s, reading no more of
// it than lim allows. The result depends only on s and lim.
func CandidatesWithin(s transcript.Session, lim Limits) []Candidate {
	x := newExtraction(s, lim)
	x.speech()
	x.bugFixes()
	x.projectCommands()
	return x.finish()
}

// extraction is the state of one Candidates call.
type extraction struct {
	s     transcript.Session
	lim   Limits
	turns []transcript.Turn
	runs  []run
	found []Candidate
}

func newExtraction(s transcript.Session, lim Limits) *extraction {
	turns := s.Turns
	if len(turns) > lim.Turns {
		turns = turns[:lim.Turns]
	}
	x := &extraction{s: s, lim: lim, turns: turns}
	x.runs = commandRuns(turns, lim.TurnText)
	return x
}

// text returns turn i's text, bounded.
func (x *extraction) text(i int) string {
	return truncate(x.turns[i].Text, x.lim.TurnText)
}

func (x *extraction) add(c Candidate) {
	c.Evidence.Session = x.s.ID
	x.found = append(x.found, c)
}

// finish merges repeats, orders, caps and scrubs the candidates.
func (x *extraction) finish() []Candidate {
	var out []Candidate
	seen := map[string]int{}
	for _, c := range x.found {
		c.Title = clip(oneLine(c.Title), x.lim.Title)
		c.Content = truncate(c.Content, x.lim.Content)
		key := c.Kind + "\x00" + strings.ToLower(c.Content)
		if i, ok := seen[key]; ok {
			out[i].Evidence.Turns = append(out[i].Evidence.Turns, c.Evidence.Turns...)
			continue
		}
		seen[key] = len(out)
		out = append(out, c)
	}
	for i := range out {
		t := out[i].Evidence.Turns
		slices.Sort(t)
		out[i].Evidence.Turns = slices.Compact(t)
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		return cmp.Compare(a.Evidence.Turns[0], b.Evidence.Turns[0])
	})
	if len(out) > x.lim.Candidates {
		out = out[:x.lim.Candidates]
	}
	for i := range out {
		out[i].Title, _ = secrets.Scrub(out[i].Title)
		out[i].Content, _ = secrets.Scrub(out[i].Content)
		for j, f := range out[i].Touches {
			out[i].Touches[j], _ = secrets.Scrub(f)
		}
	}
	return out
}
