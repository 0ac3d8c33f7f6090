package node

import (
	"fmt"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/rules"
	"github.com/memmesh/memmesh/storage"
)

// leavesLocal reports whether a move from namespace from to namespace to
// takes a memory out of a local-only namespace into one that syncs.
func (n *Node) leavesLocal(from, to string) bool {
	return from != to && n.namespaceSettings(from).Sync == model.SyncLocal && n.namespaceSettings(to).Sync != model.SyncLocal
}

// A memory's document carries its whole history: every revision of its
// text, and every earlier value of its fields in Automerge's changes. In a
// local-only namespace that history never leaves the machine; moved as it
// is into a namespace that syncs, it would reach every peer, the revisions
// written while it was private included. So a move out of a local-only
// namespace makes a new memory instead, with a new id and a history that
// starts at the move (its current text, fields and creation time), and
// purges the old one (its tombstone replicates, as for any purge). Its
// edges are made again at the new id, new too. The result names the old id
// (Memory.Replaces).
//
// moveOutOfLocal applies req to memory id (opened as doc and m, under its
// lock, which release frees), which it moves out of a local-only
// namespace, as a new memory.
func (n *Node) moveOutOfLocal(id string, doc *crdt.MemoryDoc, m *model.Memory, release func(), req api.UpdateRequest) (api.Memory, error) {
	if err := n.applyUpdate(doc, m, req); err != nil {
		return api.Memory{}, err
	}
	moved, err := doc.Materialize()
	if err != nil {
		return api.Memory{}, fmt.Errorf("materialise memory: %w", err)
	}
	now := n.now().UTC()
	agent, _, _ := rules.CheckLabel("agent", req.Agent) // applyUpdate checked it
	moved.ID = crdt.NewID()
	moved.Revisions = []model.Revision{{ID: crdt.NewID(), Text: moved.Content, Device: n.id.DeviceID, Agent: agent, At: now}}
	moved.Conflict, moved.Heads = nil, nil
	moved.Provenance.UpdatedAt = now
	fresh, err := crdt.NewMemoryDoc(n.actor, &moved)
	if err != nil {
		return api.Memory{}, fmt.Errorf("create memory: %w", err)
	}
	defer fresh.Close()

	edges, err := n.edgesOf(DisplayID(id), api.Both)
	if err != nil {
		return api.Memory{}, err
	}
	var extra []storage.Record
	for _, e := range edges {
		e.From, e.To = swapEnd(e.From, id, moved.ID), swapEnd(e.To, id, moved.ID)
		e.ID, e.Heads = crdt.EdgeID(e.From, e.Rel, e.To), nil
		rec, _, err := newEdgeRecord(n.actor, &e)
		if err != nil {
			return api.Memory{}, fmt.Errorf("move edge %s: %w", e.ID, err)
		}
		extra = append(extra, rec)
	}
	purge, _, err := n.tombstoneRecords(crdt.NewTombstone(id, now, n.id.DeviceID))
	if err != nil {
		return api.Memory{}, err
	}
	if err := n.commit(release, fresh, nil, append(extra, purge...)...); err != nil {
		return api.Memory{}, err
	}
	signal(n.expungeWake)
	n.life.moveReads(id, moved.ID)
	stored, err := n.load(moved.ID)
	if err != nil {
		return api.Memory{}, err
	}
	v := n.view(stored)
	v.Replaces = DisplayID(id)
	return v, nil
}

// swapEnd is end with memory id old replaced by id new.
func swapEnd(end, old, new string) string {
	if end == DisplayID(old) {
		return DisplayID(new)
	}
	return end
}
