package model2vec

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestTokenizerMatchesReference compares the ids of texts chosen to be
// hard (accents, scripts, CJK, controls, whitespace of every kind, special
// tokens written in the text, long words) with those the tokenizers
// library gives for the same tokenizer.json, with potion models'
// normalizer and with each of its steps off (testdata/reference.mjs wrote
// them), less the unknown token's, which Model2Vec drops.
func TestTokenizerMatchesReference(t *testing.T) {
	var tokenizer map[string]any
	if err := readJSON("testdata/bert-tokenizer.json", maxTokenizerBytes, &tokenizer); err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		Normalizer json.RawMessage
		Cases      []struct {
			Text string
			IDs  []int32
		}
	}
	if err := readJSON("testdata/reference.json", maxTokenizerBytes, &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || len(groups[0].Cases) < 20 {
		t.Fatalf("%d groups of reference cases", len(groups))
	}
	for _, g := range groups {
		tokenizer["normalizer"] = g.Normalizer
		data, err := json.Marshal(tokenizer)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := parseTokenizer(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range g.Cases {
			want := slices.DeleteFunc(c.IDs, func(id int32) bool { return id == tok.unk })
			got, _ := tok.appendIDs(nil, c.Text, len(c.Text)+1, nil)
			if !slices.Equal(got, want) {
				t.Errorf("normalizer %s, ids of %.60q:\n got %v\nwant %v", g.Normalizer, c.Text, got, want)
			}
		}
	}
}
