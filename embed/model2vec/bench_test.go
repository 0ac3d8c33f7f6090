package model2vec

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
)

// benchModel writes a model of potion-base-8M's size, a vocabulary of
// 30k pieces (words and ## continuations) and 256 dims, and returns its
// directory and the words of its vocabulary.
func benchModel(b *testing.B, rng *rand.Rand) (string, []string) {
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
	f := m2vtest.Files{
		Config:    []byte(`{"normalize":true}`),
		Tokenizer: m2vtest.Tokenizer(b, vocab),
		Tensors:   randomMatrix(b, rng, vocabSize, dims),
	}
	return f.Write(b, "potion-bench"), words
}

func loadBench(b *testing.B, dir string) *Model {
	b.Helper()
	m, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// randomMatrix is a safetensors file of a rows × dims embeddings matrix.
func randomMatrix(b *testing.B, rng *rand.Rand, rows, dims int) []byte {
	matrix := make([]float32, rows*dims)
	for i := range matrix {
		matrix[i] = rng.Float32()*2 - 1
	}
	return m2vtest.Safetensors(b, m2vtest.F32("embeddings", []int{rows, dims}, matrix...))
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
	dir, words := benchModel(b, rng)
	m := loadBench(b, dir)
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

// BenchmarkEmbedProse embeds a memory of English prose (270 bytes) with
// the BERT vocabulary of testdata (8,503 tokens) and 256 dims.
func BenchmarkEmbedProse(b *testing.B) {
	seed := rand.Uint64()
	b.Logf("seed %d", seed)
	tokenizer, err := os.ReadFile("testdata/bert-tokenizer.json")
	if err != nil {
		b.Fatal(err)
	}
	f := m2vtest.Files{Config: []byte(`{}`), Tokenizer: tokenizer, Tensors: randomMatrix(b, rand.New(rand.NewPCG(seed, 0)), 8503, 256)}
	m := loadBench(b, f.Write(b, "bert-bench"))
	text := []string{"Decision: we store vectors per machine, tagged with the model, never replicated. " +
		"The index is rebuilt from storage when its watermark is behind; a crash between the commit and the " +
		"index update is repaired at startup. Pitfall: run tests with -count=1."}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Embed(ctx, text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad loads a model of potion-base-8M's size (30k × 256, F32).
func BenchmarkLoad(b *testing.B) {
	seed := rand.Uint64()
	b.Logf("seed %d", seed)
	dir, _ := benchModel(b, rand.New(rand.NewPCG(seed, 0)))
	b.ReportAllocs()
	for b.Loop() {
		loadBench(b, dir)
	}
}
