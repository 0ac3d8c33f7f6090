package model2vec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/memmesh/memmesh/embed"
)

// The files of a model's directory.
const (
	configFile    = "config.json"
	tokenizerFile = "tokenizer.json"
	tensorFile    = "model.safetensors"
)

// Bounds of the JSON files.
const (
	maxConfigBytes    = 64 << 10
	maxTokenizerBytes = 128 << 20
)

// maxDims caps a vector's size, since each text embedded allocates one
// (potion models have 256; large embedding models 4096).
const maxDims = 4096

// maxTokens is how many tokens of a text are embedded, Model2Vec's
// default max_length.
const maxTokens = 512

// ErrModel marks a model's directory that cannot be loaded: a file
// missing, corrupt or of a kind not supported.
var ErrModel = errors.New("model2vec: bad model")

// Model is a loaded static model. It is safe for concurrent use.
type Model struct {
	info    embed.Info
	tok     *wordPiece
	dims    int
	vectors []float32 // rows × dims
	weights []float32 // one per token id, or nil
	mapping []int32   // token id → row, or nil
	scratch sync.Pool // *buffers
}

// buffers are what one text's embedding reuses.
type buffers struct {
	ids  []int32
	norm []byte
}

var _ embed.Embedder = (*Model)(nil)

// config is the part of config.json read here.
type config struct {
	ModelName string `json:"model_name"`
}

// Load reads the model in dir: config.json, tokenizer.json and
// model.safetensors. Every size is checked against the files' real sizes
// and caps before it is allocated.
func Load(dir string) (*Model, error) {
	var cfg config
	if err := readJSON(filepath.Join(dir, configFile), maxConfigBytes, &cfg); err != nil {
		return nil, err
	}
	tokJSON, err := readBounded(filepath.Join(dir, tokenizerFile), maxTokenizerBytes)
	if err != nil {
		return nil, err
	}
	tok, err := parseTokenizer(tokJSON)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrModel, tokenizerFile, err)
	}
	m, err := loadTensors(filepath.Join(dir, tensorFile), tok)
	if err != nil {
		return nil, err
	}
	name := cfg.ModelName
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	m.info = embed.Info{Provider: "builtin", Model: name, Dims: m.dims}
	m.tok = tok
	return m, nil
}

// loadTensors reads the embedding matrix and, if there, the per-token
// weights and the token → row mapping, and checks them against the
// tokenizer's ids.
func loadTensors(path string, tok *wordPiece) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel, err)
	}
	fail := func(err error) error { return fmt.Errorf("%w: %s: %w", ErrModel, tensorFile, err) }
	tensors, err := readHeader(f, st.Size())
	if err != nil {
		return nil, fail(err)
	}
	m, err := readMatrix(f, tensors)
	if err != nil {
		return nil, fail(err)
	}
	ids := int(tok.maxID) + 1
	if err := m.readMapping(f, tensors, ids); err != nil {
		return nil, fail(err)
	}
	if err := m.readWeights(f, tensors, ids); err != nil {
		return nil, fail(err)
	}
	return m, nil
}

// readMatrix reads the embedding matrix, named embeddings as Model2Vec
// saves it (embedding.weight in the sentence-transformers layout).
func readMatrix(r io.ReaderAt, tensors map[string]tensor) (*Model, error) {
	t, ok := tensors["embeddings"]
	if !ok {
		t, ok = tensors["embedding.weight"]
	}
	if !ok {
		return nil, errors.New("no tensor named embeddings")
	}
	if len(t.Shape) != 2 || t.Shape[0] == 0 || t.Shape[1] == 0 {
		return nil, fmt.Errorf("embeddings of shape %v, want rows × dims", t.Shape)
	}
	if t.Shape[1] > maxDims {
		return nil, fmt.Errorf("embeddings of %d dims, at most %d", t.Shape[1], maxDims)
	}
	v, err := readFloats(r, t)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	if err := finite(v); err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	return &Model{vectors: v, dims: t.Shape[1]}, nil
}

// readMapping reads the token → row mapping of a model whose vocabulary
// was quantized; without one, each token id is its row.
func (m *Model) readMapping(r io.ReaderAt, tensors map[string]tensor, ids int) error {
	t, ok, err := perToken(tensors, "mapping", ids)
	if err != nil {
		return err
	}
	if !ok {
		if ids != m.rows() {
			return fmt.Errorf("%d rows for %d token ids", m.rows(), ids)
		}
		return nil
	}
	v, err := readInts(r, t)
	if err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	m.mapping = make([]int32, len(v))
	for i, row := range v {
		if row < 0 || row >= int64(m.rows()) {
			return fmt.Errorf("mapping of token %d to row %d, outside the %d rows", i, row, m.rows())
		}
		m.mapping[i] = int32(row)
	}
	return nil
}

// readWeights reads the per-token weights, if the model has them.
func (m *Model) readWeights(r io.ReaderAt, tensors map[string]tensor, ids int) error {
	t, ok, err := perToken(tensors, "weights", ids)
	if !ok || err != nil {
		return err
	}
	v, err := readFloats(r, t)
	if err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	if err := finite(v); err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	m.weights = v
	return nil
}

// perToken is the tensor name, if the file has it, checked to hold a
// value for each of ids token ids.
func perToken(tensors map[string]tensor, name string, ids int) (tensor, bool, error) {
	t, ok := tensors[name]
	if ok && (len(t.Shape) != 1 || t.Shape[0] < ids) {
		return t, false, fmt.Errorf("%s of shape %v for %d token ids", name, t.Shape, ids)
	}
	return t, ok, nil
}

func (m *Model) rows() int { return len(m.vectors) / m.dims }

// finite refuses NaN and infinities, which would make every vector they
// touch NaN.
func finite(v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("value %d is %v", i, x)
		}
	}
	return nil
}

// Info names the model: provider builtin, the model's name, its dims.
func (m *Model) Info() embed.Info { return m.info }

// Embed returns one vector per text: the mean of its tokens' rows (each
// scaled by its weight when the model has weights), L2-normalised. A
// text with no known token (an empty one) gets the zero vector, as in
// Model2Vec, which matches nothing.
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := embed.CheckBatch(texts); err != nil {
		return nil, err
	}
	b, _ := m.scratch.Get().(*buffers)
	if b == nil {
		b = &buffers{ids: make([]int32, 0, maxTokens)}
	}
	defer m.scratch.Put(b)
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b.ids, b.norm = m.tok.appendIDs(b.ids[:0], m.tok.cut(text, maxTokens), maxTokens, b.norm)
		out[i] = m.pool(b.ids)
	}
	return out, nil
}

// pool is the normalised mean of the rows of ids.
func (m *Model) pool(ids []int32) []float32 {
	d := m.dims
	v := make([]float32, d)
	for _, id := range ids {
		row := int(id)
		if m.mapping != nil {
			row = int(m.mapping[id])
		}
		w := float32(1)
		if m.weights != nil {
			w = m.weights[id]
		}
		addScaled(v, m.vectors[row*d:row*d+d], w)
	}
	// The mean's division by len(ids) is left out: it does not change the
	// direction, and the vector is normalised.
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(sum))
	for j := range v {
		v[j] *= inv
	}
	return v
}

// addScaled adds w × row to v (of the same length), four values a step:
// this loop is most of an embedding's time.
func addScaled(v, row []float32, w float32) {
	row = row[:len(v)]
	j := 0
	for ; j+4 <= len(v); j += 4 {
		s, r := v[j:j+4:j+4], row[j:j+4:j+4]
		s[0] += w * r[0]
		s[1] += w * r[1]
		s[2] += w * r[2]
		s[3] += w * r[3]
	}
	for ; j < len(v); j++ {
		v[j] += w * row[j]
	}
}

// maxNameBytes caps a model's name.
const maxNameBytes = 128

// checkName keeps a model's name, which tags vectors and is shown to
// people, to letters, digits and . _ - / (as in minishlab/potion-base-8M).
func checkName(name string) error {
	ok := name != "" && len(name) <= maxNameBytes
	for _, c := range []byte(name) {
		ok = ok && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._-/", c) >= 0)
	}
	if !ok {
		return fmt.Errorf("%w: model name %.40q: 1 to %d letters, digits and . _ - /", ErrModel, name, maxNameBytes)
	}
	return nil
}

// readJSON decodes a bounded JSON file.
func readJSON(path string, limit int64, v any) error {
	data, err := readBounded(path, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrModel, filepath.Base(path), err)
	}
	return nil
}

// readBounded reads a whole file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrModel, filepath.Base(path), limit)
	}
	return data, nil
}
