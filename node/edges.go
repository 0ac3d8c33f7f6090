package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/rules"
	"github.com/memmesh/memmesh/storage"
)

// Limits on edges and traversals.
const (
	maxRelLen      = 64 // bytes of a relation or an origin
	maxEndpointLen = 1024
	maxNotesLen    = 64 << 10 // bytes of an edge's notes
	maxDepth       = 5
	maxTraversed   = 1000 // nodes a traversal returns at most
)

var relRE = regexp.MustCompile(`^[a-z][a-z0-9]*([_-][a-z0-9]+)*$`)

// cyclePath returns the path to -> ... -> from along live edges of rel, if
// one exists: then from -rel-> to would close a cycle. The walk is
// breadth-first, so the path is a shortest one.
func (n *Node) cyclePath(from, rel, to string) ([]string, error) {
	now := n.now()
	parent := map[string]string{to: ""}
	queue := []string{to}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		if at == from {
			var path []string
			for p := at; p != ""; p = parent[p] {
				path = append(path, p)
			}
			slices.Reverse(path)
			return path, nil
		}
		edges, err := n.edgesOf(at, api.Out)
		if err != nil {
			return nil, err
		}
		for i := range edges {
			e := &edges[i]
			if _, seen := parent[e.To]; e.Rel == rel && validAt(e, now) && !seen {
				parent[e.To] = at
				queue = append(queue, e.To)
			}
		}
	}
	return nil, nil
}

// artefactPrefixes start endpoints that are not memories.
var artefactPrefixes = []string{"file:", "code:", "url:"}

func checkRel(rel string) (string, error) {
	rel = strings.TrimSpace(rel)
	if err := rules.CheckName("relation", rel, maxRelLen); err != nil {
		return "", err
	}
	if !relRE.MatchString(rel) {
		return "", api.Invalidf("relation %q: use kebab-case or snake_case, lower-case letters and digits (e.g. related_to, depends_on, supersedes)", rel)
	}
	return rel, nil
}

// checkOrigin checks how an edge was made, a name of the same syntax as a
// relation; "" is manual.
// checkNotes bounds an edge's notes and scrubs secrets from them.
func checkNotes(notes string) (string, error) {
	if len(notes) > maxNotesLen {
		return "", api.Invalidf("notes of %d bytes: at most %d are allowed", len(notes), maxNotesLen)
	}
	notes, _ = secrets.Scrub(strings.TrimSpace(notes))
	return notes, nil
}

func checkOrigin(origin string) (string, error) {
	origin = strings.TrimSpace(origin)
	if origin == "" {
		return "manual", nil
	}
	if err := rules.CheckName("origin", origin, maxRelLen); err != nil {
		return "", err
	}
	if !relRE.MatchString(origin) {
		return "", api.Invalidf("origin %q: use kebab-case or snake_case, lower-case letters and digits (e.g. manual, import)", origin)
	}
	return origin, nil
}

// endpoint checks an edge endpoint and returns it in canonical form: a
// memory reference becomes "m-" + its full id (the memory must exist), an
// artefact loses its secrets. Scrub gives the same text the same result
// on every machine, so the same edge made on two of them has the same id
// (a hash of its endpoints), and a lookup by the artefact as given finds it.
func (n *Node) endpoint(ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	for _, p := range artefactPrefixes {
		if strings.HasPrefix(ref, p) {
			if len(ref) == len(p) || len(ref) > maxEndpointLen || strings.ContainsAny(ref, "\x00\n") {
				return "", api.Invalidf("artefact %q: give a path, symbol or URL after %s (at most %d bytes, one line)", ref, p, maxEndpointLen)
			}
			ref, _ = secrets.Scrub(ref)
			return ref, nil
		}
	}
	id, err := n.resolve(ref)
	if err != nil {
		return "", fmt.Errorf("endpoint: %w (endpoints are memory ids or file:, code:, url: artefacts)", err)
	}
	return DisplayID(id), nil
}

// Link creates the edge From -Rel-> To, or updates and revives it when it
// exists: the same edge made on two machines is one edge.
func (n *Node) Link(ctx context.Context, req api.LinkRequest) (api.Edge, error) {
	rel, err := checkRel(req.Rel)
	if err != nil {
		return api.Edge{}, err
	}
	from, err := n.endpoint(req.From)
	if err != nil {
		return api.Edge{}, err
	}
	to, err := n.endpoint(req.To)
	if err != nil {
		return api.Edge{}, err
	}
	if from == to {
		return api.Edge{}, api.Invalidf("an edge needs two different endpoints")
	}
	strength := 1.0
	if req.Strength != nil {
		strength = *req.Strength
		if !(strength >= 0 && strength <= 1) {
			return api.Edge{}, api.Invalidf("strength %v: use a number from 0 to 1", strength)
		}
	}
	if !req.ValidFrom.IsZero() && !req.ValidTo.IsZero() && !req.ValidTo.After(req.ValidFrom) {
		return api.Edge{}, api.Invalidf("valid_to must be after valid_from")
	}
	notes, err := checkNotes(req.Notes)
	if err != nil {
		return api.Edge{}, err
	}
	origin, err := checkOrigin(req.Origin)
	if err != nil {
		return api.Edge{}, err
	}
	now := n.now().UTC()
	id := crdt.EdgeID(from, rel, to)

	unlock, err := n.lockEdge(id, from, to)
	if err != nil {
		return api.Edge{}, err
	}
	defer unlock()
	if slices.Contains(api.AcyclicRelations, rel) {
		// One check-and-insert at a time, so that two local links cannot
		// close a cycle together.
		n.acyclicMu.Lock()
		defer n.acyclicMu.Unlock()
		path, err := n.cyclePath(from, rel, to)
		if err != nil {
			return api.Edge{}, err
		}
		if path != nil {
			return api.Edge{}, api.Invalidf("%s %s %s would close a cycle, since %s already holds: %s edges may not form one",
				from, rel, to, strings.Join(path, " -"+rel+"-> "), rel)
		}
	}
	data, err := n.store.GetDoc(storage.KindEdge, id)
	var doc *crdt.EdgeDoc
	switch {
	case errors.Is(err, storage.ErrNotFound):
		doc, err = crdt.NewEdgeDoc(n.actor, &model.Edge{
			ID: id, From: from, Rel: rel, To: to, Notes: notes, Strength: strength, Origin: origin,
			ValidFrom: req.ValidFrom, ValidTo: req.ValidTo, CreatedAt: now, UpdatedAt: now,
		})
	case err == nil:
		doc, err = crdt.LoadEdgeDoc(n.actor, data)
		if err == nil {
			err = errors.Join(doc.SetNotes(notes), doc.SetStrength(strength), doc.SetValidity(req.ValidFrom, req.ValidTo),
				doc.SetDeleted(false), doc.SetUpdated(now), doc.Commit("link"))
		}
	}
	if err != nil {
		if doc != nil {
			doc.Close()
		}
		return api.Edge{}, fmt.Errorf("link %s %s %s: %w", from, rel, to, err)
	}
	defer doc.Close()
	return n.commitEdge(unlock, doc)
}

// Unlink deletes the edge From -Rel-> To. The tombstone replicates.
func (n *Node) Unlink(ctx context.Context, from, rel, to string) (api.Edge, error) {
	return n.editEdge(from, rel, to, func(doc *crdt.EdgeDoc, e *model.Edge) error {
		if e.Deleted {
			return errUnchanged
		}
		return doc.SetDeleted(true)
	})
}

// Invalidate ends an edge's validity at now without deleting it: the edge
// stays as history, and traversals as of earlier times still follow it.
func (n *Node) Invalidate(ctx context.Context, from, rel, to string) (api.Edge, error) {
	return n.editEdge(from, rel, to, func(doc *crdt.EdgeDoc, e *model.Edge) error {
		return doc.SetValidity(e.ValidFrom, n.now().UTC())
	})
}

func (n *Node) editEdge(fromRef, relName, toRef string, change func(*crdt.EdgeDoc, *model.Edge) error) (api.Edge, error) {
	rel, err := checkRel(relName)
	if err != nil {
		return api.Edge{}, err
	}
	from, err := n.endpoint(fromRef)
	if err != nil {
		return api.Edge{}, err
	}
	to, err := n.endpoint(toRef)
	if err != nil {
		return api.Edge{}, err
	}
	id := crdt.EdgeID(from, rel, to)
	unlock, err := n.lockEdge(id, from, to)
	if err != nil {
		return api.Edge{}, err
	}
	defer unlock()
	e, err := n.loadEdge(id)
	if errors.Is(err, storage.ErrNotFound) {
		return api.Edge{}, fmt.Errorf("%w: there is no edge %s %s %s", api.ErrNotFound, from, rel, to)
	} else if err != nil {
		return api.Edge{}, err
	}
	data, err := n.store.GetDoc(storage.KindEdge, id)
	if err != nil {
		return api.Edge{}, fmt.Errorf("read edge: %w", err)
	}
	doc, err := crdt.LoadEdgeDoc(n.actor, data)
	if err != nil {
		return api.Edge{}, fmt.Errorf("load edge: %w", err)
	}
	defer doc.Close()
	if err := change(doc, &e); errors.Is(err, errUnchanged) {
		return api.Edge{Edge: e}, nil
	} else if err != nil {
		return api.Edge{}, err
	}
	if err := errors.Join(doc.SetUpdated(n.now().UTC()), doc.Commit("edit edge")); err != nil {
		return api.Edge{}, err
	}
	return n.commitEdge(unlock, doc)
}

// lockEdge takes the locks of an edge and of its memory endpoints, so
// that no edge is written at a memory being purged (Purge erases the
// memory's edges under its lock), and checks that neither endpoint was
// purged meanwhile.
func (n *Node) lockEdge(id, from, to string) (unlock func(), err error) {
	locks := append([]string{id}, memoryEnds(from, to)...)
	unlock = n.lockAll(locks)
	for _, mid := range locks[1:] {
		if err := n.purgedMemory(mid); err != nil {
			unlock()
			return nil, err
		}
	}
	return unlock, nil
}

// memoryEnds returns the memory ids among an edge's endpoints.
func memoryEnds(ends ...string) []string {
	var out []string
	for _, end := range ends {
		if mid, ok := strings.CutPrefix(end, IDPrefix); ok {
			out = append(out, mid)
		}
	}
	return out
}

// commitEdge stores an edge document with its adjacency terms; unlock
// (lockEdge's) runs once the batch is applied (commitUnlock).
func (n *Node) commitEdge(unlock func(), doc *crdt.EdgeDoc) (api.Edge, error) {
	e, err := doc.Materialize()
	if err != nil {
		return api.Edge{}, fmt.Errorf("materialise edge: %w", err)
	}
	rec, err := edgeRecord(&e, doc.Save())
	if err != nil {
		return api.Edge{}, err
	}
	if err := n.commitUnlock(unlock, rec); err != nil {
		return api.Edge{}, writeFailed("store edge", err)
	}
	n.changed()
	return api.Edge{Edge: e}, nil
}

// newEdgeRecord creates the document of a new edge and returns its record
// to commit, with the edge as stored.
func newEdgeRecord(actor string, e *model.Edge) (storage.Record, api.Edge, error) {
	doc, err := crdt.NewEdgeDoc(actor, e)
	if err != nil {
		return storage.Record{}, api.Edge{}, err
	}
	defer doc.Close()
	stored, err := doc.Materialize()
	if err != nil {
		return storage.Record{}, api.Edge{}, fmt.Errorf("materialise edge: %w", err)
	}
	rec, err := edgeRecord(&stored, doc.Save())
	return rec, api.Edge{Edge: stored}, err
}

// edgeRecord builds the storage record of an edge: its materialised JSON
// and, while it is live, its adjacency terms.
func edgeRecord(e *model.Edge, doc []byte) (storage.Record, error) {
	value, err := json.Marshal(e)
	if err != nil {
		return storage.Record{}, fmt.Errorf("encode edge: %w", err)
	}
	rec := storage.Record{Kind: storage.KindEdge, ID: e.ID, Heads: e.Heads, Value: value, Doc: doc}
	if !e.Deleted {
		rec.Terms = []storage.Term{{Field: "from", Value: e.From}, {Field: "to", Value: e.To}, {Field: "rel", Value: e.Rel}}
	}
	return rec, nil
}

func (n *Node) loadEdge(id string) (model.Edge, error) {
	rec, err := n.store.Get(storage.KindEdge, id)
	if err != nil {
		return model.Edge{}, err
	}
	var e model.Edge
	if err := json.Unmarshal(rec.Value, &e); err != nil {
		return model.Edge{}, fmt.Errorf("decode edge %s: %w", id, err)
	}
	return e, nil
}

// edgesOf returns the live edges at an endpoint in one direction.
func (n *Node) edgesOf(endpoint string, dir api.Direction) ([]model.Edge, error) {
	var out []model.Edge
	fields := map[api.Direction][]string{api.Out: {"from"}, api.In: {"to"}, api.Both: {"from", "to"}}[dir]
	for _, field := range fields {
		err := n.store.Scan(storage.KindEdge, storage.Term{Field: field, Value: endpoint}, func(id string) error {
			e, err := n.loadEdge(id)
			if err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("edges of %s: %w", endpoint, err)
		}
	}
	return out, nil
}

// OriginExtracted marks the touches edges a traversal derives from the
// files, symbols and URLs a memory's text mentions. They are not stored:
// every node derives the same ones from the same text.
const OriginExtracted = "extracted"

// touchEdges returns the derived touches edges at an endpoint: out of a
// memory to the artefacts it mentions, into an artefact from the memories
// that mention it (at most limit of them).
func (n *Node) touchEdges(endpoint string, dir api.Direction, limit int) ([]model.Edge, error) {
	touch := func(m *model.Memory, artefact string) model.Edge {
		from := DisplayID(m.ID)
		return model.Edge{ID: crdt.EdgeID(from, "touches", artefact), From: from, Rel: "touches", To: artefact,
			Strength: 0.5, Origin: OriginExtracted, CreatedAt: m.Provenance.CreatedAt, UpdatedAt: m.Provenance.UpdatedAt}
	}
	var out []model.Edge
	if id, ok := strings.CutPrefix(endpoint, IDPrefix); ok {
		if dir == api.In {
			return nil, nil
		}
		m, err := n.load(id)
		if storageNotFound(err) {
			return nil, nil
		}
		if err != nil || m.Status == model.StatusDeleted {
			return nil, err
		}
		for _, t := range m.Touches {
			if slices.ContainsFunc(artefactPrefixes, func(p string) bool { return strings.HasPrefix(t, p) }) {
				out = append(out, touch(&m, t))
			}
		}
		return out, nil
	}
	if dir == api.Out {
		return nil, nil
	}
	err := n.store.Scan(storage.KindMemory, storage.Term{Field: "touch", Value: endpoint}, func(id string) error {
		if len(out) == limit {
			return errStop
		}
		m, err := n.load(id)
		if err != nil || m.Status == model.StatusDeleted {
			return err
		}
		out = append(out, touch(&m, endpoint))
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return out, err
}

// maxEdgeEndpoints caps the endpoints of one Edges call.
const maxEdgeEndpoints = 10_000

// Edges returns the live (not deleted) edges that start (out), end (in) or
// either (both) at any of the endpoints, each once. It reads no memory.
func (n *Node) Edges(ctx context.Context, req api.EdgesRequest) ([]api.Edge, error) {
	dir := req.Direction
	if dir == "" {
		dir = api.Both
	}
	if dir != api.Out && dir != api.In && dir != api.Both {
		return nil, api.Invalidf("direction %q: use out, in or both", req.Direction)
	}
	if len(req.Endpoints) > maxEdgeEndpoints {
		return nil, api.Invalidf("%d endpoints: at most %d per call", len(req.Endpoints), maxEdgeEndpoints)
	}
	out := []api.Edge{}
	seen := map[string]bool{}
	for _, ref := range req.Endpoints {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		at, err := n.endpoint(ref)
		if err != nil {
			return nil, err
		}
		edges, err := n.edgesOf(at, dir)
		if err != nil {
			return nil, err
		}
		for _, e := range edges {
			if !e.Deleted && !seen[e.ID] {
				seen[e.ID] = true
				out = append(out, api.Edge{Edge: e})
			}
		}
	}
	return out, nil
}

// validAt reports whether an edge holds at t.
func validAt(e *model.Edge, t time.Time) bool {
	return !e.Deleted && (e.ValidFrom.IsZero() || !t.Before(e.ValidFrom)) && (e.ValidTo.IsZero() || t.Before(e.ValidTo))
}

// Traverse walks the graph breadth-first from req.Start.
func (n *Node) Traverse(ctx context.Context, req api.TraverseRequest) (api.TraverseResult, error) {
	start, err := n.endpoint(req.Start)
	if err != nil {
		return api.TraverseResult{}, err
	}
	depth := req.Depth
	if depth == 0 {
		depth = 1
	}
	if depth < 0 || depth > maxDepth {
		return api.TraverseResult{}, api.Invalidf("depth %d: use 1 to %d", req.Depth, maxDepth)
	}
	dir := req.Direction
	if dir == "" {
		dir = api.Both
	}
	if dir != api.Out && dir != api.In && dir != api.Both {
		return api.TraverseResult{}, api.Invalidf("direction %q: use out, in or both", req.Direction)
	}
	for _, r := range req.Rels {
		if _, err := checkRel(r); err != nil {
			return api.TraverseResult{}, err
		}
	}
	asOf := req.AsOf
	if asOf.IsZero() {
		asOf = n.now()
	}

	res := api.TraverseResult{Nodes: []api.GraphNode{}, Edges: []api.Edge{}}
	seen := map[string]bool{start: true}
	seenEdge := map[string]bool{}
	frontier := []string{start}
	if err := n.addGraphNode(&res, start, 0); err != nil {
		return res, err
	}
	for d := 1; d <= depth && len(frontier) > 0 && len(res.Nodes) < maxTraversed; d++ {
		var next []string
		for _, at := range frontier {
			edges, err := n.edgesOf(at, dir)
			if err != nil {
				return res, err
			}
			// An artefact that many memories mention gives only as many
			// as the traversal can still take.
			touches, err := n.touchEdges(at, dir, maxTraversed-len(res.Nodes))
			if err != nil {
				return res, err
			}
			defined, err := n.symbolEdges(at, dir)
			if err != nil {
				return res, err
			}
			for _, e := range slices.Concat(edges, touches, defined) {
				if !validAt(&e, asOf) || (len(req.Rels) > 0 && !slices.Contains(req.Rels, e.Rel)) || seenEdge[e.ID] {
					continue
				}
				seenEdge[e.ID] = true
				res.Edges = append(res.Edges, api.Edge{Edge: e})
				other := e.To
				if other == at {
					other = e.From
				}
				if seen[other] || len(res.Nodes) >= maxTraversed {
					continue
				}
				seen[other] = true
				if err := n.addGraphNode(&res, other, d); err != nil {
					return res, err
				}
				next = append(next, other)
			}
		}
		frontier = next
	}
	return res, nil
}

// addGraphNode appends a reached node, with its memory when it is one.
// Archived memories stay visible as traces; deleted ones too, marked so.
func (n *Node) addGraphNode(res *api.TraverseResult, endpoint string, depth int) error {
	gn := api.GraphNode{ID: endpoint, Depth: depth}
	if id, ok := strings.CutPrefix(endpoint, IDPrefix); ok {
		m, err := n.load(id)
		if err != nil && !storageNotFound(err) {
			return err
		}
		if err == nil {
			v := n.view(m)
			gn.Memory = &v
		}
	}
	res.Nodes = append(res.Nodes, gn)
	return nil
}
