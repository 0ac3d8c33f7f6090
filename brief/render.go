package brief

import (
	"errors"
	"hash/fnv"
	"iter"
	"sync"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
	"github.com/memmesh/memmesh/internal/tokens"
	"github.com/memmesh/memmesh/storage"
)

// A brief is filled here to its budget, counted on the tokens of the text
// the api package renders (internal/tokens).

// jsonItemTokens is what an item adds to a brief's JSON: its object
// without the braces, and one token: the braces and the comma between
// items fall into runs of punctuation with the quotes around them.
func (c *tokenCache) jsonItemTokens(it *api.BriefItem) int {
	j := api.CompactJSON(it)
	return c.count(string(j[1:len(j)-1])) + 1
}

// tokenCache remembers the token counts of rendered items, so that a brief
// counts only what it has not seen: an item's text changes when its memory
// does.
type tokenCache struct {
	mu     sync.Mutex
	counts map[uint64]int
}

// tokenCacheSize bounds the cache; it starts over when full.
const tokenCacheSize = 200_000

func (c *tokenCache) count(s string) int {
	h := fnv.New64a()
	h.Write([]byte(s))
	key := h.Sum64()
	c.mu.Lock()
	n, ok := c.counts[key]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = tokens.Count(s)
	c.mu.Lock()
	if c.counts == nil || len(c.counts) >= tokenCacheSize {
		c.counts = map[uint64]int{}
	}
	c.counts[key] = n
	c.mu.Unlock()
	return n
}

// maxMisses is how many candidates in a row that do not fit a brief
// fills on past before it stops: each one is read from storage.
const maxMisses = 32

// fill puts candidates into b in order while they fit its budget,
// counting each item's rendered text once and summing, then counts the
// whole text and drops the last items should it exceed the budget.
func (mk *Maker) fill(b *api.Brief, order iter.Seq[candidate]) error {
	sections := b.Sections()
	cost := func(it *api.BriefItem) int {
		if b.Format == api.FormatJSON {
			return mk.tokens.jsonItemTokens(it)
		}
		return mk.tokens.count(inert.Text(it.Markdown()))
	}
	cycles := b.Cycles
	b.Cycles = []api.Cycle{}
	var used int
	if b.Format == api.FormatJSON {
		used = tokens.Count(string(b.JSON()))
	} else {
		used = tokens.Count(b.Head())
	}
	for _, c := range cycles {
		var k int
		if b.Format == api.FormatJSON {
			k = tokens.Count(string(api.CompactJSON(c))) + 1
		} else {
			k = tokens.Count(inert.Text(c.Markdown()))
			if len(b.Cycles) == 0 {
				k += tokens.Count(api.CyclesHead)
			}
		}
		if used+k <= b.Budget {
			used += k
			b.Cycles = append(b.Cycles, c)
		}
	}
	type added struct{ sec int }
	var log []added
	misses := 0
	for c := range order {
		if misses >= maxMisses || b.Budget-used < 10 {
			break
		}
		m, err := mk.cfg.Host.Memory(c.id)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				continue // removed since it was ranked
			}
			return err
		}
		it := mk.briefItem(&m)
		it.Reason, it.Similar = mk.reason(&c.why), c.similar
		if c.section != api.SectionFromPeers {
			it.Device = ""
		}
		k := cost(&it)
		if b.Format == api.FormatMarkdown && len(*sections[c.section]) == 0 {
			k += tokens.Count(api.SectionHead(c.section))
		}
		if used+k > b.Budget {
			misses++
			continue
		}
		misses = 0
		used += k
		*sections[c.section] = append(*sections[c.section], it)
		log = append(log, added{c.section})
	}
	// The sum of the parts is within a few tokens of the count of the
	// whole; the whole decides.
	b.Tokens = used
	for {
		b.Tokens = tokens.Count(b.Text())
		if b.Tokens <= b.Budget || len(log) == 0 {
			break
		}
		last := log[len(log)-1]
		log = log[:len(log)-1]
		*sections[last.sec] = (*sections[last.sec])[:len(*sections[last.sec])-1]
	}
	// The count is in the text: count once more with it in.
	b.Tokens = tokens.Count(b.Text())
	return nil
}
