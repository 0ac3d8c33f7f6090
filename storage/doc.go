// Package storage is memmesh's Pebble keyspace: Automerge documents,
// materialised records, secondary indexes, a change log, anti-entropy
// digests and per-device local data, all in one Pebble database.
//
// The package is generic. It stores opaque document bytes and opaque
// materialised values; callers say which index terms a record has. It
// imports nothing else of memmesh.
//
// # Writes
//
// Every Commit is one Pebble batch holding, for each record, the document,
// the record envelope, the index terms (old ones removed, new ones added),
// the change-log entry and the digest update. Commit returns once the batch
// is in the synced write-ahead log. Concurrent Commits share fsyncs: a mutex
// covers only taking the next sequence number and handing the batch to
// Pebble's commit pipeline (pebble.DB.ApplyNoSyncWait), so WAL order is
// sequence order; each Commit then waits for its WAL sync outside the mutex
// (pebble.Batch.SyncWait), and Pebble's WAL flusher serves every waiting
// Commit with one fsync. A WAL sync makes everything before it durable, so
// every sequence number up to [Store.DurableSeq] is durable.
//
// Reads may observe a committed batch a moment before its fsync completes
// (as in Pebble itself); [Store.Changes] never does: it stops at DurableSeq.
//
// # A full disk
//
// Writes never take the filesystem below Options.MinFree: they fail with a
// [*DiskFullError] instead (space.go). A quarter of the reserve is a
// ballast file that Pebble's writes delete when they meet ENOSPC anyway.
// A failed write to the write-ahead log (which Pebble cannot recover from)
// stops every later batch from reaching Pebble (walguard.go) until a write
// finds space again and reopens the database; Open on a full disk opens it
// read-only until then.
//
// # Keyspace
//
// Every key starts with one byte naming its keyspace. kind is one byte
// ('m' memory, 'e' edge, 'x' mesh record, 'p' tombstone); id, field and value are raw bytes
// that never contain 0x00; seq is a big-endian uint64.
//
//	meta    'M' name                             -> value ("schema": uint32 BE; "erase-pending": empty)
//	doc     'D' kind id                          -> Automerge document bytes
//	record  'R' kind id                          -> envelope (below)
//	term    'T' kind field 0x00 value 0x00 id    -> empty
//	change  'C' seq kind id                      -> empty
//	digest  'H' bucket                           -> 32 bytes, XOR merge operands
//	local   'L' key                              -> value (never replicated)
//	aside   'A' kind id                          -> bytes kept aside for a document (Record.Aside; never replicated)
//
// Byte by byte, the term {"tag", "go"} of memory "k3j5":
//
//	+----+----+----+----+----+----+----+----+----+----+----+----+----+
//	| 54 | 6d | 74 | 61 | 67 | 00 | 67 | 6f | 00 | 6b | 33 | 6a | 35 |
//	+----+----+----+----+----+----+----+----+----+----+----+----+----+
//	  'T'  'm'  't'  'a'  'g' sep   'g'  'o' sep   'k'  '3'  'j'  '5'
//	prefix kind |-- field ---|     |- value-|     |------ id ------|
//
// and the change-log entry of that memory at sequence number 258 (a Commit
// gives all its documents one seq, so the document is part of the key):
//
//	+----+----+----+----+----+----+----+----+----+----+----+----+----+----+
//	| 43 | 00 | 00 | 00 | 00 | 00 | 00 | 01 | 02 | 6d | 6b | 33 | 6a | 35 |
//	+----+----+----+----+----+----+----+----+----+----+----+----+----+----+
//	  'C' |---------- seq 258, big-endian ---------| 'm'  'k'  '3'  'j'  '5'
//	prefix                                          kind |------ id ------|
//
// A record envelope holds everything about a version except the document,
// so reads never touch documents (uv is an unsigned varint):
//
//	+----------+----------+------------------+----------+-------------------------------+-------+
//	| seq      | uv heads | per head:        | uv terms | per term:                     | value |
//	| 8 B, BE  |          | uv len, bytes    |          | uv len, field, uv len, value  | (rest)|
//	+----------+----------+------------------+----------+-------------------------------+-------+
//
// # Erasure
//
// A Record with Erase set removes a document from the keyspace: its bytes,
// record, terms, change-log entry and digest share. The old values stay in
// older tables, the write-ahead log and (for keys that bounded a table)
// the manifest until compactions and a new manifest drop them, which is
// what [Store.Expunge] waits for; Pebble's log recycling is off, so that
// a retired log is deleted instead of reused.
//
// # Digest
//
// Anti-entropy compares 256 buckets. A document belongs to bucket
// sha256(kind id)[0] and contributes sha256(kind id 0x00 head1 0x00 head2
// ...) over its heads in sorted order; a bucket is the XOR of its
// documents' contributions. Each Commit merges (old contribution XOR new
// one) into the bucket through a Pebble merge operator, so concurrent
// Commits keep it exact without a lock.
package storage
