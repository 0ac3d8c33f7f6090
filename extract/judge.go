package extract

import (
	"encoding/json"
	"slices"
	"strings"
)

// Label is one memory a session should yield, as a careful person would
// write it down: its kind and key phrases that a matching candidate must
// contain. Labelled sessions measure the rules (Judge).
type Label struct {
	Kind    string   `json:"kind"`
	Phrases []string `json:"phrases"`
}

// Kinds lists the kinds a candidate (and so a label) can have.
func Kinds() []string {
	return []string{KindConvention, KindPreference, KindDecision, KindBug, KindFact, KindNote}
}

// KnownKind reports whether kind is one of Kinds.
func KnownKind(kind string) bool { return slices.Contains(Kinds(), kind) }

// Matches reports whether c has l's kind and contains each of its phrases
// (in its title, content or touches, ignoring case).
func (l Label) Matches(c Candidate) bool {
	if c.Kind != l.Kind {
		return false
	}
	text := strings.ToLower(c.Title + "\n" + c.Content + "\n" + strings.Join(c.Touches, "\n"))
	for _, p := range l.Phrases {
		if !strings.Contains(text, strings.ToLower(p)) {
			return false
		}
	}
	return true
}

// Judgement is how a session's candidates compare with its labels: each
// label is matched to at most one candidate, and each candidate to at
// most one label.
type Judgement struct {
	Found  []Label     // the labels a candidate matched
	Missed []Label     // the labels no candidate matched
	Extra  []Candidate // the candidates that matched no label
}

// Judge matches candidates to labels one to one, as many as can be: a
// candidate that two labels match goes to the one that no other candidate
// matches (a maximum matching, by augmenting paths). Found and Missed keep
// the labels' order, Extra the candidates'.
func Judge(cands []Candidate, want []Label) Judgement {
	owner := make([]int, len(cands)) // the label holding each candidate, or -1
	for i := range owner {
		owner[i] = -1
	}
	var claim func(l int, seen []bool) bool
	claim = func(l int, seen []bool) bool {
		for i, c := range cands {
			if seen[i] || !want[l].Matches(c) {
				continue
			}
			seen[i] = true
			if owner[i] < 0 || claim(owner[i], seen) {
				owner[i] = l
				return true
			}
		}
		return false
	}
	held := make([]bool, len(want))
	for l := range want {
		held[l] = claim(l, make([]bool, len(cands)))
	}
	var j Judgement
	for l, w := range want {
		if held[l] {
			j.Found = append(j.Found, w)
		} else {
			j.Missed = append(j.Missed, w)
		}
	}
	for i, c := range cands {
		if owner[i] < 0 {
			j.Extra = append(j.Extra, c)
		}
	}
	return j
}

// Score counts candidates and labels, and how many of them matched (a
// match is one candidate and one label).
type Score struct {
	Candidates int `json:"candidates"`
	Labels     int `json:"labels"`
	Matched    int `json:"matched"`
}

// Precision is the share of candidates that matched a label (1 when there
// are none).
func (s Score) Precision() float64 { return ratio(s.Matched, s.Candidates) }

// Recall is the share of labels a candidate matched (1 when there are
// none).
func (s Score) Recall() float64 { return ratio(s.Matched, s.Labels) }

// MarshalJSON writes the counts with the precision and recall they give.
func (s Score) MarshalJSON() ([]byte, error) {
	type counts Score
	return json.Marshal(struct {
		counts
		Precision float64 `json:"precision"`
		Recall    float64 `json:"recall"`
	}{counts(s), s.Precision(), s.Recall()})
}

// Add returns the sum of s and o.
func (s Score) Add(o Score) Score {
	return Score{Candidates: s.Candidates + o.Candidates, Labels: s.Labels + o.Labels, Matched: s.Matched + o.Matched}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Score is the judgement's score.
func (j Judgement) Score() Score {
	return Score{Candidates: len(j.Found) + len(j.Extra), Labels: len(j.Found) + len(j.Missed), Matched: len(j.Found)}
}

// ByKind is the judgement's score for each kind that a candidate or a
// label has.
func (j Judgement) ByKind() map[string]Score {
	out := map[string]Score{}
	for _, l := range j.Found {
		out[l.Kind] = out[l.Kind].Add(Score{Candidates: 1, Labels: 1, Matched: 1})
	}
	for _, l := range j.Missed {
		out[l.Kind] = out[l.Kind].Add(Score{Labels: 1})
	}
	for _, c := range j.Extra {
		out[c.Kind] = out[c.Kind].Add(Score{Candidates: 1})
	}
	return out
}
