package storage

import (
	"encoding/binary"

	"github.com/cockroachdb/pebble/v2"
)

// Keyspace prefixes (see the package comment). Only append new ones.
const (
	prefixMeta   byte = 'M'
	prefixDoc    byte = 'D'
	prefixRecord byte = 'R'
	prefixTerm   byte = 'T'
	prefixChange byte = 'C'
	prefixDigest byte = 'H'
	prefixLocal  byte = 'L'
	prefixAside  byte = 'A'
)

// sep ends a term's field and value inside a term key.
const sep byte = 0x00

// metaSchema names the schema version in the meta keyspace.
const metaSchema = "schema"

func metaKey(name string) []byte {
	return append([]byte{prefixMeta}, name...)
}

// docKey and recordKey are prefix kind id.
func docKey(kind Kind, id string) []byte    { return kindIDKey(prefixDoc, kind, id) }
func recordKey(kind Kind, id string) []byte { return kindIDKey(prefixRecord, kind, id) }
func asideKey(kind Kind, id string) []byte  { return kindIDKey(prefixAside, kind, id) }

func kindIDKey(prefix byte, kind Kind, id string) []byte {
	k := make([]byte, 0, 2+len(id))
	return append(append(k, prefix, byte(kind)), id...)
}

// termPrefix is the term key up to and including the separator after
// field; termKey continues it with value, separator and id.
func termPrefix(kind Kind, field string) []byte {
	k := make([]byte, 0, 3+len(field))
	k = append(k, prefixTerm, byte(kind))
	k = append(k, field...)
	return append(k, sep)
}

func termKey(kind Kind, t Term, id string) []byte {
	k := make([]byte, 0, 4+len(t.Field)+len(t.Value)+len(id))
	k = append(k, prefixTerm, byte(kind))
	k = append(k, t.Field...)
	k = append(k, sep)
	k = append(k, t.Value...)
	k = append(k, sep)
	return append(k, id...)
}

// changeKey is prefix seq kind id: the document is in the key because one
// Commit gives all its documents the same seq.
func changeKey(seq uint64, kind Kind, id string) []byte {
	k := make([]byte, 0, changeKindAt+1+len(id))
	k = append(k, prefixChange)
	k = binary.BigEndian.AppendUint64(k, seq)
	k = append(k, byte(kind))
	return append(k, id...)
}

// changeKindAt is the offset of the kind in a change key.
const changeKindAt = 1 + 8

// seqKey is the smallest change key of seq.
func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixChange}, seq)
}

func digestKey(bucket byte) []byte { return []byte{prefixDigest, bucket} }

func localKey(key string) []byte { return append([]byte{prefixLocal}, key...) }

// prefixOptions bounds an iterator to the keys starting with prefix.
func prefixOptions(prefix []byte) *pebble.IterOptions {
	return &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)}
}

// prefixEnd is the smallest key greater than every key starting with
// prefix, or nil if there is none.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
