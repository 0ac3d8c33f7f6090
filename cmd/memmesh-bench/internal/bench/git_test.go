package bench

import (
	"context"
	"testing"
)

func TestGit(t *testing.T) {
	const seed = 7
	t.Logf("seed %d", seed)
	r, err := Git(context.Background(), GitOptions{Commits: 300, Files: 40, Memories: 100, New: 3, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Memories != 100 || r.FirstReadS <= 0 || r.FirstJudgeS <= 0 || r.NewCheck.P50 <= 0 || r.NewRead.P50 <= 0 {
		t.Errorf("report = %+v", r)
	}
	// Files change under most memories in 300 commits over 40 files.
	if r.Stale == 0 || r.Stale == r.Memories {
		t.Errorf("%d of %d memories stale", r.Stale, r.Memories)
	}
	if _, err := Git(context.Background(), GitOptions{Commits: 0, Files: 1, Memories: 1, New: 1}); err == nil {
		t.Error("a history of 0 commits was accepted")
	}
}
