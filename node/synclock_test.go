package node

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// syncHookFS is the OS filesystem with a hook that runs before each sync
// of a write-ahead log file, in Pebble's log flusher, while the commits
// it makes durable wait for it.
type syncHookFS struct {
	vfs.FS
	hook atomic.Pointer[func()]
}

func (fs *syncHookFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(name, f, err)
}

func (fs *syncHookFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(newname, f, err)
}

func (fs *syncHookFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &syncHookFile{File: f, fs: fs}, nil
}

type syncHookFile struct {
	vfs.File
	fs *syncHookFS
}

func (f *syncHookFile) before() {
	if hook := f.fs.hook.Load(); hook != nil {
		(*hook)()
	}
}

func (f *syncHookFile) Sync() error     { f.before(); return f.File.Sync() }
func (f *syncHookFile) SyncData() error { f.before(); return f.File.SyncData() }
func (f *syncHookFile) SyncTo(length int64) (bool, error) {
	f.before()
	return f.File.SyncTo(length)
}

// lockWait bounds how long a log sync waits for a lock stripe to be free:
// a write that holds it across its fsync frees it only after.
const lockWait = 20 * time.Second

// lockFreeAtSync arms fs so that each log sync waits until the lock
// stripe of id is free, for at most lockWait, and returns a report of
// whether every sync found it free.
func lockFreeAtSync(t *testing.T, n *Node, fs *syncHookFS, id string) (disarm func() bool) {
	t.Helper()
	var held atomic.Bool
	hook := func() {
		deadline := time.Now().Add(lockWait)
		for !n.locks[lockStripe(id)].TryLock() {
			if time.Now().After(deadline) {
				held.Store(true)
				return
			}
			time.Sleep(time.Millisecond)
		}
		n.locks[lockStripe(id)].Unlock()
	}
	fs.hook.Store(&hook)
	return func() bool {
		fs.hook.Store(nil)
		return !held.Load()
	}
}

// TestWriteUnlocksBeforeItsFsync: a local write and the apply of a peer's
// documents release the documents' locks once their batch is applied, and
// wait for its fsync after, so that other writes of those lock stripes do
// not queue behind fsyncs. The write still returns only once durable.
func TestWriteUnlocksBeforeItsFsync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := &syncHookFS{FS: vfs.Default}
	mc := mesh.Config{Listen: "127.0.0.1:0", Name: "node1", SyncInterval: time.Hour}
	n, err := New(Config{Home: t.TempDir(), Logger: testLogger(t), FS: fs, Mesh: &mc})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	m := remember(t, n, api.RememberRequest{Content: "the release checklist lives in docs/release.md"})
	id := m.ID[2:]

	before := n.store.DurableSeq()
	free := lockFreeAtSync(t, n, fs, id)
	if _, err := n.Forget(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if !free() {
		t.Fatal("a local write held its document's lock across its fsync")
	}
	if n.store.DurableSeq() <= before {
		t.Fatal("the write returned before it was durable")
	}

	src := testNode(t, "")
	peer := remember(t, src, api.RememberRequest{Content: "a memory from a peer: the staging host is stg-2"})
	rec, err := src.store.Get(storage.KindMemory, peer.ID[2:])
	if err != nil {
		t.Fatal(err)
	}
	doc, err := src.store.GetDoc(storage.KindMemory, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	free = lockFreeAtSync(t, n, fs, rec.ID)
	if err := n.mesh.Apply(src.DeviceID(), []transport.Entry{{Kind: byte(storage.KindMemory), ID: rec.ID, Heads: rec.Heads, Doc: doc}}); err != nil {
		t.Fatal(err)
	}
	if !free() {
		t.Fatal("applying a peer's document held its lock across the fsync")
	}
	if _, err := n.store.Get(storage.KindMemory, rec.ID); err != nil {
		t.Fatalf("the peer's document, applied: %v", err)
	}
}
