package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/memmesh/memmesh/vector"
)

// The vector stage's data: vectors scattered around vectorClusters
// centres (texts fall into topics), each at about vectorSpread from its
// centre; a query is a stored vector moved by half that. seedVectors
// makes every run draw the same.
const (
	vectorClusters = 200
	vectorSpread   = 0.8
	seedVectors    = 20261129
	// vectorK is what a search of 10 results asks the vector index for
	// (node's nearPerResult times the limit).
	vectorK = 50
	// vectorBatch is how many vectors one Put stores while filling.
	vectorBatch = 500
)

// VectorStage is the vector stage's figures.
type VectorStage struct {
	Vectors int     `json:"vectors"`
	Dims    int     `json:"dims"`
	Latency Summary `json:"latency"`
	// Fill is the time to store the vectors, graph built.
	Fill time.Duration `json:"fill_ns"`
}

// vectorStage fills a vector.Set in dir with n vectors of dims values and
// times queries searches for the vectorK nearest, as a search by meaning
// does after embedding its query.
func vectorStage(ctx context.Context, dir string, n, dims, queries int, log *slog.Logger) (VectorStage, error) {
	set, err := vector.Open(dir, vector.Options{Dims: dims, Tag: fmt.Sprintf("bench/clusters/%d", dims), Logger: log})
	if err != nil {
		return VectorStage{}, fmt.Errorf("bench: %w", err)
	}
	defer set.Close()
	rng := rand.New(rand.NewPCG(seedVectors, uint64(dims)))
	centres := make([][]float32, vectorClusters)
	for i := range centres {
		centres[i] = near(rng, nil, dims, 1)
	}
	stored := make([][]float32, 0, n)
	start := time.Now()
	for len(stored) < n && ctx.Err() == nil {
		items := make([]vector.Item, 0, vectorBatch)
		for len(items) < vectorBatch && len(stored) < n {
			v := near(rng, centres[rng.IntN(len(centres))], dims, vectorSpread)
			items = append(items, vector.Item{ID: fmt.Sprintf("m%07d", len(stored)), Sum: 1, Vec: v})
			stored = append(stored, v)
		}
		if err := set.Put(items); err != nil {
			return VectorStage{}, fmt.Errorf("bench: %w", err)
		}
		if len(stored)%20_000 == 0 {
			log.Info("storing vectors", "done", len(stored), "of", n)
		}
	}
	if err := ctx.Err(); err != nil {
		return VectorStage{}, err
	}
	r := VectorStage{Vectors: n, Dims: dims, Fill: time.Since(start)}
	lat := make(Latencies, 0, queries)
	for range queries {
		q := near(rng, stored[rng.IntN(len(stored))], dims, vectorSpread/2)
		start := time.Now()
		if _, err := set.Search(q, vectorK); err != nil {
			return VectorStage{}, fmt.Errorf("bench: %w", err)
		}
		lat = append(lat, time.Since(start))
	}
	r.Latency = lat.Summary()
	return r, nil
}

// near returns a unit vector of dims values: centre moved by a random
// vector of norm about spread (a random unit vector when centre is nil).
func near(rng *rand.Rand, centre []float32, dims int, spread float64) []float32 {
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x := rng.NormFloat64() * spread / math.Sqrt(float64(dims))
		if centre != nil {
			x += float64(centre[i])
		}
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}
