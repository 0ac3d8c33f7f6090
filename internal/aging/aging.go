// Package aging holds how a memory's standing changes with time and with
// this machine's reads: confidence decay, maturity, the default
// stale-after age and the age past which a memory nothing links is an
// orphan. The node's lifecycle and the brief both judge memories by them,
// and must judge them alike.
package aging

import (
	"math"
	"time"

	"github.com/memmesh/memmesh/api"
)

const (
	// DefaultStaleDays is the stale-after age of a namespace that sets
	// none (memmesh ns set NS --stale-after).
	DefaultStaleDays = 60
	// OrphanAge is how old a memory nothing links is when it counts as
	// stale.
	OrphanAge = 30 * 24 * time.Hour
	// ProvenReads is how many reads on this machine make a memory proven.
	ProvenReads      = 10
	establishedReads = 3
)

// weights are the ranking multipliers of each maturity.
var weights = map[api.Maturity]float64{
	api.MaturityCandidate:   1,
	api.MaturityEstablished: 1.1,
	api.MaturityProven:      1.2,
}

// Maturity is the maturity of a memory read reads times on this machine.
func Maturity(reads int) api.Maturity {
	switch {
	case reads >= ProvenReads:
		return api.MaturityProven
	case reads >= establishedReads:
		return api.MaturityEstablished
	}
	return api.MaturityCandidate
}

// Weight is the ranking multiplier of maturity m (search and the brief).
func Weight(m api.Maturity) float64 { return weights[m] }

// Decay is the factor a memory's stated confidence has decayed by at now:
// it halves every halfLife since the memory was last updated (at
// updated), counted in whole days so that it holds still within a day.
// Evergreen memories do not decay.
func Decay(evergreen bool, updated, now time.Time, halfLife time.Duration) float64 {
	if evergreen {
		return 1
	}
	age := max(now.Sub(updated), 0).Truncate(24 * time.Hour)
	return math.Exp2(-float64(age) / float64(halfLife))
}
