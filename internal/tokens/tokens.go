// Package tokens counts the tokens of text as a language model's BPE
// tokenizer cuts it (OpenAI's o200k_base, whose ranks are embedded in the
// binary: nothing is downloaded), so that what memmesh hands an agent is
// held to a budget in the unit the agent pays in.
package tokens

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding names the tokenizer: a stand-in for the models memmesh's
// clients run, whose own tokenizers cut English and code much the same.
const Encoding = tokenizer.O200kBase

var codec = sync.OnceValues(func() (tokenizer.Codec, error) { return tokenizer.Get(Encoding) })

// Count returns the number of tokens of s. Should the tokenizer fail (its
// ranks are compiled in, so it does not), it errs high: a byte a token.
func Count(s string) int {
	c, err := codec()
	if err != nil {
		return len(s)
	}
	n, err := c.Count(s)
	if err != nil {
		return len(s)
	}
	return n
}
