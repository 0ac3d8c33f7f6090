package model2vec

import (
	"slices"
	"testing"

	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
)

// tinyVocab is the tiny model's vocabulary; tinyRows its matrix, one row
// per token, 4 dims.
var (
	tinyVocab = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", "cafe", "!", "中", "play", "##ing"}
	tinyRows  = [][]float32{
		{0, 0, 0, 0},   // [PAD]
		{0, 0, 0, 9},   // [UNK]: would show if it were pooled
		{0, 0, 9, 0},   // [CLS]: would show if special tokens were added
		{0, 9, 0, 0},   // [SEP]
		{9, 0, 0, 0},   // [MASK]
		{1, 0, 0, 0},   // hello
		{0, 1, 0, 0},   // world
		{0, 0, 1, 0},   // ##s
		{3, 0, 4, 0},   // cafe
		{0, 0, 0, 1},   // !
		{0, 2, 0, 0},   // 中
		{1, 1, 0, 0},   // play
		{0, 0, -1, -1}, // ##ing
	}
)

// tinyMatrix is tinyRows as the embeddings tensor.
func tinyMatrix() m2vtest.Tensor {
	return m2vtest.F32("embeddings", []int{len(tinyRows), 4}, slices.Concat(tinyRows...)...)
}

// tinyFiles are the tiny model's files.
func tinyFiles(tb testing.TB) m2vtest.Files {
	return m2vtest.Files{
		Config:    []byte(`{"model_type":"model2vec","architectures":["StaticModel"],"hidden_dim":4,"normalize":true}`),
		Tokenizer: m2vtest.Tokenizer(tb, tinyVocab),
		Tensors:   m2vtest.Safetensors(tb, tinyMatrix()),
	}
}
