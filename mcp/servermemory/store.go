package servermemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// The server-memory profile's graph, kept in memory.
//
// The official server reads its whole file on every call; reading and
// decoding every entity of the namespace from the node on every call made
// memmesh 10 to 50 times slower. The store keeps a snapshot of the graph
// instead: its entity memories and the edges at them, read once, then
// brought up to date before each call from the node's change log
// (node.Changes: what this process, other processes and other machines
// committed since). Reads are answered from the snapshot; changes go to
// the node and reach the snapshot through the change log like any other.
//
// A relation the node cannot hold as an edge between two entity memories
// (to or from an entity that does not exist, or from an entity to itself,
// as the official server stores them) has a reference memory at the end
// that is missing: kind serverMemoryRefKind, content `reference: "NAME"`.
// A reference shows as no entity; relations resolve to names, so a
// relation to a reference of "Ghost" is a relation to the entity Ghost once
// it is created, and deleting Ghost deletes it. A reference that no
// relation uses any more is deleted.

// serverMemoryRefKind is the kind of a reference memory.
const serverMemoryRefKind = "entity-ref"

// serverMemoryStore keeps the knowledge graph in one namespace of a node.
type serverMemoryStore struct {
	svc  Service
	ns   string
	page int // memories listed at once

	mu   sync.Mutex            // one call at a time: the snapshot is brought up to date, then read or changed
	snap *serverMemorySnapshot // nil until read
	last time.Time             // creation time of the newest entity made here
}

func newServerMemoryStore(svc Service, ns string) *serverMemoryStore {
	return &serverMemoryStore{svc: svc, ns: ns, page: serverMemoryPageSize}
}

// serverMemorySnapshot is the graph as the node held it at a position of
// its change log.
type serverMemorySnapshot struct {
	seq      uint64                        // the change-log position it reflects
	entities []*serverMemoryEntry          // the entries with an entity memory, in the order they were created
	sorted   bool                          // entities is in order
	byName   map[string]*serverMemoryEntry // entries, with an entity memory or a reference
	byID     map[string]*serverMemoryPart  // every memory of the graph by id
	edges    map[string]api.Edge           // live edges at memories of the graph, by edge id
	edgesAt  map[string][]string           // the ids of the edges in edges, by endpoint
}

// serverMemoryEntry is one name of the graph: the memories that hold its
// entity (one, or several when devices created it before they synced,
// the oldest first) and its references.
type serverMemoryEntry struct {
	name  string
	pos   int // index in the snapshot's entities when they were last sorted
	parts []*serverMemoryPart
	refs  []*serverMemoryPart
	view  *Entity  // the entity as the graph shows it; nil when it must be worked out again
	lower []string // name, type and observations in lower case, for search_nodes
}

// serverMemoryPart is one memory of the graph.
type serverMemoryPart struct {
	id           string
	entry        *serverMemoryEntry
	ref          bool
	created      time.Time
	content      string
	entityType   string
	observations []string
}

func newServerMemorySnapshot() *serverMemorySnapshot {
	return &serverMemorySnapshot{
		byName: map[string]*serverMemoryEntry{}, byID: map[string]*serverMemoryPart{},
		edges: map[string]api.Edge{}, edgesAt: map[string][]string{},
	}
}

// serverMemoryReference is the content of the reference memory of a name.
func serverMemoryReference(name string) string {
	return "reference: " + serverMemoryQuote(name) + "\n"
}

// serverMemoryRefName reads the name of a reference memory.
func serverMemoryRefName(content, title string) string {
	if v, ok := serverMemoryLine(strings.TrimSuffix(content, "\n"), "reference"); ok {
		return serverMemoryUnquote(v)
	}
	return title
}

// wanted reports whether a memory belongs to the graph of ns.
func (s *serverMemoryStore) wanted(m *api.Memory) bool {
	return m.Namespace == s.ns && (m.Kind == serverMemoryKind || m.Kind == serverMemoryRefKind) &&
		(m.Status == model.StatusActive || m.Status == model.StatusStale) && !m.Expired(time.Now())
}

// put records the current version of a memory of the graph; it reports
// whether the memory is new to the snapshot.
func (snap *serverMemorySnapshot) put(m *api.Memory) bool {
	old := snap.byID[m.ID]
	p := &serverMemoryPart{id: m.ID, ref: m.Kind == serverMemoryRefKind, created: m.Provenance.CreatedAt, content: m.Content}
	name := serverMemoryRefName(m.Content, m.Title)
	if !p.ref {
		e := serverMemoryDecode(m.Content, m.Title)
		name, p.entityType, p.observations = e.Name, e.EntityType, e.Observations
	}
	if old != nil {
		if old.ref == p.ref && old.entry.name == name {
			old.content, old.entityType, old.observations = p.content, p.entityType, p.observations
			old.entry.view = nil
			return false
		}
		snap.remove(m.ID)
	}
	entry := snap.byName[name]
	if entry == nil {
		entry = &serverMemoryEntry{name: name}
		snap.byName[name] = entry
	}
	p.entry = entry
	snap.byID[m.ID] = p
	older := func(a, b *serverMemoryPart) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.id, b.id))
	}
	if p.ref {
		entry.refs = append(entry.refs, p)
		slices.SortFunc(entry.refs, older)
		return old == nil
	}
	if len(entry.parts) == 0 {
		snap.entities = append(snap.entities, entry)
	}
	entry.parts = append(entry.parts, p)
	slices.SortFunc(entry.parts, older)
	entry.view, snap.sorted = nil, false
	return old == nil
}

// remove forgets a memory; an entry left with none is forgotten too.
func (snap *serverMemorySnapshot) remove(id string) {
	p := snap.byID[id]
	if p == nil {
		return
	}
	delete(snap.byID, id)
	entry := p.entry
	if p.ref {
		entry.refs = slices.DeleteFunc(entry.refs, func(q *serverMemoryPart) bool { return q == p })
	} else {
		entry.parts = slices.DeleteFunc(entry.parts, func(q *serverMemoryPart) bool { return q == p })
		entry.view = nil
		if len(entry.parts) == 0 {
			snap.entities = slices.DeleteFunc(snap.entities, func(e *serverMemoryEntry) bool { return e == entry })
		}
	}
	if len(entry.parts) == 0 && len(entry.refs) == 0 {
		delete(snap.byName, entry.name)
	}
}

// putEdge records an edge at a memory of the graph, or forgets a deleted one.
func (snap *serverMemorySnapshot) putEdge(e api.Edge) {
	_, known := snap.edges[e.ID]
	switch {
	case e.Deleted:
		snap.dropEdge(e)
	case known:
		snap.edges[e.ID] = e
	case snap.byID[e.From] != nil || snap.byID[e.To] != nil:
		snap.edges[e.ID] = e
		// An edge's id hashes its endpoints: they never change.
		snap.edgesAt[e.From] = append(snap.edgesAt[e.From], e.ID)
		snap.edgesAt[e.To] = append(snap.edgesAt[e.To], e.ID)
	}
}

// dropEdge forgets an edge (known by its id: an erased one comes with
// nothing else).
func (snap *serverMemorySnapshot) dropEdge(e api.Edge) {
	e, ok := snap.edges[e.ID]
	if !ok {
		return
	}
	delete(snap.edges, e.ID)
	for _, at := range []string{e.From, e.To} {
		snap.edgesAt[at] = slices.DeleteFunc(snap.edgesAt[at], func(id string) bool { return id == e.ID })
		if len(snap.edgesAt[at]) == 0 {
			delete(snap.edgesAt, at)
		}
	}
}

// sync brings the snapshot up to date with the node and returns it.
func (s *serverMemoryStore) sync(ctx context.Context) (*serverMemorySnapshot, error) {
	if s.snap == nil {
		if err := s.reload(ctx); err != nil {
			return nil, err
		}
	}
	for {
		res, err := s.svc.Changes(ctx, api.ChangesRequest{After: s.snap.seq, Namespace: s.ns})
		if err != nil {
			return nil, fmt.Errorf("changes of the graph: %w", err)
		}
		if res.Reset {
			s.snap = nil
			return s.sync(ctx)
		}
		var fresh []string
		for i := range res.Memories {
			m := &res.Memories[i]
			if !s.wanted(m) {
				s.snap.remove(m.ID)
			} else if s.snap.put(m) {
				fresh = append(fresh, m.ID)
			}
		}
		for _, id := range slices.Concat(res.Elsewhere, res.Purged) {
			s.snap.remove(id)
		}
		for _, e := range res.Edges {
			s.snap.putEdge(e)
		}
		// Edges made before a memory joined the graph (a memory moved
		// into the namespace, or restored) are not among the changes.
		if err := s.readEdges(ctx, fresh); err != nil {
			return nil, err
		}
		s.snap.seq = res.Next
		if !res.More {
			return s.snap, nil
		}
	}
}

// reload reads the whole graph: the change-log position first, so that
// what changes while it reads is applied again by sync.
func (s *serverMemoryStore) reload(ctx context.Context) error {
	pos, err := s.svc.Changes(ctx, api.ChangesRequest{After: ^uint64(0), Namespace: s.ns})
	if err != nil {
		return fmt.Errorf("changes of the graph: %w", err)
	}
	s.snap = newServerMemorySnapshot()
	s.snap.seq = pos.Next
	var ids []string
	for _, kind := range []string{serverMemoryKind, serverMemoryRefKind} {
		mems, err := s.memories(ctx, kind)
		if err != nil {
			s.snap = nil
			return err
		}
		for i := range mems {
			if s.wanted(&mems[i]) {
				s.snap.put(&mems[i])
				ids = append(ids, mems[i].ID)
			}
		}
	}
	if err := s.readEdges(ctx, ids); err != nil {
		s.snap = nil
		return err
	}
	return nil
}

// readEdges adds the live edges at memories of the graph.
func (s *serverMemoryStore) readEdges(ctx context.Context, ids []string) error {
	for chunk := range slices.Chunk(ids, s.page) {
		edges, err := s.svc.Edges(ctx, api.EdgesRequest{Endpoints: chunk})
		if err != nil {
			return fmt.Errorf("relations: %w", err)
		}
		for _, e := range edges {
			s.snap.putEdge(e)
		}
	}
	return nil
}

// memories lists every memory of a kind of the namespace, a page at a
// time from the most recently updated.
func (s *serverMemoryStore) memories(ctx context.Context, kind string) ([]api.Memory, error) {
	var all []api.Memory
	seen := map[string]bool{}
	add := func(ms []api.Memory) {
		for _, m := range ms {
			if !seen[m.ID] {
				seen[m.ID] = true
				all = append(all, m)
			}
		}
	}
	list := func(since, until time.Time) ([]api.Memory, error) {
		ms, err := s.svc.List(ctx, api.ListRequest{Namespace: s.ns, Kind: kind, Since: since, Until: until, Limit: s.page})
		if err != nil {
			return nil, fmt.Errorf("list %s memories: %w", kind, err)
		}
		return ms, nil
	}
	var until time.Time
	for {
		page, err := list(time.Time{}, until)
		if err != nil {
			return nil, err
		}
		add(page)
		if len(page) < s.page {
			return all, nil
		}
		// The memories updated at the instant of the page's last one may
		// straddle the page's end: list them all before going on with
		// older ones.
		last := page[len(page)-1].Provenance.UpdatedAt
		same, err := list(last, last.Add(time.Nanosecond))
		if err != nil {
			return nil, err
		}
		if len(same) == s.page {
			return nil, fmt.Errorf("list %s memories: %d or more were updated at the same instant", kind, s.page)
		}
		add(same)
		until = last
	}
}

// entity is the entity as the graph shows it: the type and observations
// of its oldest memory, then the observations the others add.
func (e *serverMemoryEntry) entity() Entity {
	if e.view == nil {
		obs := slices.Clone(e.parts[0].observations)
		for _, p := range e.parts[1:] {
			for _, o := range p.observations {
				if !slices.Contains(obs, o) {
					obs = append(obs, o)
				}
			}
		}
		e.view = &Entity{Name: e.name, EntityType: e.parts[0].entityType, Observations: obs}
		e.lower = []string{strings.ToLower(e.name), strings.ToLower(e.view.EntityType)}
		for _, o := range obs {
			e.lower = append(e.lower, strings.ToLower(o))
		}
	}
	return *e.view
}

// list returns the entities in the order they were created.
func (snap *serverMemorySnapshot) list() []*serverMemoryEntry {
	if !snap.sorted {
		slices.SortFunc(snap.entities, func(a, b *serverMemoryEntry) int {
			return cmp.Or(a.parts[0].created.Compare(b.parts[0].created), strings.Compare(a.parts[0].id, b.parts[0].id))
		})
		for i, e := range snap.entities {
			e.pos = i
		}
		snap.sorted = true
	}
	return snap.entities
}

// serverMemoryEdge is an edge of the graph with the relation it holds.
type serverMemoryEdge struct {
	api.Edge
	relation Relation
}

// relationEdges returns the edges that hold relations at entries (all of
// them when entries is nil), oldest first (ties, within a millisecond, in
// the order of the entities). Links memmesh made itself between near
// duplicates are not relations anybody created.
func (snap *serverMemorySnapshot) relationEdges(entries []*serverMemoryEntry) []serverMemoryEdge {
	snap.list() // the entities' positions
	at := func(p *serverMemoryPart) int {
		if len(p.entry.parts) > 0 {
			return p.entry.pos
		}
		return len(snap.entities) // a name that is no entity: after the entities
	}
	edges := snap.edges
	if entries != nil {
		edges = map[string]api.Edge{}
		for _, entry := range entries {
			for _, p := range slices.Concat(entry.parts, entry.refs) {
				for _, id := range snap.edgesAt[p.id] {
					edges[id] = snap.edges[id]
				}
			}
		}
	}
	var out []serverMemoryEdge
	for _, e := range edges {
		from, to := snap.byID[e.From], snap.byID[e.To]
		if from == nil || to == nil || e.Origin == api.OriginAutoLink {
			continue
		}
		out = append(out, serverMemoryEdge{Edge: e, relation: Relation{From: from.entry.name, To: to.entry.name, RelationType: serverMemoryRelationType(e)}})
	}
	slices.SortFunc(out, func(a, b serverMemoryEdge) int {
		return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt),
			cmp.Compare(at(snap.byID[a.From]), at(snap.byID[b.From])), strings.Compare(a.relation.From, b.relation.From),
			cmp.Compare(at(snap.byID[a.To]), at(snap.byID[b.To])), strings.Compare(a.relation.To, b.relation.To),
			strings.Compare(a.Rel, b.Rel), strings.Compare(a.ID, b.ID))
	})
	return out
}

// relations returns the relations, each once, at entries (all of them
// when entries is nil).
func (snap *serverMemorySnapshot) relations(entries []*serverMemoryEntry) []Relation {
	out := []Relation{}
	seen := map[Relation]bool{}
	for _, e := range snap.relationEdges(entries) {
		if !seen[e.relation] {
			seen[e.relation] = true
			out = append(out, e.relation)
		}
	}
	return out
}

// graph returns entries and the relations that touch them; all relations
// when all is set.
func (snap *serverMemorySnapshot) graph(entries []*serverMemoryEntry, all bool) Graph {
	g := Graph{Entities: make([]Entity, len(entries))}
	for i, e := range entries {
		g.Entities[i] = e.entity()
	}
	if all {
		g.Relations = snap.relations(nil)
	} else {
		g.Relations = snap.relations(append([]*serverMemoryEntry{}, entries...))
	}
	return g
}

func (s *serverMemoryStore) readGraph(ctx context.Context) (Graph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return Graph{}, err
	}
	return snap.graph(snap.list(), true), nil
}

// searchNodes returns the entities whose name, type or an observation
// contains query, ignoring case, and the relations that touch them.
func (s *serverMemoryStore) searchNodes(ctx context.Context, query string) (Graph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return Graph{}, err
	}
	q := strings.ToLower(serverMemoryScrub(query))
	var found []*serverMemoryEntry
	for _, entry := range snap.list() {
		entry.entity()
		if slices.ContainsFunc(entry.lower, func(s string) bool { return strings.Contains(s, q) }) {
			found = append(found, entry)
		}
	}
	return snap.graph(found, false), nil
}

// openNodes returns the named entities and the relations that touch them.
func (s *serverMemoryStore) openNodes(ctx context.Context, names []string) (Graph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return Graph{}, err
	}
	names = serverMemoryScrubAll(names)
	var found []*serverMemoryEntry
	for _, entry := range snap.list() {
		if slices.Contains(names, entry.name) {
			found = append(found, entry)
		}
	}
	return snap.graph(found, false), nil
}

// serverMemoryCreate is an entity to create and its memory's content.
type serverMemoryCreate struct {
	entity  Entity
	content string
}

func (s *serverMemoryStore) createEntities(ctx context.Context, in []Entity, prov serverMemoryProvenance) ([]Entity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := s.planCreate(snap, in)
	if err != nil {
		return nil, err
	}
	return s.applyCreate(ctx, plan, prov)
}

// isEntity reports whether name is an entity of the graph.
func (snap *serverMemorySnapshot) isEntity(name string) bool {
	e := snap.byName[name]
	return e != nil && len(e.parts) > 0
}

// planCreate checks the entities to create, skipping the names that exist
// or come earlier in the list.
func (s *serverMemoryStore) planCreate(snap *serverMemorySnapshot, in []Entity) ([]serverMemoryCreate, error) {
	var plan []serverMemoryCreate
	planned := map[string]bool{}
	for _, e := range in {
		e = Entity{
			Name:         serverMemoryScrub(e.Name),
			EntityType:   serverMemoryScrub(e.EntityType),
			Observations: serverMemoryScrubAll(e.Observations),
		}
		if snap.isEntity(e.Name) || planned[e.Name] {
			continue
		}
		planned[e.Name] = true
		content, err := serverMemoryContent(e)
		if err != nil {
			return nil, err
		}
		plan = append(plan, serverMemoryCreate{entity: e, content: content})
	}
	return plan, nil
}

// at returns the creation time of a new entity: now, but after the previous
// one, so that entities made in one call keep their order (memmesh times
// have millisecond precision).
func (s *serverMemoryStore) at() time.Time {
	t := time.Now().UTC().Truncate(time.Millisecond)
	if !t.After(s.last) {
		t = s.last.Add(time.Millisecond)
	}
	s.last = t
	return t
}

// applyCreate stores planned entities and returns those it created.
func (s *serverMemoryStore) applyCreate(ctx context.Context, plan []serverMemoryCreate, prov serverMemoryProvenance) ([]Entity, error) {
	created := []Entity{}
	for _, c := range plan {
		res, err := s.svc.Remember(ctx, api.RememberRequest{
			Namespace: s.ns,
			Title:     serverMemoryTitle(c.entity.Name),
			Content:   c.content,
			Kind:      serverMemoryKind,
			Tier:      model.TierAgent,
			Evergreen: true,
			Agent:     prov.agent,
			Session:   prov.session,
			At:        s.at(),
		})
		if err != nil {
			return created, fmt.Errorf("create entity %s: %w", c.entity.Name, err)
		}
		if res.DuplicateOf != "" {
			continue // created meanwhile by another process
		}
		created = append(created, c.entity)
	}
	return created, nil
}

// serverMemoryEdit is a new list of observations for one memory.
type serverMemoryEdit struct {
	part         *serverMemoryPart
	observations []string
	content      string // the memory's new content, set by encode
}

// serverMemoryEdits collects the edits of a change, one per memory.
type serverMemoryEdits struct {
	order  []*serverMemoryEdit
	byPart map[*serverMemoryPart]*serverMemoryEdit
}

// of returns the edit of part, starting from its current observations.
func (e *serverMemoryEdits) of(part *serverMemoryPart) *serverMemoryEdit {
	if ed := e.byPart[part]; ed != nil {
		return ed
	}
	ed := &serverMemoryEdit{part: part, observations: slices.Clone(part.observations)}
	if e.byPart == nil {
		e.byPart = map[*serverMemoryPart]*serverMemoryEdit{}
	}
	e.byPart[part] = ed
	e.order = append(e.order, ed)
	return ed
}

// encode returns the edits that change their memory, with its new content.
// It fails, before anything is written, if a content is too big.
func (e *serverMemoryEdits) encode() ([]*serverMemoryEdit, error) {
	var changed []*serverMemoryEdit
	for _, ed := range e.order {
		content, err := serverMemoryContent(Entity{Name: ed.part.entry.name, EntityType: ed.part.entityType, Observations: ed.observations})
		if err != nil {
			return nil, err
		}
		if content != ed.part.content {
			ed.content = content
			changed = append(changed, ed)
		}
	}
	return changed, nil
}

// applyEdits stores encoded edits, each as a new revision of its memory
// written by prov's agent.
func (s *serverMemoryStore) applyEdits(ctx context.Context, edits []*serverMemoryEdit, prov serverMemoryProvenance) error {
	for _, ed := range edits {
		if _, err := s.svc.Update(ctx, ed.part.id, api.UpdateRequest{Content: &ed.content, Agent: prov.agent}); err != nil {
			return fmt.Errorf("update entity %s: %w", ed.part.entry.name, err)
		}
	}
	return nil
}

func (s *serverMemoryStore) addObservations(ctx context.Context, in []serverMemoryAddition, prov serverMemoryProvenance) ([]serverMemoryAdded, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return nil, err
	}
	results, edits, err := s.planAdd(snap, in)
	if err != nil {
		return nil, err
	}
	return results, s.applyEdits(ctx, edits, prov)
}

// planAdd works out, in order, which observations each addition adds: those
// the entity does not have yet. They go to the entity's oldest memory.
func (s *serverMemoryStore) planAdd(snap *serverMemorySnapshot, in []serverMemoryAddition) ([]serverMemoryAdded, []*serverMemoryEdit, error) {
	results := make([]serverMemoryAdded, 0, len(in))
	current := map[*serverMemoryEntry][]string{} // observations as the entity shows them
	var edits serverMemoryEdits
	for _, a := range in {
		name := serverMemoryScrub(a.EntityName)
		if !snap.isEntity(name) {
			return nil, nil, serverMemoryUserError(fmt.Sprintf("Entity with name %s not found", api.Echo(name)))
		}
		entry := snap.byName[name]
		obs, ok := current[entry]
		if !ok {
			obs = entry.entity().Observations
		}
		added := []string{}
		for _, c := range serverMemoryScrubAll(a.Contents) {
			if !slices.Contains(obs, c) {
				added = append(added, c)
			}
		}
		current[entry] = append(obs, added...)
		ed := edits.of(entry.parts[0])
		ed.observations = append(ed.observations, added...)
		results = append(results, serverMemoryAdded{EntityName: name, AddedObservations: added})
	}
	changed, err := edits.encode()
	if err != nil {
		return nil, nil, err
	}
	return results, changed, nil
}

// deleteObservations removes every occurrence of the observations from the
// named entities; unknown entities are ignored.
func (s *serverMemoryStore) deleteObservations(ctx context.Context, in []serverMemoryDeletion, prov serverMemoryProvenance) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return err
	}
	var edits serverMemoryEdits
	for _, d := range in {
		entry := snap.byName[serverMemoryScrub(d.EntityName)]
		if entry == nil {
			continue
		}
		drop := serverMemoryScrubAll(d.Observations)
		for _, p := range entry.parts {
			ed := edits.of(p)
			ed.observations = slices.DeleteFunc(ed.observations, func(o string) bool { return slices.Contains(drop, o) })
		}
	}
	changed, err := edits.encode()
	if err != nil {
		return err
	}
	return s.applyEdits(ctx, changed, prov)
}

// deleteEntities deletes the named entities and every relation from or to
// those names; unknown names are ignored.
func (s *serverMemoryStore) deleteEntities(ctx context.Context, names []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return err
	}
	doomed := map[string]bool{}
	for _, name := range serverMemoryScrubAll(names) {
		doomed[name] = true
	}
	var unlink []serverMemoryEdge
	for _, e := range snap.relationEdges(nil) {
		if doomed[e.relation.From] || doomed[e.relation.To] {
			unlink = append(unlink, e)
		}
	}
	if err := s.unlink(ctx, snap, unlink); err != nil {
		return err
	}
	for name := range doomed {
		entry := snap.byName[name]
		if entry == nil {
			continue
		}
		for _, p := range slices.Concat(entry.parts, entry.refs) {
			if _, err := s.svc.Delete(ctx, p.id); err != nil && !errors.Is(err, api.ErrNotFound) {
				return fmt.Errorf("delete entity %s: %w", entry.name, err)
			}
		}
	}
	return nil
}

// unlink deletes edges, then the references no relation uses any more.
func (s *serverMemoryStore) unlink(ctx context.Context, snap *serverMemorySnapshot, edges []serverMemoryEdge) error {
	var refs []*serverMemoryPart
	for _, e := range edges {
		if _, err := s.svc.Unlink(ctx, e.From, e.Rel, e.To); err != nil && !errors.Is(err, api.ErrNotFound) {
			return fmt.Errorf("delete relation %s %s %s: %w", e.relation.From, e.relation.RelationType, e.relation.To, err)
		}
		snap.dropEdge(e.Edge)
		for _, id := range []string{e.From, e.To} {
			if p := snap.byID[id]; p != nil && p.ref {
				refs = append(refs, p)
			}
		}
	}
	for _, p := range refs {
		if len(snap.edgesAt[p.id]) == 0 && snap.byID[p.id] != nil {
			if _, err := s.svc.Delete(ctx, p.id); err != nil && !errors.Is(err, api.ErrNotFound) {
				return fmt.Errorf("delete the reference to %s: %w", p.entry.name, err)
			}
			snap.remove(p.id)
		}
	}
	return nil
}

func (s *serverMemoryStore) createRelations(ctx context.Context, in []Relation) ([]Relation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := s.planRelations(snap, in)
	if err != nil {
		return nil, err
	}
	return s.applyRelations(ctx, snap, plan)
}

// planRelations checks the relations to create, skipping those that exist
// or come earlier in the list.
func (s *serverMemoryStore) planRelations(snap *serverMemorySnapshot, in []Relation) ([]Relation, error) {
	have := map[Relation]bool{}
	for _, r := range snap.relations(nil) {
		have[r] = true
	}
	var plan []Relation
	for _, r := range in {
		r = Relation{From: serverMemoryScrub(r.From), To: serverMemoryScrub(r.To), RelationType: serverMemoryScrub(r.RelationType)}
		if have[r] {
			continue
		}
		if r.From == r.To && !snap.isEntity(r.From) {
			return nil, serverMemoryUserError(fmt.Sprintf(
				"Relation %s from %s to itself, which is not an entity: memmesh stores a relation from an entity to itself once the entity exists; create it with create_entities first. Nothing was changed.", api.Echo(r.RelationType), api.Echo(r.From)))
		}
		have[r] = true
		plan = append(plan, r)
	}
	return plan, nil
}

// endpoint returns the memory a relation starts or ends at: the entity's
// oldest memory, or the name's reference (made when it has none) when the
// name is no entity or the relation goes from the entity to itself.
func (s *serverMemoryStore) endpoint(ctx context.Context, snap *serverMemorySnapshot, name string, self bool) (string, error) {
	entry := snap.byName[name]
	if entry != nil && len(entry.parts) > 0 && !self {
		return entry.parts[0].id, nil
	}
	if entry != nil && len(entry.refs) > 0 {
		return entry.refs[0].id, nil
	}
	content := serverMemoryReference(name)
	res, err := s.svc.Remember(ctx, api.RememberRequest{
		Namespace: s.ns, Title: serverMemoryTitle(name), Content: content,
		Kind: serverMemoryRefKind, Tier: model.TierAgent, Evergreen: true,
	})
	if err != nil {
		return "", fmt.Errorf("reference to %s: %w", name, err)
	}
	m := api.Memory{ID: res.ID}
	m.Namespace, m.Kind, m.Title, m.Content, m.Status = s.ns, serverMemoryRefKind, serverMemoryTitle(name), content, model.StatusActive
	snap.put(&m)
	return res.ID, nil
}

// applyRelations creates planned relations and returns them.
func (s *serverMemoryStore) applyRelations(ctx context.Context, snap *serverMemorySnapshot, plan []Relation) ([]Relation, error) {
	created := []Relation{}
	for _, r := range plan {
		from, err := s.endpoint(ctx, snap, r.From, false)
		if err != nil {
			return created, err
		}
		to, err := s.endpoint(ctx, snap, r.To, r.From == r.To)
		if err != nil {
			return created, err
		}
		t := r.RelationType
		req := api.LinkRequest{From: from, Rel: serverMemoryRel(t), To: to, Origin: serverMemoryOrigin}
		if req.Rel != t {
			req.Notes = serverMemoryValue(t)
		}
		e, err := s.svc.Link(ctx, req)
		if err != nil {
			return created, fmt.Errorf("create relation %s %s %s: %w", r.From, t, r.To, err)
		}
		snap.putEdge(e)
		created = append(created, r)
	}
	return created, nil
}

// deleteRelations deletes the relations; unknown ones are ignored.
func (s *serverMemoryStore) deleteRelations(ctx context.Context, in []Relation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sync(ctx)
	if err != nil {
		return err
	}
	doomed := map[Relation]bool{}
	for _, r := range in {
		doomed[Relation{From: serverMemoryScrub(r.From), To: serverMemoryScrub(r.To), RelationType: serverMemoryScrub(r.RelationType)}] = true
	}
	var unlink []serverMemoryEdge
	for _, e := range snap.relationEdges(nil) {
		if doomed[e.relation] {
			unlink = append(unlink, e)
		}
	}
	return s.unlink(ctx, snap, unlink)
}
