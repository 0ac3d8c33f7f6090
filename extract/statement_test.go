package extract

import "testing"

func TestKindOfStatement(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string
	}{
		{"Use pnpm, never npm.", KindConvention},
		{"Always run `go vet ./...` before pushing.", KindConvention},
		{"We decided to use pgx instead of lib/pq because lib/pq is in maintenance mode.", KindDecision},
		{"**Decision:** the API is versioned in the path (`/v2/...`).", KindDecision},
		{"Hot reload doesn't work because the watcher ignores symlinked packages.", KindNote},
		{"Windows paths are not supported by the release script.", KindNote},
		{"I prefer table-driven tests with t.Run names.", KindPreference},
		{"Remember that the staging database is shared with QA.", KindFact},
		{"Should we split the monolith? Keep handlers thin.", KindConvention},
		{"We decided to skip the cache for now.", KindConvention}, // tentative: no decision
		{"```sh\nwe decided to use make\n```", KindConvention},    // code is no statement
	} {
		if got, _ := KindOfStatement(tc.text); got != tc.want {
			t.Errorf("KindOfStatement(%q) = %s, want %s", tc.text, got, tc.want)
		}
	}
}
