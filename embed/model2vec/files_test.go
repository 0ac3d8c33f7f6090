package model2vec

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// stTensor is a tensor to write into a safetensors file.
type stTensor struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

// f32 is a tensor of float32 values.
func f32(name string, shape []int, v ...float32) stTensor {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return stTensor{name: name, dtype: "F32", shape: shape, data: b}
}

// safetensors writes tensors in the file format: an 8-byte little-endian
// header length, the JSON header (padded with spaces to 8 bytes), then
// the tensors' bytes in order.
func safetensors(tb testing.TB, ts ...stTensor) []byte {
	tb.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, t := range ts {
		header[t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int{len(data), len(data) + len(t.data)}}
		data = append(data, t.data...)
	}
	head, err := json.Marshal(header)
	if err != nil {
		tb.Fatal(err)
	}
	for len(head)%8 != 0 {
		head = append(head, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(head)))
	return append(append(out, head...), data...)
}

// tokenizerJSONFor is a tokenizer.json of the kind potion models ship: a
// BERT WordPiece tokenizer whose vocabulary is vocab, ids in order.
func tokenizerJSONFor(tb testing.TB, vocab []string) []byte {
	tb.Helper()
	ids := make(map[string]int, len(vocab))
	var added []map[string]any
	for i, tok := range vocab {
		ids[tok] = i
		if tok[0] == '[' {
			added = append(added, map[string]any{"id": i, "content": tok, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
		}
	}
	b, err := json.Marshal(map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   added,
		"normalizer":     map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": ids},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// modelFiles are the three files of a model's directory.
type modelFiles struct {
	config, tokenizer, tensors []byte
}

// write writes the files that are not nil into a new directory named
// name, and returns its path.
func (f modelFiles) write(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for file, data := range map[string][]byte{configFile: f.config, tokenizerFile: f.tokenizer, tensorFile: f.tensors} {
		if data == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

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
func tinyMatrix() stTensor {
	return f32("embeddings", []int{len(tinyRows), 4}, slices.Concat(tinyRows...)...)
}

// tinyFiles are the tiny model's files.
func tinyFiles(tb testing.TB) modelFiles {
	return modelFiles{
		config:    []byte(`{"model_type":"model2vec","architectures":["StaticModel"],"hidden_dim":4,"normalize":true}`),
		tokenizer: tokenizerJSONFor(tb, tinyVocab),
		tensors:   safetensors(tb, tinyMatrix()),
	}
}
