// Package crdt holds the Automerge documents that memmesh replicates: one
// document per memory (MemoryDoc), one per edge (EdgeDoc) and one per mesh
// record (MeshDoc), plus the ids that name them. It converts between
// documents and the plain values of package model (model.Memory,
// model.Edge, model.MeshRecord), checks input before it reaches
// Automerge, and does no I/O. Of memmesh it imports only model.
//
// # Document layout
//
// Every document's root map has
//
//	type    "memory" or "edge"
//	schema  int64 layout version (1); newer versions are refused on load
//	id      26 lowercase base32 characters
//
// A memory document adds scalars namespace, title, kind, tier, confidence
// (float64), evergreen (bool), status and expires_at, and four nested
// maps:
//
//	provenance  {device, agent, session, created_at, updated_at}
//	tags        {tag: true, ...}
//	touches     {path or entity: true, ...}
//	revisions   {revision id: {parent, merges, text, device, agent, at}, ...}
//
// Tags and touches are sets stored as map keys, so concurrent additions
// and removals merge element by element (an element newly added on one
// replica while removed on another is kept). The nested maps are created
// with the document, never later, so two replicas never create the same
// map concurrently. Keys whose value is zero ("", 0, false) may be absent
// and read as zero.
//
// Keys are only ever added, never given another meaning, and a reader
// ignores keys it does not know: a revision's agent (the client that wrote
// it) came after the first documents, whose revisions read with no agent,
// and a node that predates it merges and loads documents that carry it,
// showing revisions without their agent. Such an optional key needs no new
// schema version; one that older nodes must not ignore would.
//
// An edge document adds scalars from, rel, to, notes, strength (float64),
// origin, validity, deleted (bool), created_at and updated_at.
// Its id is EdgeID(from, rel, to), so the same edge made on two machines
// merges into one document.
//
// Times are int64 Unix milliseconds, 0 for the zero time, and read back in
// UTC. Scalars merge last-writer-wins per key. Setters skip values that
// are unchanged, so rewriting a field makes nothing to sync. Values that
// must agree with each other share one key, so that concurrent changes
// merge to one replica's pair, never a mix of two: a compacted memory's
// status is "compacted:<id of the memory it was compacted into>", and an
// edge's validity is "<valid_from>,<valid_to>" in Unix milliseconds.
//
// # Content, revisions and conflicts
//
// Content is never an Automerge Text object: Text costs 30 to 100 times
// more CPU and memory at our sizes, and character-level merging of two
// edits to markdown rarely gives text anyone wrote. Instead each edit adds
// a revision whose text is a plain string scalar; parent names the
// revision it edits (absent for the first), and merges, a comma-separated
// list of ids, names other revisions it supersedes. Revisions are never
// changed or removed.
//
// A leaf is a revision that no other revision names as parent or in
// merges. Content is the text of the newest leaf (by time, then id). Two
// leaves mean edits made concurrently on different machines: a sync
// conflict. model.Memory.Conflict lists the leaves, newest first, and
// nothing is lost. AppendRevision takes the newest leaf as parent and
// every other leaf as merges, so the next edit resolves the conflict.
//
// # Actors and changes
//
// Every replica that edits a document needs its own Automerge actor id;
// ActorID derives a device's from its device id. Two copies of one document
// that make changes as the same actor without seeing each other's changes
// produce changes that can never be merged ("duplicate seq"), so a node
// must serialise the edits it makes to each document.
//
// Setters record operations; Commit turns them into one change. Heads,
// Save, Materialize, Merge and Fork commit pending operations first,
// without a message, as Automerge does. Merging never creates a change, so
// replicas that have exchanged all changes have identical heads.
//
// # A device's work
//
// Authors reads, from a saved document's change columns and without
// Automerge, each actor's highest sequence number: since a device's
// actors all start with its ActorID, it tells which of a device's
// changes a document holds. A Frontier records that for every document a
// member holds, and the device's purges: what the member held of the
// device's work when it revoked it. Without rebuilds a document without
// chosen changes and everything that depends on them. Revocation records
// are mesh records of their own (NewRevocationDoc), one change by their
// revoker, holding a frontier; MeshDoc.Created reads a record as its
// first change made it.
//
// A Tombstone is the union of the devices' purges of a memory, so that
// one purge refused later leaves the others standing.
//
// # Untrusted bytes
//
// automerge-go aborts the whole process on a panic in the Rust library, so
// LoadMemoryDoc and LoadEdgeDoc check bytes before Automerge parses them:
// they refuse empty input, input over MaxDocSize, input without the
// Automerge magic, anything but a single document chunk (what Save
// produces), deflated columns that inflate beyond 8 times MaxDocSize,
// operations with an unknown action or an increment by a non-integer,
// operation ids (of an operation, its object, the element it follows or
// a successor) whose actor index or counter does not fit 32 bits — all of
// which the linked Automerge aborts on even with a valid checksum — and
// operations in an object no operation made, or keyed against their
// object's type (an element inserted into a map, a string key in a list),
// which Automerge loads and aborts on at the next write to that object.
// After loading they check the document type, schema version and id.
//
// A peer also controls what a merge applies: every change of its document
// that the stored one lacks. Merges of two documents that each load are
// fuzzed (merge_fuzz_test.go); what they found to abort Automerge (the
// operation ids beyond 32 bits, the elements in a map) is refused on
// load. Automerge
// refuses a change that reuses an actor's sequence number for other
// content (two copies that edited as one actor) only when it reaches it,
// after applying the changes before it, so a refused Merge closes the
// document it merged into rather than leave it half merged.
//
// # Memory release
//
// A document lives in C memory that automerge-go frees only from Go
// finalizers; there is no explicit free. The Go collector cannot see that
// memory, so under load the C heap can grow far ahead of the next
// collection. Close drops the document and adds an estimate of its C
// memory (a fixed overhead plus a multiple of the bytes loaded or written)
// to a package-wide counter; Save adds the size of the C copy of its
// output, and Materialize and AppendRevision the results their reads leave
// behind. When the counter passes 64 MiB it is reset and one runtime.GC
// runs in the background (never more than one at a time), after which the
// finalizers free the memory. Close every document when done with it.
package crdt
