package search

import (
	"math"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// Ranking constants. A hit's final score is its BM25 score times one
// multiplier per signal:
//
//	confidence  confidenceFloor + (1-confidenceFloor)*confidence
//	tier        tierWeights[tier]
//	recency     recencyFloor + (1-recencyFloor)*2^(-age/halfLife), age from updated
//	status      statusWeights[status], stale when the caller derives it so
//	maturity    as the caller derives it (Query.Derived), else 1
//
// The caller's confidence decay scales confidence first. Unknown tiers and
// statuses weigh 1.
const (
	confidenceFloor = 0.5
	recencyFloor    = 0.7

	defaultHalfLife = 30 * 24 * time.Hour

	// Field boosts applied to BM25 per field.
	boostTitle   = 1.0 // title and tags, on top of their place in content
	boostContent = 1.0
	boostWhen    = 1.0 // "June", "2023": the month and year a memory was learned

	// Candidates fetched from bleve before reranking:
	// max(minCandidates, candidateFactor*limit).
	minCandidates   = 50
	candidateFactor = 2
)

var tierWeights = map[model.Tier]float64{
	model.TierHuman: 1.2,
	model.TierAgent: 1.0,
	model.TierAuto:  0.85,
}

var statusWeights = map[model.Status]float64{
	model.StatusActive:    1.0,
	model.StatusStale:     0.6,
	model.StatusArchived:  0.3,
	model.StatusCompacted: 0.2,
}

// stored are a memory's stored ranking fields.
type stored struct {
	tier       model.Tier
	status     model.Status
	confidence float64
	updated    time.Time
	session    string
	asks       bool
}

// rankInputs are what feeds a hit's multipliers: its stored fields and
// what the caller derives about it.
type rankInputs struct {
	stored

	// From Query.Derived.
	derivedStale bool
	decay        float64
	maturity     float64
}

// explain computes the multipliers of a hit and its final score.
func explain(bm25 float64, in rankInputs, now time.Time, halfLife time.Duration, match string) api.Explanation {
	status := in.status
	if in.derivedStale && status == model.StatusActive {
		status = model.StatusStale
	}
	e := api.Explanation{
		BM25:       bm25,
		Confidence: confidenceFloor + (1-confidenceFloor)*min(max(in.confidence*in.decay, 0), 1),
		Tier:       weight(tierWeights, in.tier),
		Recency:    recency(now.Sub(in.updated), halfLife),
		Status:     weight(statusWeights, status),
		Maturity:   in.maturity,
		Match:      match,
	}
	e.Final = e.BM25 * e.Confidence * e.Tier * e.Recency * e.Status * e.Maturity
	return e
}

func weight[K comparable](weights map[K]float64, k K) float64 {
	if w, ok := weights[k]; ok {
		return w
	}
	return 1
}

// recency decays from 1 towards recencyFloor, halving the distance every
// halfLife. A memory updated in the future counts as new.
func recency(age, halfLife time.Duration) float64 {
	age = max(age, 0)
	return recencyFloor + (1-recencyFloor)*math.Exp2(-float64(age)/float64(halfLife))
}

// StatusWeight is the ranking multiplier of status s, for callers that
// derive a status the index does not know yet.
func StatusWeight(s model.Status) float64 { return weight(statusWeights, s) }
