package storage

import (
	"crypto/sha256"
	"fmt"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Digest returns the 256 anti-entropy buckets. Two stores holding the same
// documents with the same heads have equal digests, whatever the order of
// their commits; a bucket that differs names the documents to compare.
// It reads nothing: the store keeps the digest in memory, brought up to
// date by every commit as it is applied (and it holds every commit
// applied before Applied last moved).
func (s *Store) Digest() ([256][32]byte, error) {
	if err := s.enter(); err != nil {
		return [256][32]byte{}, err
	}
	defer s.leave()
	s.digestMu.Lock()
	defer s.digestMu.Unlock()
	return s.digest, nil
}

// loadDigest reads the digest's buckets from the database, where each is
// the merge of its commits' shares. Callers own the store or hold dbMu.
func (s *Store) loadDigest() error {
	var d [256][32]byte
	err := forEach(s.db, "digest", prefixOptions([]byte{prefixDigest}), func(k, v []byte) error {
		if len(k) != 2 || len(v) != sha256.Size {
			return fmt.Errorf("storage: digest: corrupt bucket %x", k)
		}
		copy(d[k[1]][:], v)
		return nil
	})
	if err != nil {
		return err
	}
	s.digestMu.Lock()
	s.digest = d
	s.digestMu.Unlock()
	return nil
}

// share is a change of one digest bucket: the XOR of a document's
// previous and new shares.
type share struct {
	bucket byte
	xor    [sha256.Size]byte
}

// addShares applies a commit's shares to the digest kept in memory.
func (s *Store) addShares(shares []share) {
	s.digestMu.Lock()
	defer s.digestMu.Unlock()
	for _, sh := range shares {
		b := &s.digest[sh.bucket]
		for i := range b {
			b[i] ^= sh.xor[i]
		}
	}
}

// Bucket is the digest bucket of a document: sha256(kind id)[0].
func Bucket(kind Kind, id string) byte {
	h := sha256.New()
	h.Write([]byte{byte(kind)})
	h.Write([]byte(id))
	return h.Sum(nil)[0]
}

// DocHash is a document's share of its bucket:
// sha256(kind id {0x00 head}) over the heads sorted.
func DocHash(kind Kind, id string, heads []string) [sha256.Size]byte {
	sorted := slices.Sorted(slices.Values(heads))
	h := sha256.New()
	h.Write([]byte{byte(kind)})
	h.Write([]byte(id))
	for _, head := range sorted {
		h.Write([]byte{sep})
		h.Write([]byte(head))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// digestMerger XORs the 32-byte operands merged into a digest bucket.
// XOR is associative and commutative, so operands from concurrent Commits
// combine correctly in any order. Its name is stored in the database and
// must never change.
var digestMerger = &pebble.Merger{
	Name: "memmesh.digest.xor256",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &xorMerger{}
		return m, m.xor(value)
	},
}

type xorMerger struct{ sum [sha256.Size]byte }

func (m *xorMerger) xor(v []byte) error {
	if len(v) != len(m.sum) {
		return fmt.Errorf("storage: digest operand of %d bytes, want %d", len(v), len(m.sum))
	}
	for i := range m.sum {
		m.sum[i] ^= v[i]
	}
	return nil
}

func (m *xorMerger) MergeNewer(v []byte) error { return m.xor(v) }
func (m *xorMerger) MergeOlder(v []byte) error { return m.xor(v) }

func (m *xorMerger) Finish(bool) ([]byte, io.Closer, error) {
	return slices.Clone(m.sum[:]), nil, nil
}
