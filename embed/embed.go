// Package embed turns memories' text into vectors, for search by meaning.
//
// An Embedder is a provider: the builtin runtime for static models
// (embed/model2vec), a local Ollama server, or an OpenAI-compatible
// server. Vectors are derived data: each machine computes its own, tagged
// with the model that made them (Info.Tag), and never replicates them.
// Search works by words alone whenever no embedder is set or the one set
// fails, so a provider's error is reported, never fatal.
package embed

import (
	"context"
	"errors"
	"fmt"
)

// Embedder makes vectors of texts.
type Embedder interface {
	// Embed returns one vector per text, in order, each of Info().Dims
	// values and of unit length (L2-normalised), so that a dot product is
	// the cosine. It embeds at most MaxBatch texts of at most
	// MaxTextBytes each; a longer text is the caller's to cut.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Info says which model makes the vectors. Dims is 0 until a
	// provider that learns it from its first answer has answered.
	Info() Info
}

// Info names the model behind an Embedder.
type Info struct {
	Provider string // builtin, ollama or openai
	Model    string // the provider's name of the model
	Dims     int    // values per vector; 0 while not known yet
}

// Tag is what stored vectors are tagged with: vectors made under another
// tag are made again.
func (i Info) Tag() string { return fmt.Sprintf("%s/%s/%d", i.Provider, i.Model, i.Dims) }

// Bounds of one Embed call.
const (
	MaxBatch     = 64
	MaxTextBytes = 8 << 10
)

// Errors an Embedder returns, wrapped with what happened.
var (
	// ErrDims: the provider answered vectors of another size than the
	// model's (a model swapped behind the same name, a bad server).
	ErrDims = errors.New("embed: wrong dimensions")
	// ErrUnavailable: the provider cannot be reached or keeps failing
	// (after its retries); search goes on by words alone.
	ErrUnavailable = errors.New("embed: provider unavailable")
	// ErrBadInput: the call itself is out of bounds (too many or too long
	// texts); retrying does not help.
	ErrBadInput = errors.New("embed: bad input")
)

// CheckBatch checks the bounds of an Embed call; providers call it first.
func CheckBatch(texts []string) error {
	if len(texts) > MaxBatch {
		return fmt.Errorf("%w: %d texts, at most %d", ErrBadInput, len(texts), MaxBatch)
	}
	for i, t := range texts {
		if len(t) > MaxTextBytes {
			return fmt.Errorf("%w: text %d is %d bytes, at most %d", ErrBadInput, i, len(t), MaxTextBytes)
		}
	}
	return nil
}
