package crdt

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/memmesh/memmesh/model"
)

// The fuzz targets in this file merge pairs of documents that each load on
// their own, the way a node merges a document a peer sends into the one it
// stores: the peer controls the whole of its document, so everything
// Automerge accepts on load must also merge without aborting the process.
// Each target derives both documents from the fuzz input and checks what a
// user relies on: no crash, a merge that commutes (same heads and the same
// materialised value in both orders), a result that saves and loads again,
// and a refusal, with an error, of whatever cannot be merged.

// fuzzDoc is what MemoryDoc, EdgeDoc and MeshDoc share.
type fuzzDoc[D any] interface {
	Merge(D) error
	Save() []byte
	Heads() []string
	Commit(msg string) error
	Close()
}

// docKind describes one document type to the merge fuzzers: how to load
// it, the edits a replica may make to it, and its materialised value.
type docKind[D fuzzDoc[D]] struct {
	load  func(actor string, data []byte) (D, error)
	edits []func(d D, in *fuzzInput) error
	view  func(d D) (any, error)
	// raw: edits may leave a document that no longer loads (its root's
	// type, schema or id overwritten).
	raw bool
}

// peerMerge merges a peer's saved document into a stored one as a node
// does on receipt (mergeBytes in node): the peer's bytes are loaded first,
// with every check, then the stored bytes, and the stored document takes
// the peer's changes.
func peerMerge[D fuzzDoc[D]](k *docKind[D], stored, peer []byte) (D, error) {
	var zero D
	rd, err := k.load(actorC, peer)
	if err != nil {
		return zero, fmt.Errorf("peer's document: %w", err)
	}
	defer rd.Close()
	ld, err := k.load(actorC, stored)
	if err != nil {
		return zero, fmt.Errorf("stored document: %w", err)
	}
	if err := ld.Merge(rd); err != nil {
		ld.Close()
		return zero, err
	}
	return ld, nil
}

// checkPeerMerge merges a into b and b into a through peerMerge and checks
// that both orders agree: both refused, or the same heads and the same
// value, a value that is readable if both documents were, and a result
// that saves, loads again unchanged, and takes either document again
// without changing.
func checkPeerMerge[D fuzzDoc[D]](t *testing.T, k *docKind[D], a, b []byte) {
	t.Helper()
	ab, errAB := peerMerge(k, b, a)
	ba, errBA := peerMerge(k, a, b)
	if (errAB == nil) != (errBA == nil) {
		t.Fatalf("merge refused in one order only: a into b: %v; b into a: %v", errAB, errBA)
	}
	for _, err := range []error{errAB, errBA} {
		if err != nil && !slices.ContainsFunc(mergeErrors, func(e error) bool { return errors.Is(err, e) }) {
			t.Fatalf("merge refused with an unexpected error: %v", err)
		}
	}
	if errAB != nil {
		return
	}
	defer ab.Close()
	defer ba.Close()
	if hab, hba := ab.Heads(), ba.Heads(); !slices.Equal(hab, hba) {
		t.Fatalf("heads differ by merge order: %v and %v", hab, hba)
	}
	vab, err := k.view(ab)
	vba, errBA := k.view(ba)
	if (err == nil) != (errBA == nil) || !reflect.DeepEqual(vab, vba) {
		t.Fatalf("merge does not commute:\n a into b: %#v (%v)\n b into a: %#v (%v)", vab, err, vba, errBA)
	}
	if err != nil && readable(k, a) && readable(k, b) {
		t.Fatalf("two readable documents merge into an unreadable one: %v", err)
	}
	again, errAgain := k.load(actorA, ab.Save())
	if errAgain != nil {
		t.Fatalf("a merged document does not load again: %v", errAgain)
	}
	defer again.Close()
	vAgain, errAgain := k.view(again)
	if !slices.Equal(again.Heads(), ab.Heads()) || (err == nil) != (errAgain == nil) || !reflect.DeepEqual(vab, vAgain) {
		t.Fatalf("a merged document changes when saved and loaded:\n before: %#v (%v)\n after:  %#v (%v)", vab, err, vAgain, errAgain)
	}
	for _, data := range [][]byte{a, b} {
		d, err := k.load(actorB, data)
		if err != nil {
			t.Fatalf("a merged document no longer loads: %v", err)
		}
		heads := again.Heads()
		err = again.Merge(d)
		d.Close()
		if err != nil || !slices.Equal(again.Heads(), heads) {
			t.Fatalf("merging a document again: %v, heads %v, were %v", err, again.Heads(), heads)
		}
	}
}

// mergeErrors are the errors peerMerge may refuse a pair of documents
// with: a load error (of either) or a merge refused.
var mergeErrors = append([]error{ErrUnmergeable, ErrIDMismatch}, loadErrors...)

// readable reports whether data loads and materialises.
func readable[D fuzzDoc[D]](k *docKind[D], data []byte) bool {
	d, err := k.load(actorB, data)
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = k.view(d)
	return err == nil
}

// editErrors are the errors an edit may return for a bad argument.
var editErrors = []error{ErrInvalidID, ErrInvalidStatus, ErrInvalidTier, ErrInvalidNumber, ErrInvalidString, ErrInvalidValidity}

// maxFuzzEdits bounds the edits derived from one input.
const maxFuzzEdits = 64

// Replica steps besides the kind's edits, chosen by the low bits of an
// edit byte.
const (
	stepCommit = iota // commit the replica's pending edits
	stepSync          // merge the other replica into this one
	stepReload        // save and load again, as a node stores a document
	stepEdit          // one of the kind's edits
	steps
)

// replicaPair builds two replicas of base from in: a byte chooses their
// actors (possibly the same, as a device restored from a backup has),
// then each byte applies one step to one of them. It returns both saved.
func replicaPair[D fuzzDoc[D]](t *testing.T, k *docKind[D], base []byte, in *fuzzInput) (a, b []byte) {
	t.Helper()
	actors := []string{actorA, actorB, actorC}
	pick := in.byte()
	var reps [2]D
	for i, actor := range []string{actors[pick%3], actors[pick/3%3]} {
		d, err := k.load(actor, base)
		if err != nil {
			t.Fatalf("loading the base document: %v", err)
		}
		reps[i] = d
		defer func() { reps[i].Close() }()
	}
	repActors := [2]string{actors[pick%3], actors[pick/3%3]}
	for range maxFuzzEdits {
		if in.done() {
			break
		}
		op := in.byte()
		i := op & 1
		d := reps[i]
		var err error
		switch op >> 1 % steps {
		case stepCommit:
			err = d.Commit(in.str())
		case stepSync:
			// Replicas of one actor cannot merge, nor raw documents
			// without an id.
			saved := d.Save()
			if err = d.Merge(reps[1-i]); err != nil && repActors[0] != repActors[1] && !k.raw {
				t.Fatalf("syncing replicas of different actors: %v", err)
			}
			if err != nil && d.Heads() == nil {
				// Automerge refused the merge, which closed the replica:
				// go on from its copy before the merge.
				again, err := k.load(repActors[i], saved)
				if err != nil && !k.raw {
					t.Fatalf("reloading a replica after a refused merge: %v", err)
				}
				if err != nil {
					return nil, reps[1-i].Save() // a raw document that no longer loads
				}
				reps[i] = again
			}
			err = nil
		case stepReload:
			again, err := k.load(repActors[i], d.Save())
			if err != nil {
				if !k.raw {
					t.Fatalf("reloading a replica: %v", err)
				}
				break
			}
			d.Close()
			reps[i] = again
		case stepEdit:
			err = k.edits[int(in.byte())%len(k.edits)](d, in)
		}
		if err != nil && !slices.ContainsFunc(editErrors, func(e error) bool { return errors.Is(err, e) }) {
			t.Fatalf("edit step %d: unexpected error %v", op, err)
		}
	}
	return reps[0].Save(), reps[1].Save()
}

// fuzzInput hands out the bytes of a fuzz input; when they run out it
// yields zeros.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) done() bool { return len(in.b) == 0 }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

// fuzzWords are strings worth trying: empty, short, non-ASCII, with a NUL,
// invalid UTF-8, ids, long.
var fuzzWords = []string{
	"", "a", "b", "storage/db.go", "ünïcödé ✓", "x\x00y", "\xff\xfe", fuzzIDs[0], fuzzIDs[1],
	strings.Repeat("long text ", 40), "compacted:" + fuzzIDs[1], "0,1",
}

// fuzzIDs are fixed valid ids, so that a fuzz input always builds the same
// documents.
var fuzzIDs = []string{"aaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbb"}

// str returns one of fuzzWords, or the next few input bytes as they are.
func (in *fuzzInput) str() string {
	c := int(in.byte())
	if c < len(fuzzWords) {
		return fuzzWords[c]
	}
	n := min(c%16, len(in.b))
	s := string(in.b[:n])
	in.b = in.b[n:]
	return s
}

// time returns a time around 2026, or the zero time.
func (in *fuzzInput) time() time.Time {
	c := in.byte()
	if c == 0 {
		return time.Time{}
	}
	return at("2026-01-01T00:00:00Z").Add(time.Duration(int(c)-128) * time.Hour)
}

// unit returns a number worth trying as a confidence or strength.
func (in *fuzzInput) unit() float64 {
	return []float64{0, 0.25, 0.5, 1, -0.5, 1.5, 0.7500001}[int(in.byte())%7]
}

func memoryKind() *docKind[*MemoryDoc] {
	return &docKind[*MemoryDoc]{
		load: LoadMemoryDoc,
		edits: []func(*MemoryDoc, *fuzzInput) error{
			func(d *MemoryDoc, in *fuzzInput) error { return d.SetTitle(in.str()) },
			func(d *MemoryDoc, in *fuzzInput) error { return d.SetNamespace(in.str()) },
			func(d *MemoryDoc, in *fuzzInput) error { return d.SetKind(in.str()) },
			func(d *MemoryDoc, in *fuzzInput) error {
				return d.SetTier([]model.Tier{model.TierHuman, model.TierAgent, model.TierAuto, "god"}[in.byte()%4])
			},
			func(d *MemoryDoc, in *fuzzInput) error { return d.SetConfidence(in.unit()) },
			func(d *MemoryDoc, in *fuzzInput) error { return d.SetEvergreen(in.byte()&1 == 1) },
			func(d *MemoryDoc, in *fuzzInput) error {
				s := []model.Status{model.StatusActive, model.StatusStale, model.StatusArchived, model.StatusCompacted, model.StatusDeleted, "gone"}[in.byte()%6]
				into := ""
				if s == model.StatusCompacted {
					into = in.str()
				}
				return d.SetStatus(s, into)
			},
			func(d *MemoryDoc, in *fuzzInput) error { return d.SetExpiresAt(in.time()) },
			func(d *MemoryDoc, in *fuzzInput) error { return d.SetUpdated(in.time()) },
			func(d *MemoryDoc, in *fuzzInput) error { return d.AddTags(in.str(), in.str()) },
			func(d *MemoryDoc, in *fuzzInput) error { return d.RemoveTags(in.str()) },
			func(d *MemoryDoc, in *fuzzInput) error { return d.AddTouches(in.str()) },
			func(d *MemoryDoc, in *fuzzInput) error { return d.RemoveTouches(in.str()) },
			func(d *MemoryDoc, in *fuzzInput) error {
				_, err := d.AppendRevision(in.str(), in.str(), in.str(), in.time())
				return err
			},
		},
		view: func(d *MemoryDoc) (any, error) { return d.Materialize() },
	}
}

func edgeKind() *docKind[*EdgeDoc] {
	return &docKind[*EdgeDoc]{
		load: LoadEdgeDoc,
		edits: []func(*EdgeDoc, *fuzzInput) error{
			func(d *EdgeDoc, in *fuzzInput) error { return d.SetNotes(in.str()) },
			func(d *EdgeDoc, in *fuzzInput) error { return d.SetStrength(in.unit()) },
			func(d *EdgeDoc, in *fuzzInput) error { return d.SetValidity(in.time(), in.time()) },
			func(d *EdgeDoc, in *fuzzInput) error { return d.SetDeleted(in.byte()&1 == 1) },
			func(d *EdgeDoc, in *fuzzInput) error { return d.SetUpdated(in.time()) },
		},
		view: func(d *EdgeDoc) (any, error) { return d.Materialize() },
	}
}

func meshKind() *docKind[*MeshDoc] {
	return &docKind[*MeshDoc]{
		load: LoadMeshDoc,
		edits: []func(*MeshDoc, *fuzzInput) error{
			func(d *MeshDoc, in *fuzzInput) error {
				return wrongRecord(d.Revoke(in.str(), in.time()))
			},
			func(d *MeshDoc, in *fuzzInput) error { return d.SetName(in.str(), in.time()) },
			func(d *MeshDoc, in *fuzzInput) error {
				return wrongRecord(d.SetSync([]string{model.SyncAll, model.SyncLocal, "some"}[in.byte()%3], in.time()))
			},
			func(d *MeshDoc, in *fuzzInput) error {
				return wrongRecord(d.SetStaleDays([]int64{0, 1, 30, -1, model.MaxStaleDays + 1}[in.byte()%5], in.time()))
			},
		},
		view: func(d *MeshDoc) (any, error) { return d.Materialize() },
	}
}

// wrongRecord drops the error of an edit of the other kind of mesh record,
// which is refused: revoking a namespace, or setting a device's policy.
func wrongRecord(err error) error {
	if errors.Is(err, ErrMalformed) {
		return nil
	}
	return err
}

// fuzzMemory is the memory every fuzzed memory document starts as.
func fuzzMemory() *model.Memory {
	m := testMemory()
	m.ID = fuzzIDs[0]
	m.Revisions = []model.Revision{{ID: fuzzIDs[1], Text: m.Content, Device: m.Provenance.Device, At: m.Provenance.CreatedAt}}
	return m
}

// fuzzBases returns the saved documents that replicas start from: a
// memory, an edge, and a device and a namespace record.
func fuzzBases(tb testing.TB) (memory, edge, device, namespace []byte) {
	tb.Helper()
	m, err := NewMemoryDoc(actorA, fuzzMemory())
	must(tb, err)
	defer m.Close()
	e, err := NewEdgeDoc(actorA, testEdge())
	must(tb, err)
	defer e.Close()
	dev, err := NewMeshDoc(actorA, deviceRecord("DEV1", "laptop"))
	must(tb, err)
	defer dev.Close()
	ns, err := NewMeshDoc(actorA, &model.MeshRecord{ID: MeshID(model.MeshNamespace, "work"), What: model.MeshNamespace, Key: "work", Sync: model.SyncAll})
	must(tb, err)
	defer ns.Close()
	return m.Save(), e.Save(), dev.Save(), ns.Save()
}

// FuzzMergeDocs derives two replicas of one memory, edge or mesh record
// from the input (the first byte chooses which), edits each through this
// package's setters with commits, partial syncs and reloads in between,
// and merges their saved bytes in both orders through peerMerge.
func FuzzMergeDocs(f *testing.F) {
	memory, edge, device, namespace := fuzzBases(f)
	mk, ek, dk := memoryKind(), edgeKind(), meshKind()
	// Hand-made seeds: concurrent edits of each field on two actors, an
	// edit after a partial sync, the same actor on both replicas (the
	// merge must be refused in both orders), and a revocation raced with
	// a rename.
	f.Add([]byte{0, 1, 6, 0, 12, 1, 6, 0, 13, 0, 6, 13, 2, 1, 6, 13, 3})
	f.Add([]byte{0, 1, 6, 9, 4, 5, 3, 6, 6, 3, 20, 7, 6, 6, 5, 1, 6, 13, 0, 4})
	f.Add([]byte{0, 0, 6, 0, 12, 1, 6, 13, 2})
	f.Add([]byte{1, 1, 6, 0, 1, 7, 2, 5, 6, 1, 2, 7, 6, 2, 200, 100, 1, 6, 3, 1})
	f.Add([]byte{2, 1, 6, 0, 13, 5, 7, 6, 1, 4, 200, 3, 4, 1})
	f.Add([]byte{3, 1, 6, 2, 1, 7, 6, 3, 2, 7, 6, 2, 1, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInput{b: data}
		switch in.byte() % 4 {
		case 0:
			a, b := replicaPair(t, mk, memory, in)
			checkPeerMerge(t, mk, a, b)
		case 1:
			a, b := replicaPair(t, ek, edge, in)
			checkPeerMerge(t, ek, a, b)
		case 2:
			a, b := replicaPair(t, dk, device, in)
			checkPeerMerge(t, dk, a, b)
		case 3:
			a, b := replicaPair(t, dk, namespace, in)
			checkPeerMerge(t, dk, a, b)
		}
	})
}

// FuzzMergeStructure builds two replicas of a raw Automerge document whose
// root holds a memory's type, schema and id, and then anything: nested
// maps, lists, text, counters and scalars of every type, set, inserted,
// spliced, incremented and deleted concurrently, with the root's own keys
// sometimes overwritten or deleted. This is what a peer that does not use
// this package can send. The replicas are merged as memory documents in
// both orders; the merged Automerge value must agree, and Materialize
// must either succeed in both orders with the same memory or refuse in
// both.
func FuzzMergeStructure(f *testing.F) {
	memory, _, _, _ := fuzzBases(f)
	k := structureKind()
	f.Add([]byte{1, 6, 0, 0, 1, 3, 7, 0, 1, 4, 1, 6, 0, 2, 0, 1, 5})
	f.Add([]byte{1, 6, 0, 3, 2, 0, 7, 0, 4, 2, 1, 4, 7, 0, 5, 2, 0, 1, 3})
	f.Add([]byte{1, 6, 0, 6, 3, 5, 7, 0, 6, 3, 0, 2, 9, 2, 6, 0, 7, 1, 5})
	f.Add([]byte{1, 6, 0, 8, 4, 9, 7, 0, 8, 4, 250, 2, 6, 0, 9, 0, 7, 0, 9, 0})
	f.Add([]byte{0, 6, 0, 10, 0, 7, 0, 11, 1, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := replicaPair(t, k, memory, &fuzzInput{b: data})
		checkPeerMerge(t, k, a, b)
	})
}

// structureKind loads documents of any structure as memory documents. Its
// value is the whole Automerge document and what Materialize makes of it.
func structureKind() *docKind[*MemoryDoc] {
	return &docKind[*MemoryDoc]{
		load:  LoadMemoryDoc,
		edits: []func(*MemoryDoc, *fuzzInput) error{editStructure},
		raw:   true,
		view: func(d *MemoryDoc) (any, error) {
			m, err := d.Materialize()
			return []any{d.am.Root().Interface(), m, err != nil}, nil
		},
	}
}

// FuzzMergeChanges applies change chunks from the input (the first one's
// checksum fixed, so that Automerge parses it) to a memory document, and
// merges the document Automerge saves, if it takes the changes, with a
// concurrent edit of the same memory, in both orders. The seeds are the
// changes of raw edits of every kind; the fuzzer mutates their bytes
// within the format: sequence numbers, dependencies, operation ids,
// objects, keys, value types. Whatever a peer's Automerge accepts and
// saves, this package must load and merge, or refuse. which chooses the
// concurrent edit's actor (another, or the one the seeds were made by)
// and whether the changes apply to the memory as created or to the
// concurrent edit.
func FuzzMergeChanges(f *testing.F) {
	memory, _, _, _ := fuzzBases(f)
	k := structureKind()
	changes := seedChanges(f, memory)
	for i, c := range changes {
		f.Add(uint8(i), c.Save())
	}
	f.Add(uint8(0), automerge.SaveChanges(changes))
	var concurrent [2][]byte
	for i, actor := range []string{actorC, actorB} {
		other, err := LoadMemoryDoc(actor, memory)
		must(f, err)
		must(f, other.SetTitle("concurrent title"))
		_, err = other.AppendRevision("concurrent text", "dev", "codex/0.9", at("2026-01-02T00:00:00Z"))
		must(f, err)
		concurrent[i] = other.Save()
		other.Close()
	}

	f.Fuzz(func(t *testing.T, which uint8, changes []byte) {
		other := concurrent[which&1]
		start := memory
		if which&2 != 0 {
			start = other
		}
		changes = withChecksum(changes)
		if !changeIDsFit(changes) {
			return // the peer's Automerge would abort on these
		}
		d, err := automerge.Load(start)
		if err != nil {
			t.Fatal(err)
		}
		if d.LoadIncremental(changes) != nil {
			return
		}
		checkPeerMerge(t, k, d.Save(), other)
	})
}

// changeOpIDColumns are the op columns of a change chunk that hold actor
// indexes and counters, and whether each holds deltas: the object's, the
// key's, and the predecessors'. (A change's own operation ids follow from
// its first one.)
var changeOpIDColumns = map[uint64]bool{
	0<<4 | 1: false, 0<<4 | 2: false,
	1<<4 | 1: false, 1<<4 | 3: true,
	7<<4 | 1: false, 7<<4 | 3: true,
}

// isActorColumn reports whether an op id column holds actor indexes.
func isActorColumn(id uint64) bool { return id&7 == 1 }

// changeChunk is an uncompressed change chunk taken apart.
type changeChunk struct {
	header  []byte // deps, actor, seq, start op, time, message, other actors
	startOp uint64
	actors  [][]byte // the change's actor and the others it names
	cols    []column
	data    [][]byte // each column's bytes
	rest    []byte   // what follows the columns
}

// parseChange takes apart the change chunk at the start of data and
// returns what follows it; ok is false if data does not start with one.
func parseChange(data []byte) (ch changeChunk, next []byte, ok bool) {
	const header = 8 // magic, checksum
	if len(data) < header || !bytes.HasPrefix(data, magic) {
		return ch, nil, false
	}
	c := cursor{b: data[header:]}
	typ, n := c.byte(), c.uleb()
	body := cursor{b: c.take(n)}
	if c.err != nil || typ != 1 {
		return ch, nil, false
	}
	start := body.b
	body.take(body.count(32) * 32) // deps
	ch.actors = [][]byte{body.take(body.uleb())}
	body.uleb() // seq
	ch.startOp = body.uleb()
	body.sleb()            // time
	body.take(body.uleb()) // message
	for range body.count(1) {
		ch.actors = append(ch.actors, body.take(body.uleb()))
	}
	ch.header = start[:len(start)-len(body.b)]
	ch.cols = body.columns()
	for _, col := range ch.cols {
		ch.data = append(ch.data, body.take(col.len))
	}
	ch.rest = body.b
	return ch, c.b, body.err == nil
}

// bytes encodes the chunk, with its checksum.
func (ch *changeChunk) bytes() []byte {
	specs := appendUleb(nil, uint64(len(ch.cols)))
	for i, col := range ch.cols {
		spec := col.id
		if col.deflate {
			spec |= deflateBit
		}
		specs = appendUleb(appendUleb(specs, spec), uint64(len(ch.data[i])))
	}
	return chunk(1, slices.Concat(ch.header, specs, slices.Concat(ch.data...), ch.rest))
}

// changeIDsFit reports whether data is a sequence of uncompressed change
// chunks whose operation ids fit 32 bits and name actors the change
// lists. Automerge aborts when it applies a change with a larger id, as
// it does when it loads such a document (see checkSaved), or with an
// actor index past the change's actors (a document cannot hold one: the
// actors of its changes are rebuilt from its own actor table). This
// package never applies change chunks, but FuzzMergeChanges and
// FuzzMergeOps make their peer's documents with them.
func changeIDsFit(data []byte) bool {
	for len(data) > 0 {
		ch, next, ok := parseChange(data)
		if !ok || ch.startOp > math.MaxUint32 {
			return false
		}
		data = next
		for i, col := range ch.cols {
			delta, isID := changeOpIDColumns[col.id]
			most := uint64(math.MaxUint32)
			if isActorColumn(col.id) {
				most = uint64(len(ch.actors)) - 1
			}
			if col.deflate || isID && checkOpIDs(ch.data[i], delta, most) != nil {
				return false
			}
			if col.id == colAction {
				r := rle{c: cursor{b: ch.data[i]}}
				ops := uint64(0)
				for _, _, ok := r.next(); ok && ops < maxOps; _, _, ok = r.next() {
					ops++
				}
				if ch.startOp+ops > math.MaxUint32 {
					return false
				}
			}
		}
	}
	return true
}

// changeObjectsFit reports whether every operation of the changes
// (applied in this order) is in an object one of them made, or the root,
// and keyed as its object's type wants (see checkOps). Automerge
// aborts applying a change that inserts more than one element into a
// map; FuzzMergeOps makes such changes.
func changeObjectsFit(changes ...[]byte) bool {
	type opID struct {
		actor string
		ctr   uint64
	}
	made := map[opID]uint64{}
	for _, data := range changes {
		ch, _, ok := parseChange(data)
		if !ok {
			return false
		}
		col := func(id uint64) []byte {
			if i := slices.IndexFunc(ch.cols, func(c column) bool { return c.id == id }); i >= 0 {
				return ch.data[i]
			}
			return nil
		}
		actions := rle{c: cursor{b: col(colAction)}}
		objActor, objCtr := rle{c: cursor{b: col(colObjActor)}}, rle{c: cursor{b: col(colObjCtr)}}
		keyStr := rle{c: cursor{b: col(colKeyStr)}, str: true}
		insert := bools{c: cursor{b: col(colInsert)}}
		for op := uint64(0); op < maxOps; op++ {
			action, noAction, ok := actions.next()
			if !ok {
				break
			}
			oa, root := objActor.nextOrNull()
			oc, _ := objCtr.nextOrNull()
			_, noKey := keyStr.nextOrNull()
			kind := uint64(actionMakeMap)
			if !root {
				if oa >= uint64(len(ch.actors)) {
					return false
				}
				if kind, ok = made[opID{string(ch.actors[oa]), oc}]; !ok {
					return false
				}
			}
			if checkKey(kind, noKey, insert.next()) != nil {
				return false
			}
			if !noAction && makesObject(action) {
				made[opID{string(ch.actors[0]), ch.startOp + op}] = action
			}
		}
	}
	return true
}

// opEditColumns are the integer op columns of a change chunk that
// FuzzMergeOps rewrites, and whether each holds deltas: the object's
// actor and counter, the key's (the element an insertion follows), the
// action, the value's type and length, and the predecessors' count (a
// group column: type 0), actors and counters.
var opEditColumns = []struct {
	id    uint64
	delta bool
}{
	{0<<4 | 1, false}, {0<<4 | 2, false}, {1<<4 | 1, false}, {1<<4 | 3, true},
	{colAction, false}, {colValueMeta, false}, {7 << 4, false}, {7<<4 | 1, false}, {7<<4 | 3, true},
}

// FuzzMergeOps rewrites the operations of one of the seed changes cell by
// cell, as the input says: an operation moved to another object, inserted
// after another element, given another action, value type or
// predecessors, or a reference made null. Values are drawn near those
// the change holds, so that they name operations and objects that exist
// or almost do: the inconsistencies byte mutation rarely makes. The
// changes before it are applied first, then the rewritten one (if
// Automerge takes it); the saved document is merged with a concurrent
// edit in both orders, as in FuzzMergeChanges.
func FuzzMergeOps(f *testing.F) {
	memory, _, _, _ := fuzzBases(f)
	k := structureKind()
	changes := seedChanges(f, memory)
	base, err := automerge.Load(memory)
	must(f, err)
	created, err := base.Changes()
	must(f, err)
	baseChanges := saveChanges(created)
	f.Add([]byte{0, 0, 1, 3, 2})
	f.Add([]byte{1, 2, 1, 0, 1, 3, 2, 5, 4, 1, 3})
	f.Add([]byte{2, 1, 7, 2, 200, 6, 0, 255})
	f.Add([]byte{3, 3, 8, 1, 3, 3, 2, 0})
	var concurrent [2][]byte
	for i, actor := range []string{actorC, actorB} {
		other, err := LoadMemoryDoc(actor, memory)
		must(f, err)
		must(f, other.SetTitle("concurrent title"))
		concurrent[i] = other.Save()
		other.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInput{b: data}
		which := in.byte()
		i := int(which>>2) % len(changes)
		ch, _, ok := parseChange(changes[i].Save())
		if !ok {
			t.Fatal("a seed change does not parse")
		}
		for range maxFuzzEdits {
			if in.done() {
				break
			}
			editOpColumn(t, &ch, in)
		}
		rewritten := ch.bytes()
		before := slices.Concat(baseChanges, saveChanges(changes[:i]))
		if !changeIDsFit(rewritten) || !changeObjectsFit(append(before, rewritten)...) {
			return // the peer's Automerge would abort on these
		}
		d, err := automerge.Load(memory)
		must(t, err)
		for _, c := range changes[:i] {
			must(t, d.Apply(c))
		}
		if d.LoadIncremental(rewritten) != nil {
			return
		}
		checkPeerMerge(t, k, d.Save(), concurrent[which&1])
	})
}

// saveChanges returns the chunks of changes.
func saveChanges(changes []*automerge.Change) [][]byte {
	out := make([][]byte, len(changes))
	for i, c := range changes {
		out[i] = c.Save()
	}
	return out
}

// editOpColumn sets one cell of one of the opEditColumns of ch as in says:
// null, or a value within a few of the column's own values.
func editOpColumn(t *testing.T, ch *changeChunk, in *fuzzInput) {
	e := opEditColumns[int(in.byte())%len(opEditColumns)]
	i := slices.IndexFunc(ch.cols, func(c column) bool { return c.id == e.id })
	if i < 0 {
		return
	}
	cells := decodeColumn(t, ch.data[i], e.delta)
	if len(cells) == 0 {
		return
	}
	row := int(in.byte()) % len(cells)
	switch v := in.byte(); {
	case v == 0xff:
		cells[row] = cell{null: true}
	default:
		// a value near the change's own: another cell's, shifted by -2..5
		near := cells[int(v)%len(cells)]
		cells[row] = cell{v: max(0, near.v+int64(v>>5)-2)}
	}
	ch.data[i] = encodeColumn(cells, e.delta)
}

// seedChanges returns the changes of edits of every kind Automerge has,
// made to memory in four commits.
func seedChanges(tb testing.TB, memory []byte) []*automerge.Change {
	tb.Helper()
	d, err := LoadMemoryDoc(actorB, memory)
	must(tb, err)
	defer d.Close()
	heads := d.am.Heads()
	root := d.am.RootMap()
	commit := func() error { _, err := d.am.Commit("seed"); return err }
	for _, edit := range []func() error{
		func() error { return root.Set("l", []any{"a", int64(-1), 2.5, true, nil, uint64(7)}) },
		func() error { return root.Set("t", automerge.NewText("hello")) },
		func() error { return root.Set("c", automerge.NewCounter(3)) },
		commit,
		func() error { return d.am.Path("l").List().Insert(1, "x", automerge.NewMap()) },
		func() error { return listAt(d.am.Path("l")).Delete(0) },
		func() error { return d.am.Path("t").Text().Splice(1, 2, "ëy") },
		func() error { return d.am.Path("c").Counter().Inc(-5) },
		commit,
		func() error {
			return root.Set("m", map[string]any{"b": []byte{1, 2}, "at": at("2026-01-01T00:00:00Z"), "n": map[string]any{}})
		},
		func() error { return d.AddTags("new") },
		func() error { return d.RemoveTags("pebble") },
		func() error { return root.Delete(keyTitle) },
		commit,
		func() error { _, err := d.AppendRevision("seeded", "dev", "", at("2026-01-03T00:00:00Z")); return err },
		commit,
	} {
		must(tb, edit())
	}
	changes, err := d.am.Changes(heads...)
	must(tb, err)
	return changes
}

// structurePaths are the places editStructure writes to: the root, maps,
// lists, a text and a counter below it, and deeper objects.
var structurePaths = [][]any{
	{}, {"tags"}, {"revisions", fuzzIDs[1]}, {"l"}, {"l", 0}, {"t"}, {"c"}, {"m"}, {"m", "n"}, {"l", 1, "x"},
}

// structureKeys are the map keys editStructure uses, the root's own among
// them.
var structureKeys = []string{"l", "t", "c", "m", "n", "x", "text", "", keyType, keySchema, keyID, keyRevisions, keyTags}

// editStructure makes one raw Automerge edit chosen by in. The edit aims
// at a path that may not exist or may hold another type; Automerge
// refuses such edits, and they are skipped. The edits stay pending
// (Commit does not see them) until Automerge commits them before the next
// merge or save.
func editStructure(d *MemoryDoc, in *fuzzInput) error {
	_ = rawEdit(d.am, in)
	return nil
}

func rawEdit(doc *automerge.Doc, in *fuzzInput) error {
	p := doc.Path(structurePaths[int(in.byte())%len(structurePaths)]...)
	switch in.byte() % 10 {
	case 0:
		return p.Map().Set(structureKeys[int(in.byte())%len(structureKeys)], structureValue(in))
	case 1:
		return p.Map().Delete(structureKeys[int(in.byte())%len(structureKeys)])
	case 2:
		l := listAt(p)
		return l.Insert(int(in.byte())%(l.Len()+1), structureValue(in))
	case 3:
		l := listAt(p)
		return l.Set(int(in.byte())%(l.Len()+1), structureValue(in))
	case 4:
		l := listAt(p)
		return l.Delete(int(in.byte()) % (l.Len() + 1))
	case 5:
		t := p.Text()
		n := t.Len() + 1
		return t.Splice(int(in.byte())%n, int(in.byte())%n, in.str())
	case 6:
		return p.Counter().Inc(int64(int8(in.byte())))
	case 7:
		return p.Set(structureValue(in))
	case 8:
		return p.Delete()
	default:
		l := listAt(p)
		return l.Append(structureValue(in), structureValue(in))
	}
}

// listAt returns the list at p. (A list reached through a Path cannot
// delete: automerge-go's List.Delete dereferences the list's object id,
// which only a list read from the document has.)
func listAt(p *automerge.Path) *automerge.List {
	if v, err := p.Get(); err == nil && v.Kind() == automerge.KindList {
		return v.List()
	}
	return p.List()
}

// structureValue returns a value of one of the types Automerge stores.
func structureValue(in *fuzzInput) any {
	c := in.byte()
	switch c % 14 {
	case 0:
		return in.str()
	case 1:
		return int64(int8(in.byte())) << (c % 64)
	case 2:
		return uint64(in.byte()) << (c % 64)
	case 3:
		return float64(int8(in.byte())) / 7
	case 4:
		return c&0x80 != 0
	case 5:
		return nil
	case 6:
		return []byte(in.str())
	case 7:
		return in.time()
	case 8:
		return automerge.NewCounter(int64(int8(in.byte())))
	case 9:
		return automerge.NewMap()
	case 10:
		return automerge.NewList()
	case 11:
		return automerge.NewText(in.str())
	case 12:
		return []any{in.str(), int64(c)}
	default:
		return map[string]any{"text": in.str(), "at": int64(c)}
	}
}

// TestMergeKnownAutomergeDefects replays, through peerMerge, the shapes of
// merges reported to crash Automerge or to make it save documents it
// cannot load (in the releases after the one linked here): each must
// merge in both orders, save and load again.
func TestMergeKnownAutomergeDefects(t *testing.T) {
	k := structureKind()
	// newDoc makes a memory's root as actor, bypassing this package.
	newDoc := func(actor string) *automerge.Doc {
		d := automerge.New()
		must(t, d.SetActorID(actor))
		for key, v := range map[string]any{keyType: typeMemory, keySchema: int64(schemaVersion), keyID: fuzzIDs[0]} {
			must(t, d.RootMap().Set(key, v))
		}
		return d
	}
	fork := func(d *automerge.Doc, actor string) *automerge.Doc {
		f, err := d.Fork()
		must(t, err)
		must(t, f.SetActorID(actor))
		return f
	}
	tests := []struct {
		name string
		make func() (a, b *automerge.Doc)
	}{
		{
			// automerge#897: after a merge, deleting a key that does not
			// exist saved a document that referenced a missing actor.
			"delete of an absent key after a merge", func() (a, b *automerge.Doc) {
				d0 := newDoc("00")
				must(t, d0.RootMap().Set("a", int64(1)))
				d1, d2 := fork(d0, "02"), fork(d0, "01")
				must(t, d1.RootMap().Set("b", int64(2)))
				_, err := d2.Merge(d1)
				must(t, err)
				must(t, d2.RootMap().Delete("c"))
				return d1, d2
			},
		},
		{
			// automerge#1390: a merge panicked after one replica put the
			// value a key already held and the other a new one.
			"rewrite of the current value against a change", func() (a, b *automerge.Doc) {
				base := newDoc("62617365")
				must(t, base.RootMap().Set("a", int64(1)))
				left, right := fork(base, "6c656674"), fork(base, "7269676874")
				must(t, left.RootMap().Set("a", int64(1)))
				must(t, right.RootMap().Set("a", int64(0)))
				return left, right
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.make()
			checkPeerMerge(t, k, a.Save(), b.Save())
		})
	}
}

// TestMergeElementInMap replays what FuzzMergeOps found
// (testdata/fuzz/FuzzMergeOps/1cf80001391f0a20): a peer's change that
// makes a map (instead of a list) and inserts an element into it.
// Automerge applies it and saves a memory document with valid hashes and
// a valid root, which loads; the next write to that map (here the tags,
// which the change replaces) aborts the process ("can only compare map
// keys"). The document is refused on load.
func TestMergeElementInMap(t *testing.T) {
	memory, _, _, _ := fuzzBases(t)
	src, err := automerge.Load(memory)
	must(t, err)
	heads := src.Heads()
	must(t, src.SetActorID(actorB))
	must(t, src.RootMap().Set(keyTags, []any{"x"}))
	changes, err := src.Changes(heads...)
	must(t, err)
	ch, _, ok := parseChange(changes[0].Save())
	if !ok {
		t.Fatal("the change does not parse")
	}
	i := slices.IndexFunc(ch.cols, func(c column) bool { return c.id == colAction })
	cells := decodeColumn(t, ch.data[i], false)
	made := slices.IndexFunc(cells, func(c cell) bool { return c.v == actionMakeList })
	cells[made].v = actionMakeMap
	ch.data[i] = encodeColumn(cells, false)

	peer, err := automerge.Load(memory)
	must(t, err)
	must(t, peer.LoadIncremental(ch.bytes()))
	sent := peer.Save()
	if _, err := automerge.Load(sent); err != nil {
		t.Fatalf("Automerge does not load what it saved: %v", err)
	}
	if _, err := LoadMemoryDoc(actorC, sent); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("LoadMemoryDoc: err = %v, want %v", err, ErrCorrupt)
	}
}
