package search

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// Scorch writes segments in its own goroutines, the persister and the
// merger, and tries again when a write fails. On a full disk each attempt
// fails at once, and the persister merges the in-memory segments anew
// before each one: about a second apart (Options.FlushDelay), that kept a
// tenth to a quarter of a core busy for nothing. writeFailed, which scorch
// calls from the failing goroutine, spaces the attempts out instead.
// Meanwhile every batch stays searchable in memory, and what never reaches
// the disk is indexed again from storage after a restart.

// writeFailedCallback is writeFailed's name in scorch's registry.
const writeFailedCallback = "memmesh-write-failed"

// failurePause is how long scorch waits after a failed write before it
// tries again, unless the index closes.
const failurePause = 10 * time.Second

func init() { scorch.RegistryAsyncErrorCallbacks[writeFailedCallback] = writeFailed }

// openIndexes holds every open Index by the path scorch knows it by.
var openIndexes sync.Map // scorchPath(dir) -> *Index

// scorchPath is the directory bleve gives scorch in an index directory.
func scorchPath(dir string) string { return dir + string(os.PathSeparator) + "store" }

// writeFailed pauses scorch's persister or merger after a failed write, and
// marks the index so that Close does not wait for a write that is not
// coming.
func writeFailed(err error, path string) {
	if !errors.Is(err, scorch.ErrPersist) {
		return
	}
	var closing chan struct{}
	if v, ok := openIndexes.Load(path); ok {
		ix := v.(*Index)
		if !ix.writeFailing.Swap(true) {
			ix.log.Warn("search index cannot write to disk; it stays searchable in memory and tries again", "every", failurePause, "err", err)
		}
		closing = ix.closing
	}
	select {
	case <-time.After(failurePause):
	case <-closing:
	}
}
