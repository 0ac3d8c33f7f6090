// Package tokens counts the tokens of text as a language model's BPE
// tokenizer cuts it (OpenAI's o200k_base, whose ranks are embedded in the
// binary: nothing is downloaded), so that what memmesh hands an agent is
// held to a budget in the unit the agent pays in.
//
// It builds the codec from tiktoken-go's codec package rather than through
// tokenizer.Get: Get can return any of the library's encodings, so it links
// the tables of all four (9 MB); calling the one constructor links one.
package tokens

import (
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// o200k is the codec of o200k_base: a stand-in for the models memmesh's
// clients run, whose own tokenizers cut English and code much the same.
// Its ranks are loaded on the first count.
var o200k = sync.OnceValue(codec.NewO200kBase)

// Count returns the number of tokens of s. Should the tokenizer fail (it
// takes any bytes and its split expression has no timeout, so it does not),
// it errs high: a byte a token.
func Count(s string) int {
	n, err := o200k().Count(s)
	if err != nil {
		return len(s)
	}
	return n
}
