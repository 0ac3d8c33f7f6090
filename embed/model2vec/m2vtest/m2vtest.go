// Package m2vtest writes Model2Vec models in the real file formats
// (config.json, a WordPiece tokenizer.json, model.safetensors) for tests:
// tiny models whose vectors a test chooses.
package m2vtest

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Tensor is a tensor to write into a safetensors file.
type Tensor struct {
	Name  string
	DType string
	Shape []int
	Data  []byte
}

// F32 is a tensor of float32 values.
func F32(name string, shape []int, v ...float32) Tensor {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return Tensor{Name: name, DType: "F32", Shape: shape, Data: b}
}

// Safetensors writes tensors in the file format: an 8-byte little-endian
// header length, the JSON header (padded with spaces to 8 bytes), then
// the tensors' bytes in order.
func Safetensors(tb testing.TB, ts ...Tensor) []byte {
	tb.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, t := range ts {
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": t.Shape, "data_offsets": []int{len(data), len(data) + len(t.Data)}}
		data = append(data, t.Data...)
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

// Tokenizer is a tokenizer.json of the kind potion models ship: a
// BERT WordPiece tokenizer whose vocabulary is vocab, ids in order.
func Tokenizer(tb testing.TB, vocab []string) []byte {
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

// Files are the three files of a model's directory.
type Files struct {
	Config, Tokenizer, Tensors []byte
}

// Write writes the files that are not nil into a new directory named
// name, and returns its path.
func (f Files) Write(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for file, data := range map[string][]byte{"config.json": f.Config, "tokenizer.json": f.Tokenizer, "model.safetensors": f.Tensors} {
		if data == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// specials are the first tokens of every model written here.
var specials = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

// Model writes into a new directory named name a model whose vocabulary
// is the special tokens and words, each word's vector its row (special
// tokens weigh nothing), and returns the directory. Every row has the
// same length, the model's dims.
func Model(tb testing.TB, name string, words map[string][]float32) string {
	tb.Helper()
	vocab := slices.Concat(specials, slices.Sorted(func(yield func(string) bool) {
		for w := range words {
			if !yield(w) {
				return
			}
		}
	}))
	dims := 0
	for _, v := range words {
		dims = len(v)
		break
	}
	var rows []float32
	for i, w := range vocab {
		v := words[w]
		if i < len(specials) {
			v = make([]float32, dims)
		}
		if len(v) != dims {
			tb.Fatalf("m2vtest: %q has %d values, others %d", w, len(v), dims)
		}
		rows = append(rows, v...)
	}
	config, err := json.Marshal(map[string]any{"model_type": "model2vec", "architectures": []string{"StaticModel"}, "hidden_dim": dims, "normalize": true, "model_name": name})
	if err != nil {
		tb.Fatal(err)
	}
	return Files{
		Config:    config,
		Tokenizer: Tokenizer(tb, vocab),
		Tensors:   Safetensors(tb, F32("embeddings", []int{len(vocab), dims}, rows...)),
	}.Write(tb, name)
}

// Topics are the word lists of TopicModel: the words of one topic share
// an axis.
var Topics = [][]string{
	{"postgres", "database", "driver", "pgx", "sql", "library"},
	{"kafka", "queue", "message", "broker", "events", "topics"},
	{"deploy", "release", "staging", "rollout", "ship"},
}

// TopicModel writes a model named name whose words of one of Topics have
// a vector along that topic's axis (a little apart within it): texts
// about one topic are near each other whatever their words, and far from
// the others'. Its dims are len(Topics)+1.
func TopicModel(tb testing.TB, name string) string {
	tb.Helper()
	words := map[string][]float32{}
	for axis, topic := range Topics {
		for i, w := range topic {
			v := make([]float32, len(Topics)+1)
			v[axis], v[len(Topics)] = 1, float32(i)/20
			words[w] = v
		}
	}
	return Model(tb, name, words)
}
