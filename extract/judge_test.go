package extract

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestJudgeMatchesOneToOne: a candidate counts for one label only, and a
// label takes the candidate that leaves another label its only match (a
// greedy pass, in order, would give the first label the list of commands
// and miss the second).
func TestJudgeMatchesOneToOne(t *testing.T) {
	commands := Candidate{Kind: KindFact, Content: "Commands that passed: `pnpm -r build`, `pnpm test`."}
	told := Candidate{Kind: KindFact, Content: "That the ui package must be built first: `pnpm -r build`."}
	noise := Candidate{Kind: KindConvention, Content: "Never mind, revert that last change."}
	want := []Label{
		{Kind: KindFact, Phrases: []string{"pnpm -r build"}},
		{Kind: KindFact, Phrases: []string{"PNPM TEST"}},
		{Kind: KindDecision, Phrases: []string{"vitest"}},
	}
	j := Judge([]Candidate{commands, told, noise}, want)
	if len(j.Found) != 2 || len(j.Missed) != 1 || j.Missed[0].Kind != KindDecision || len(j.Extra) != 1 || j.Extra[0].Kind != KindConvention {
		t.Fatalf("judgement %+v", j)
	}
	if s := j.Score(); s != (Score{Candidates: 3, Labels: 3, Matched: 2}) {
		t.Errorf("score %+v", s)
	}
	byKind := j.ByKind()
	if byKind[KindFact] != (Score{Candidates: 2, Labels: 2, Matched: 2}) ||
		byKind[KindDecision] != (Score{Labels: 1}) || byKind[KindConvention] != (Score{Candidates: 1}) {
		t.Errorf("by kind %+v", byKind)
	}
}

func TestKinds(t *testing.T) {
	for _, k := range Kinds() {
		if !KnownKind(k) {
			t.Errorf("%s is not known", k)
		}
	}
	if KnownKind("lesson") || !slices.Contains(Kinds(), KindNote) {
		t.Error("kinds are wrong")
	}
}

func TestScoreJSON(t *testing.T) {
	b, err := json.Marshal(Score{Candidates: 4, Labels: 5, Matched: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"candidates":4,"labels":5,"matched":2,"precision":0.5,"recall":0.4}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
