package storage

import (
	"slices"
	"testing"
)

// A record marked new (NoneAt) is stored as new only while no other
// commit was applied since the caller found it absent; otherwise its
// previous version is read and replaced as usual.
func TestNoneAt(t *testing.T) {
	s := openMem(t)
	n := s.Applied()
	fresh := memory("a", "v1", Term{"tag", "x"})
	fresh.NoneAt = n
	commit(t, s, fresh)
	if got := scanIDs(t, s, KindMemory, Term{"tag", "x"}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Scan tag=x = %v, want [a]", got)
	}
	if s.Applied() != n+1 {
		t.Errorf("Applied = %d after one commit from %d", s.Applied(), n)
	}

	// b is found absent, then a commit stores it before the caller's.
	n = s.Applied()
	commit(t, s, memory("b", "v1", Term{"tag", "old"}))
	stale := memory("b", "v2", Term{"tag", "new"})
	stale.NoneAt = n
	commit(t, s, stale)
	if got := scanIDs(t, s, KindMemory, Term{"tag", "old"}); len(got) != 0 {
		t.Errorf("Scan tag=old = %v: the replaced version's term is left", got)
	}
	recs, _ := changes(t, s, 0, 0)
	if got := ids(recs); !slices.Equal(got, []string{"m/a", "m/b"}) {
		t.Errorf("Changes = %v, want [m/a m/b]", got)
	}
	if digest(t, s) != digestFromScratch(t, s) {
		t.Error("digest differs from the one computed from the stored records")
	}
}
