package labelled

import (
	"fmt"
	"maps"
	"slices"

	"github.com/memmesh/memmesh/extract"
)

// Result is the judgement of one session's candidates.
type Result struct {
	Name   string `json:"name"`
	Client string `json:"client"`
	extract.Judgement
}

// Report is the extraction's score on a corpus: overall, per client and
// per kind, and each session's judgement.
type Report struct {
	Sessions int                      `json:"sessions"`
	Overall  extract.Score            `json:"overall"`
	ByClient map[string]extract.Score `json:"by_client"`
	ByKind   map[string]extract.Score `json:"by_kind"`
	Results  []Result                 `json:"-"`
}

// Measure extracts the candidates of each session and judges them against
// its labels.
func Measure(sessions []Session) Report {
	r := Report{Sessions: len(sessions), ByClient: map[string]extract.Score{}, ByKind: map[string]extract.Score{}}
	for _, s := range sessions {
		j := extract.Judge(extract.Candidates(s.Session), s.Labels.Memories)
		r.Results = append(r.Results, Result{Name: s.Name, Client: s.Labels.Client, Judgement: j})
		r.Overall = r.Overall.Add(j.Score())
		r.ByClient[s.Labels.Client] = r.ByClient[s.Labels.Client].Add(j.Score())
		for kind, sc := range j.ByKind() {
			r.ByKind[kind] = r.ByKind[kind].Add(sc)
		}
	}
	return r
}

// Row is one line of a report's figures: what is scored, and its score.
type Row struct {
	Name, Figures string
}

// Rows are the report's figures: overall, then per client and per kind,
// each in name order.
func (r Report) Rows() []Row {
	rows := []Row{{fmt.Sprintf("overall (%d sessions)", r.Sessions), figures(r.Overall)}}
	for _, c := range slices.Sorted(maps.Keys(r.ByClient)) {
		rows = append(rows, Row{"client " + c, figures(r.ByClient[c])})
	}
	for _, k := range slices.Sorted(maps.Keys(r.ByKind)) {
		rows = append(rows, Row{"kind " + k, figures(r.ByKind[k])})
	}
	return rows
}

func figures(s extract.Score) string {
	return fmt.Sprintf("precision %.2f (%d/%d candidates), recall %.2f (%d/%d labels)",
		s.Precision(), s.Matched, s.Candidates, s.Recall(), s.Matched, s.Labels)
}
