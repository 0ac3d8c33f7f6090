package model2vec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
	"github.com/memmesh/memmesh/internal/mutate"
)

// rawSafetensors is a file with the header as given, unchecked.
func rawSafetensors(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), data...)
}

func TestCorruptModelsRefused(t *testing.T) {
	valid := tinyFiles(t).Tensors
	matrix := tinyMatrix().Data // 13 × 4 F32: 208 bytes
	withLen := func(n uint64) []byte {
		b := bytes.Clone(valid)
		binary.LittleEndian.PutUint64(b, n)
		return b
	}
	nan := tinyMatrix()
	binary.LittleEndian.PutUint32(nan.Data[4*5:], math.Float32bits(float32(math.NaN())))
	tests := []struct {
		name  string
		edit  func(*m2vtest.Files)
		wants []string // in the error's text
	}{
		{"truncated header length", func(f *m2vtest.Files) { f.Tensors = valid[:5] },
			[]string{tensorFile, "shorter than the 8-byte header length"}},
		{"truncated header", func(f *m2vtest.Files) { f.Tensors = valid[:20] },
			[]string{tensorFile, "beyond the file"}},
		{"header length beyond the file", func(f *m2vtest.Files) { f.Tensors = withLen(1 << 62) },
			[]string{tensorFile, "beyond the file"}},
		{"header not JSON", func(f *m2vtest.Files) { f.Tensors = rawSafetensors("[1, 2]", matrix) },
			[]string{tensorFile, "not a JSON object"}},
		{"offsets outside the data", func(f *m2vtest.Files) {
			f.Tensors = rawSafetensors(`{"embeddings":{"dtype":"F32","shape":[13,4],"data_offsets":[0,2080]}}`, matrix)
		}, []string{tensorFile, `"embeddings"`, "outside the data section of 208 bytes"}},
		{"offsets reversed", func(f *m2vtest.Files) {
			f.Tensors = rawSafetensors(`{"embeddings":{"dtype":"F32","shape":[0,4],"data_offsets":[8,0]}}`, matrix)
		}, []string{tensorFile, "outside the data section"}},
		{"shape and dtype do not match the offsets", func(f *m2vtest.Files) {
			f.Tensors = rawSafetensors(`{"embeddings":{"dtype":"F16","shape":[13,4],"data_offsets":[0,208]}}`, matrix)
		}, []string{tensorFile, "needs 104 bytes", "span 208"}},
		{"shape beyond any file", func(f *m2vtest.Files) {
			f.Tensors = rawSafetensors(`{"embeddings":{"dtype":"F32","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,208]}}`, matrix)
		}, []string{tensorFile, "larger than the data section"}},
		{"unknown dtype", func(f *m2vtest.Files) {
			f.Tensors = rawSafetensors(`{"embeddings":{"dtype":"F8","shape":[13,4],"data_offsets":[0,52]}}`, matrix[:52])
		}, []string{tensorFile, `unknown dtype "F8"`}},
		{"unsupported dtype", func(f *m2vtest.Files) {
			f.Tensors = rawSafetensors(`{"embeddings":{"dtype":"I8","shape":[13,4],"data_offsets":[0,52]}}`, matrix[:52])
		}, []string{tensorFile, "dtype I8 not supported"}},
		{"no embeddings", func(f *m2vtest.Files) { f.Tensors = m2vtest.Safetensors(t, m2vtest.F32("other", []int{1, 1}, 1)) },
			[]string{tensorFile, "no tensor named embeddings"}},
		{"embeddings not a matrix", func(f *m2vtest.Files) {
			f.Tensors = m2vtest.Safetensors(t, m2vtest.F32("embeddings", []int{4}, 1, 2, 3, 4))
		},
			[]string{tensorFile, "want rows × dims"}},
		{"vectors too long", func(f *m2vtest.Files) {
			f.Tensors = m2vtest.Safetensors(t, m2vtest.F32("embeddings", []int{1, 5000}, make([]float32, 5000)...))
		},
			[]string{tensorFile, "5000 dims, at most 4096"}},
		{"more rows than tokens", func(f *m2vtest.Files) {
			f.Tensors = m2vtest.Safetensors(t, m2vtest.F32("embeddings", []int{len(tinyRows) + 1, 4}, make([]float32, 4*(len(tinyRows)+1))...))
		}, []string{tensorFile, "14 rows for 13 token ids"}},
		{"fewer rows than tokens", func(f *m2vtest.Files) {
			f.Tensors = m2vtest.Safetensors(t, m2vtest.F32("embeddings", []int{2, 2}, 1, 2, 3, 4))
		},
			[]string{tensorFile, "2 rows for 13 token ids"}},
		{"NaN in the matrix", func(f *m2vtest.Files) { f.Tensors = m2vtest.Safetensors(t, nan) },
			[]string{tensorFile, "is NaN"}},
		{"mapping outside the rows", func(f *m2vtest.Files) {
			f.Tensors = m2vtest.Safetensors(t, tinyMatrix(), m2vtest.Tensor{Name: "mapping", DType: "I64", Shape: []int{13}, Data: bytes.Repeat([]byte{0xff}, 13*8)})
		}, []string{tensorFile, "to row -1"}},
		{"weights too short", func(f *m2vtest.Files) {
			f.Tensors = m2vtest.Safetensors(t, tinyMatrix(), m2vtest.F32("weights", []int{2}, 1, 1))
		},
			[]string{tensorFile, "weights of shape [2] for 13 token ids"}},
		{"tokenizer model not WordPiece", func(f *m2vtest.Files) {
			f.Tokenizer = []byte(`{"normalizer":null,"pre_tokenizer":{"type":"Metaspace"},"model":{"type":"Unigram","vocab":[["a",0]]}}`)
		}, []string{tokenizerFile, "tokenizer model Unigram not supported"}},
		{"tokenizer normalizer not BERT's", func(f *m2vtest.Files) {
			f.Tokenizer = bytes.Replace(f.Tokenizer, []byte(`"BertNormalizer"`), []byte(`"NFKC"`), 1)
		}, []string{tokenizerFile, "normalizer NFKC not supported"}},
		{"tokenizer not JSON", func(f *m2vtest.Files) { f.Tokenizer = f.Tokenizer[:100] },
			[]string{tokenizerFile, "unexpected end of JSON"}},
		{"tokenizer id negative", func(f *m2vtest.Files) {
			f.Tokenizer = bytes.Replace(f.Tokenizer, []byte(`"hello":5`), []byte(`"hello":-5`), 1)
		}, []string{tokenizerFile, `token "hello" has id -5`}},
		{"config not JSON", func(f *m2vtest.Files) { f.Config = []byte("{") }, []string{configFile}},
		{"model name with a terminal escape", func(f *m2vtest.Files) { f.Config = []byte(`{"model_name":"\u001b[31mred"}`) },
			[]string{`model name "\x1b[31mred"`}},
		{"model name too long", func(f *m2vtest.Files) { f.Config = []byte(`{"model_name":"` + strings.Repeat("a", 129) + `"}`) },
			[]string{"model name", "1 to 128"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tinyFiles(t)
			tt.edit(&f)
			m, err := Load(f.Write(t, "potion-tiny"))
			if err == nil {
				t.Fatalf("Load = %+v, want an error", m.Info())
			}
			if !errors.Is(err, ErrModel) {
				t.Errorf("err = %v, want ErrModel", err)
			}
			for _, want := range tt.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q, want it to say %q", err, want)
				}
			}
		})
	}
}

func TestMissingFilesRefused(t *testing.T) {
	for _, name := range []string{configFile, tokenizerFile, tensorFile} {
		f := tinyFiles(t)
		switch name {
		case configFile:
			f.Config = nil
		case tokenizerFile:
			f.Tokenizer = nil
		case tensorFile:
			f.Tensors = nil
		}
		_, err := Load(f.Write(t, "potion-tiny"))
		if !errors.Is(err, ErrModel) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: err = %v, want ErrModel and ErrNotExist naming the file", name, err)
		}
	}
}

// FuzzSafetensorsHeader feeds the header reader any file: it must refuse
// or accept without panicking, and what it accepts lies inside the file.
func FuzzSafetensorsHeader(f *testing.F) {
	valid := tinyFiles(f).Tensors
	f.Add(valid)
	f.Add(rawSafetensors(`{"embeddings":{"dtype":"F16","shape":[13,4],"data_offsets":[0,104]},"weights":{"dtype":"F32","shape":[13],"data_offsets":[104,156]}}`, make([]byte, 156)))
	mutate.Seeds(f, 300, valid)
	f.Fuzz(func(t *testing.T, file []byte) {
		tensors, err := readHeader(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			return
		}
		for name, ts := range tensors {
			if ts.Offset < 8 || ts.Len < 0 || ts.Offset+ts.Len > int64(len(file)) {
				t.Fatalf("tensor %q at [%d, +%d) outside the file of %d bytes", name, ts.Offset, ts.Len, len(file))
			}
			n := dtypeSize[ts.DType]
			for _, d := range ts.Shape {
				n *= int64(d)
			}
			if n != ts.Len {
				t.Fatalf("tensor %q of shape %v %s spans %d bytes", name, ts.Shape, ts.DType, ts.Len)
			}
			if _, err := readFloats(bytes.NewReader(file), ts); err != nil && !strings.Contains(err.Error(), "not supported") {
				t.Fatalf("reading accepted tensor %q: %v", name, err)
			}
		}
	})
}
