package node

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
)

// The indexer indexes a memory a peer's commit handed over instead of
// reading its record back: the two must be the same memory, whatever
// the document holds (tags, touches, expiry, confirmation, revisions,
// a sync conflict).
func TestHandedOverMemoryEqualsItsRecord(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 50 {
		m := &model.Memory{
			ID:         crdt.NewIDFrom(r),
			Namespace:  "ns",
			Title:      fmt.Sprintf("title %d", i),
			Content:    fmt.Sprintf("content %d with a question? %d", i, r.Intn(1000)),
			Kind:       "fact",
			Tier:       model.TierAgent,
			Confidence: r.Float64(),
			Status:     model.StatusActive,
			Evergreen:  r.Intn(2) == 0,
			Provenance: model.Provenance{Device: "dev-a", Agent: "agent", Session: "s", CreatedAt: at, UpdatedAt: at},
		}
		if r.Intn(2) == 0 {
			m.Tags = []string{"b", "a"}
			m.Touches = []string{"src/x.go"}
			m.ExpiresAt = at.Add(time.Duration(r.Intn(1000)) * time.Hour)
		}
		doc, err := crdt.NewMemoryDoc(crdt.ActorID("dev-a"), m)
		if err != nil {
			t.Fatal(err)
		}
		if r.Intn(2) == 0 {
			if _, err := doc.AppendRevision("edited", "dev-a", "agent-a", at.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := doc.SetConfirmed(at.Add(time.Hour), "person"); err != nil {
				t.Fatal(err)
			}
		}
		if r.Intn(3) == 0 {
			other, err := doc.Fork(crdt.ActorID("dev-b"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.AppendRevision("theirs", "dev-b", "", at.Add(2*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if _, err := doc.AppendRevision("ours", "dev-a", "agent-a", at.Add(2*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := doc.Merge(other); err != nil {
				t.Fatal(err)
			}
			other.Close()
		}
		handed, err := doc.Materialize()
		doc.Close()
		if err != nil {
			t.Fatal(err)
		}
		rec, err := memoryRecord(&handed, nil)
		if err != nil {
			t.Fatal(err)
		}
		var back model.Memory
		if err := json.Unmarshal(rec.Value, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(handed, back) {
			t.Fatalf("memory %d: handed over\n%+v\nread back\n%+v", i, handed, back)
		}
	}
}
