package sessions

import (
	"context"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// oneMemory is the node's memories as strengthen sees them: one memory,
// and the updates asked of it.
type oneMemory struct {
	Memories // the rest is not called
	m        api.Memory
	updates  []api.UpdateRequest
}

func (o *oneMemory) Peek(string) (api.Memory, error) { return o.m, nil }

func (o *oneMemory) Update(_ context.Context, _ string, req api.UpdateRequest) (api.Memory, error) {
	o.updates = append(o.updates, req)
	return o.m, nil
}

// TestRepeatNeverLowersConfidence: a lesson that repeats a memory already
// above the strength a repeat can give leaves its confidence as it was.
func TestRepeatNeverLowersConfidence(t *testing.T) {
	mem := &oneMemory{m: api.Memory{ID: "m-pnpm", Memory: model.Memory{ID: "pnpm", Confidence: 0.99, Tier: model.TierAgent}}}
	ss := New(nil, mem, nil, "device", nil, nil)
	if err := ss.strengthen(context.Background(), "pnpm"); err != nil {
		t.Fatal(err)
	}
	if len(mem.updates) != 1 || mem.updates[0].Confidence == nil || *mem.updates[0].Confidence != 0.99 {
		t.Fatalf("a repeat asked for %+v; want the confidence kept at 0.99", mem.updates)
	}
}
