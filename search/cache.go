package search

import (
	"sync"
	"time"

	"github.com/memmesh/memmesh/model"
)

// maxCached bounds the stored-field cache; past it, the cache starts over.
// An entry takes about 150 bytes.
const maxCached = 1 << 20

// storedCache keeps the stored ranking fields of memories in memory.
// Reading them from the index costs a lookup of the document's id in every
// segment and the decoding of its stored fields: about 15 µs per candidate
// at 100,000 memories, a quarter of a search. Apply keeps the cache exact:
// it writes the fields of what it indexes and drops what it deletes, and
// bumps the generation so that a search that read the index before the
// Apply cannot put back what it read.
type storedCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]stored
}

func (c *storedCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *storedCache) get(id string) (stored, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[id]
	return st, ok
}

// fill caches what a search read, unless an Apply ran since it began
// (generation gen).
func (c *storedCache) fill(gen uint64, id string, st stored) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == c.gen {
		c.put(id, st)
	}
}

// applied records an Apply: the stored fields of what it indexed, none
// for what it removed.
func (c *storedCache) applied(indexed map[string]stored, removed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for id, st := range indexed {
		c.put(id, st)
	}
	for _, id := range removed {
		delete(c.m, id)
	}
}

func (c *storedCache) put(id string, st stored) {
	if c.m == nil || len(c.m) >= maxCached {
		c.m = make(map[string]stored)
	}
	c.m[id] = st
}

// storedOf returns the stored ranking fields of d as the index stores them
// (datetimes to the second).
func storedOf(d *document) stored {
	return stored{
		tier:       model.Tier(d.Tier),
		status:     model.Status(d.Status),
		confidence: d.Confidence,
		updated:    d.Updated.Truncate(time.Second),
		session:    d.Session,
		asks:       d.Asks == asksYes,
	}
}
