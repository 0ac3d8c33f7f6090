package model2vec

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchModel writes and loads a model of potion-base-8M's size: a
// vocabulary of 30k pieces (words and ## continuations), 256 dims.
func benchModel(b *testing.B, rng *rand.Rand) (*Model, []string) {
	b.Helper()
	const vocabSize, dims = 30000, 256
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	seen := map[string]bool{}
	var words []string
	for len(vocab) < vocabSize {
		w := randomWord(rng, 2+rng.IntN(7))
		if rng.IntN(4) == 0 {
			w = "##" + w[:min(len(w), 3)]
		}
		if seen[w] {
			continue
		}
		seen[w] = true
		vocab = append(vocab, w)
		if !strings.HasPrefix(w, "##") {
			words = append(words, w)
		}
	}
	matrix := make([]float32, vocabSize*dims)
	for i := range matrix {
		matrix[i] = rng.Float32()*2 - 1
	}
	f := modelFiles{
		config:    []byte(`{"normalize":true}`),
		tokenizer: tokenizerJSONFor(b, vocab),
		tensors:   safetensors(b, f32("embeddings", []int{vocabSize, dims}, matrix...)),
	}
	m, err := Load(f.write(b, "potion-bench"))
	if err != nil {
		b.Fatal(err)
	}
	return m, words
}

func randomWord(rng *rand.Rand, n int) string {
	w := make([]byte, n)
	for i := range w {
		w[i] = byte('a' + rng.IntN(26))
	}
	return string(w)
}

// memoryText is about 300 bytes of prose: known words, some capitalised,
// words that split into pieces or are unknown, punctuation.
func memoryText(rng *rand.Rand, words []string) string {
	var sb strings.Builder
	for sb.Len() < 300 {
		w := words[rng.IntN(len(words))]
		switch rng.IntN(8) {
		case 0:
			w = strings.ToUpper(w[:1]) + w[1:]
		case 1:
			w += randomWord(rng, 3) // pieces or unknown
		case 2:
			w += ","
		}
		sb.WriteString(w)
		sb.WriteByte(' ')
	}
	return sb.String()
}

// BenchmarkEmbed embeds one memory (about 300 bytes) per op with a model
// of realistic size.
func BenchmarkEmbed(b *testing.B) {
	seed := rand.Uint64()
	b.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	m, words := benchModel(b, rng)
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = memoryText(rng, words)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := m.Embed(ctx, texts[i%len(texts):i%len(texts)+1]); err != nil {
			b.Fatal(err)
		}
	}
}
