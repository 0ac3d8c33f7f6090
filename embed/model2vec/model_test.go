package model2vec

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
)

func loadTiny(t *testing.T, f m2vtest.Files) *Model {
	t.Helper()
	m, err := Load(f.Write(t, "potion-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// unit is v divided by its length: the vectors below are worked out by
// hand from tinyRows (the sum of the rows of a text's tokens), and unit
// normalises them as a mean would be.
func unit(v ...float64) []float32 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	out := make([]float32, len(v))
	for i, x := range v {
		if n > 0 {
			out[i] = float32(x / math.Sqrt(n))
		}
	}
	return out
}

func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

func TestEmbedKnownTexts(t *testing.T) {
	m := loadTiny(t, tinyFiles(t))
	tests := []struct {
		name, text string
		want       []float32
	}{
		{"words and punctuation", "Hello worlds!", unit(1, 1, 1, 1)}, // hello world ##s !
		{"repeated word weighs more", "hello hello world", unit(2, 1, 0, 0)},
		{"unknown word left out", "hello xyzzy", unit(1, 0, 0, 0)},
		{"word with an unknown rest is unknown whole", "hello worldx", unit(1, 0, 0, 0)},
		{"continuation piece", "Playing", unit(1, 1, -1, -1)}, // play ##ing
		{"accents stripped, lowercased", "CAFÉ au lait", unit(3, 0, 4, 0)},
		{"accented word with a continuation", "CAFÉS", unit(3, 0, 5, 0)}, // cafe ##s
		{"punctuation split off beside accents", "Hèllo, WORLD!", unit(1, 1, 0, 1)},
		{"vertical tab is a control, dropped", "hel\vlo", unit(1, 0, 0, 0)},
		{"no-break space separates", "hello\u00a0world", unit(1, 1, 0, 0)},
		{"CJK spaced out", "hello中国", unit(1, 2, 0, 0)}, // hello 中, 国 unknown
		{"controls and format characters dropped", "hel\u200blo\x00 \tworld", unit(1, 1, 0, 0)},
		{"no special tokens added", "world", unit(0, 1, 0, 0)},
		{"special token written in the text", "[CLS]hello", unit(1, 0, 9, 0)},
		{"unknown token written in the text", "[UNK] hello", unit(1, 0, 0, 0)},
		{"special tokens match as written", "[cls] hello", unit(1, 0, 0, 0)},
		{"empty text", "", unit(0, 0, 0, 0)},
		{"only unknown words", "xyzzy plugh", unit(0, 0, 0, 0)},
		// The tiny vocabulary's median token is 5 characters long: a text
		// is cut to 512 × 5 characters, then to 512 tokens.
		{"first 512 tokens", strings.Repeat("! ", 512) + "world", unit(0, 0, 0, 1)},
		{"512 tokens in all", strings.Repeat("! ", 511) + "world", unit(0, 1, 0, 511)},
		{"first 2560 characters", strings.Repeat("hello ", 426) + "world", unit(1, 0, 0, 0)}, // "worl"
		{"2560 characters in all", strings.Repeat("hello ", 425) + "world", unit(425, 1, 0, 0)},
		{"characters, not bytes", strings.Repeat("é", 2554) + " world", unit(0, 1, 0, 0)},
	}
	texts := make([]string, len(tests))
	for i, tt := range tests {
		texts[i] = tt.text
	}
	got, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tests) {
		t.Fatalf("%d vectors for %d texts", len(got), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !near(got[i], tt.want) {
				t.Errorf("Embed(%.40q) = %v, want %v", tt.text, got[i], tt.want)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	f := tinyFiles(t)
	if got, want := loadTiny(t, f).Info(), (embed.Info{Provider: "builtin", Model: "potion-tiny", Dims: 4}); got != want {
		t.Errorf("Info() = %+v, want %+v (the folder's name)", got, want)
	}
	f.Config = []byte(`{"model_name":"potion-base-8M"}`)
	if got := loadTiny(t, f).Info().Model; got != "potion-base-8M" {
		t.Errorf("Info().Model = %q, want config.json's model_name", got)
	}
}

func TestEmbedBounds(t *testing.T) {
	m := loadTiny(t, tinyFiles(t))
	for name, texts := range map[string][]string{
		"too many texts": make([]string, embed.MaxBatch+1),
		"too long text":  {"hello", strings.Repeat("a", embed.MaxTextBytes+1)},
	} {
		if _, err := m.Embed(context.Background(), texts); !errors.Is(err, embed.ErrBadInput) {
			t.Errorf("%s: err = %v, want ErrBadInput", name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, []string{"hello"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}

// f16 encodes v, which must be exact in half precision.
func f16(v float32) uint16 {
	b := math.Float32bits(v)
	if b<<1 == 0 {
		return uint16(b >> 16)
	}
	exp := int(b>>23&0xff) - 127 + 15
	return uint16(b>>16&0x8000) | uint16(exp)<<10 | uint16(b>>13&0x3ff)
}

func TestF16Matrix(t *testing.T) {
	f := tinyFiles(t)
	m32 := loadTiny(t, f)
	var data []byte
	for _, row := range tinyRows {
		for _, x := range row {
			data = binary.LittleEndian.AppendUint16(data, f16(x))
		}
	}
	f.Tensors = m2vtest.Safetensors(t, m2vtest.Tensor{Name: "embeddings", DType: "F16", Shape: []int{len(tinyRows), 4}, Data: data})
	m16 := loadTiny(t, f)
	texts := []string{"Hello worlds!", "Playing CAFÉ"}
	want, _ := m32.Embed(context.Background(), texts)
	got, err := m16.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if !near(got[i], want[i]) {
			t.Errorf("F16 %q = %v, want %v as from F32", texts[i], got[i], want[i])
		}
	}
}

func TestFloat16(t *testing.T) {
	for _, tt := range []struct {
		h    uint16
		want float64
	}{
		{0x3c00, 1}, {0xc000, -2}, {0x0000, 0}, {0x7bff, 65504},
		{0x0001, math.Pow(2, -24)}, {0x8001, -math.Pow(2, -24)}, {0x0400, math.Pow(2, -14)},
		{0x7c00, math.Inf(1)}, {0xfc00, math.Inf(-1)},
	} {
		if got := float16(tt.h); float64(got) != tt.want {
			t.Errorf("float16(%#04x) = %v, want %v", tt.h, got, tt.want)
		}
	}
	if got := float16(0x7e00); !math.IsNaN(float64(got)) {
		t.Errorf("float16(0x7e00) = %v, want NaN", got)
	}
}

func TestWeightsAndMapping(t *testing.T) {
	f := tinyFiles(t)
	weights := make([]float32, len(tinyVocab))
	for i := range weights {
		weights[i] = 1
	}
	weights[5] = 2 // hello
	f.Tensors = m2vtest.Safetensors(t, tinyMatrix(), m2vtest.F32("weights", []int{len(weights)}, weights...))
	got, err := loadTiny(t, f).Embed(context.Background(), []string{"hello world"})
	if err != nil {
		t.Fatal(err)
	}
	if want := unit(2, 1, 0, 0); !near(got[0], want) {
		t.Errorf("weighted: %v, want %v", got[0], want)
	}

	// A quantized vocabulary: tokens share rows through the mapping.
	mapping := make([]byte, 0, 8*len(tinyVocab))
	for i := range tinyVocab {
		row := uint64(0)
		if tinyVocab[i] == "world" || tinyVocab[i] == "play" {
			row = 1
		}
		mapping = binary.LittleEndian.AppendUint64(mapping, row)
	}
	f.Tensors = m2vtest.Safetensors(t, m2vtest.F32("embeddings", []int{2, 4}, 1, 0, 0, 0, 0, 1, 0, 0),
		m2vtest.Tensor{Name: "mapping", DType: "I64", Shape: []int{len(tinyVocab)}, Data: mapping})
	got, err = loadTiny(t, f).Embed(context.Background(), []string{"hello world play"})
	if err != nil {
		t.Fatal(err)
	}
	if want := unit(1, 2, 0, 0); !near(got[0], want) {
		t.Errorf("mapped: %v, want %v", got[0], want)
	}
}

// TestUnknownTokenDropped: Model2Vec leaves out every id of the unknown
// token, also where the text itself holds it (a word-level vocabulary
// whose unknown token is a word).
func TestUnknownTokenDropped(t *testing.T) {
	f := tinyFiles(t)
	f.Tokenizer = bytes.Replace(f.Tokenizer, []byte(`"unk_token":"[UNK]"`), []byte(`"unk_token":"cafe"`), 1)
	got, err := loadTiny(t, f).Embed(context.Background(), []string{"hello cafe"})
	if err != nil {
		t.Fatal(err)
	}
	if want := unit(1, 0, 0, 0); !near(got[0], want) {
		t.Errorf("Embed(hello cafe) = %v, want %v: the unknown token cafe left out", got[0], want)
	}
}

// TestEmbedConcurrent: calls at once share the model and give what calls
// one at a time give (run with -race).
func TestEmbedConcurrent(t *testing.T) {
	m := loadTiny(t, tinyFiles(t))
	texts := []string{"Hello worlds!", "CAFÉS", "hello中国", strings.Repeat("play ", 100)}
	want, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 50 {
				got, err := m.Embed(context.Background(), texts)
				if err != nil {
					errs <- err
					return
				}
				for i := range texts {
					if !near(got[i], want[i]) {
						errs <- fmt.Errorf("%q: %v, want %v", texts[i], got[i], want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestAddedTokens: tokens added to the vocabulary (multiword ones, as
// Model2Vec adds) are found before the text is split into words: as
// written, or in the normalized text, or only as a word of their own.
func TestAddedTokens(t *testing.T) {
	f := tinyFiles(t)
	var tok map[string]any
	if err := json.Unmarshal(f.Tokenizer, &tok); err != nil {
		t.Fatal(err)
	}
	tok["added_tokens"] = append(tok["added_tokens"].([]any),
		map[string]any{"id": 9, "content": "Hello World", "normalized": true},
		map[string]any{"id": 10, "content": "zh", "single_word": true, "normalized": false})
	var err error
	if f.Tokenizer, err = json.Marshal(tok); err != nil {
		t.Fatal(err)
	}
	m := loadTiny(t, f)
	for _, tt := range []struct {
		text string
		want []float32
	}{
		{"HELLO World", unit(0, 0, 0, 1)},       // matches once normalized: the row of id 9
		{"say HELLO   World", unit(1, 1, 0, 0)}, // not the normalized content
		{"hello zh", unit(1, 2, 0, 0)},          // id 10 alone
		{"hello zhx", unit(1, 0, 0, 0)},         // within a word: zhx unknown
		{"hello_zh", unit(1, 0, 0, 0)},
	} {
		got, err := m.Embed(context.Background(), []string{tt.text})
		if err != nil {
			t.Fatal(err)
		}
		if !near(got[0], tt.want) {
			t.Errorf("Embed(%q) = %v, want %v", tt.text, got[0], tt.want)
		}
	}
}

// FuzzEmbed embeds any text: no panic, and a vector of the model's size
// that is of unit length, or zero when no token is known.
func FuzzEmbed(f *testing.F) {
	m, err := Load(tinyFiles(f).Write(f, "potion-tiny"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Hello worlds!", "CAFÉS [CLS]", "hello中国\u200b", "\xff\xfe[UNK]##s", strings.Repeat("play", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > embed.MaxTextBytes {
			return
		}
		got, err := m.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, x := range got[0] {
			n += float64(x) * float64(x)
		}
		if len(got[0]) != 4 || (n != 0 && math.Abs(n-1) > 1e-5) {
			t.Fatalf("Embed(%q) = %v, squared length %v", text, got[0], n)
		}
	})
}
