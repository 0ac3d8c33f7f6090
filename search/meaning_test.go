package search

import (
	"slices"
	"testing"

	"github.com/memmesh/memmesh/model"
)

// meaningFixture holds memories that a query's words miss and its meaning
// finds, and one the words find.
func meaningFixture(t *testing.T) *Index {
	ix := openTest(t)
	apply(t, ix,
		mem("pgx", "", "Use pgx, not lib/pq"),
		mem("kafka", "", "Events go through Kafka topics, one per aggregate"),
		mem("other", "", "The message of the day is printed at login"),
		mem("elsewhere", "", "Kafka consumers commit offsets by hand", withNamespace("other")),
		mem("gone", "", "RabbitMQ was replaced", withStatus(model.StatusArchived)),
		mem("expired", "", "Temporary broker on port 9999", withExpires(now.Add(-1))),
	)
	return ix
}

func TestMeaningFindsWhatTheWordsMiss(t *testing.T) {
	ix := meaningFixture(t)
	near := []Near{{"kafka", 0.8}, {"elsewhere", 0.78}, {"gone", 0.7}, {"expired", 0.7}, {"pgx", 0.1}}
	res := search(t, ix, Query{Text: "message queue", Namespace: "proj", Near: near, Explain: true})
	got := ids(res)
	if len(got) < 2 || got[1] != "kafka" && got[0] != "kafka" {
		t.Fatalf("search by meaning for a message queue: %v, want kafka among the first two", got)
	}
	for _, id := range []string{"elsewhere", "gone", "expired"} {
		if slices.Contains(got, id) {
			t.Errorf("%s passed the filters by meaning: %v", id, got)
		}
	}
	for _, h := range res.Hits {
		switch h.ID {
		case "kafka":
			if h.Semantic != 0.8 || h.Explain == nil || h.Explain.Match != MatchMeaning || h.Explain.Semantic != 0.8 || h.Explain.BM25 != 0 {
				t.Errorf("kafka, found by meaning alone: semantic %v, explain %+v", h.Semantic, h.Explain)
			}
		case "other": // "message" is a word of the query, and it is not near
			if h.Semantic != 0 || h.Explain.Match != MatchTerms {
				t.Errorf("a match of the words says it was found by meaning: %+v", h)
			}
		case "pgx": // near, far down
			if h.Semantic != 0.1 {
				t.Errorf("pgx's cosine: %v", h.Semantic)
			}
		}
	}
	if res.Total != 3 {
		t.Errorf("total %d, want the word match, kafka and pgx", res.Total)
	}
}

func TestMeaningAloneWhenNoWordMatches(t *testing.T) {
	ix := meaningFixture(t)
	res := search(t, ix, Query{Text: "which database library", Near: []Near{{"pgx", 0.6}, {"kafka", 0.2}}})
	if got := ids(res); !slices.Equal(got, []string{"pgx", "kafka"}) {
		t.Fatalf("no word matches: %v, want the memories by meaning in order", got)
	}
	if res.Hits[0].Score <= 0 {
		t.Errorf("a hit by meaning has score %v", res.Hits[0].Score)
	}
}

func TestStrongWordMatchesStayFirst(t *testing.T) {
	ix := openTest(t)
	apply(t, ix,
		mem("exact", "", "The deploy script needs the staging token"),
		mem("close", "", "Releases are shipped from the main branch"),
		mem("close2", "", "Production pushes wait for the green build"),
	)
	near := []Near{{"close", 0.95}, {"close2", 0.9}} // exact is not near at all
	res := search(t, ix, Query{Text: "deploy script", Near: near})
	if got := ids(res); len(got) == 0 || got[0] != "exact" {
		t.Fatalf("a memory holding every word of the query lost first place to meaning: %v", got)
	}
	// A weak match of the words (one word of three) is overtaken by one
	// that the words and the meaning both find.
	apply(t, ix, mem("weak", "", "A script prints the date"), mem("both", "", "Canary rollout of the script to staging hosts"))
	res = search(t, ix, Query{Text: "canary rollout script", Near: []Near{{"both", 0.9}, {"weak", 0.05}}})
	if got := ids(res); len(got) == 0 || got[0] != "both" {
		t.Fatalf("got %v, want the memory found by words and meaning first", got)
	}
}

func TestNearRankedWithoutDuplicates(t *testing.T) {
	ix := meaningFixture(t)
	res := search(t, ix, Query{Text: "zzz", Near: []Near{{"pgx", 0.5}, {"pgx", 0.9}, {"unknown", 0.9}, {"kafka", -0.2}}})
	if got := ids(res); !slices.Equal(got, []string{"pgx"}) {
		t.Fatalf("got %v: want pgx once, no unknown id and no memory of a negative cosine", got)
	}
}
