package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/internal/corpus"
)

func TestBrief(t *testing.T) {
	const seed = 3
	t.Logf("seed %d", seed)
	r, err := Brief(context.Background(), BriefOptions{Sizes: []int{300}, Budgets: []int{500, 2000}, Runs: 5, Seed: seed, Common: Common{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Projects) != 1 || len(r.Projects[0].Shown) != 2 || r.Projects[0].Keys != corpus.ProjectKeys {
		t.Fatalf("report = %+v", r)
	}
	p := r.Projects[0]
	small, full := p.Shown[0], p.Shown[1]
	if full.Keys != p.Keys || small.Keys == 0 || small.Keys >= full.Keys {
		t.Errorf("key memories shown: %d at 500 tokens, %d at 2,000, of %d", small.Keys, full.Keys, p.Keys)
	}
	for _, s := range p.Shown {
		if diff := s.Tokens - s.Counted; s.Counted > s.Budget || diff*50 > s.Counted || -diff*50 > s.Counted {
			t.Errorf("budget %d: %d tokens said, %d counted", s.Budget, s.Tokens, s.Counted)
		}
	}
	if p.Latency.P50 <= 0 || p.AfterChange.P99 < p.AfterChange.P50 {
		t.Errorf("latency %+v, after a change %+v", p.Latency, p.AfterChange)
	}
	if err := (BriefOptions{Sizes: []int{5}, Budgets: []int{2000}, Runs: 1}).Validate(); err == nil || !strings.Contains(err.Error(), "--sizes 5") {
		t.Errorf("a project of 5 memories: %v", err)
	}
}
