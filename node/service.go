package node

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/aging"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/internal/touches"
	"github.com/memmesh/memmesh/internal/wordsim"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/rules"
	"github.com/memmesh/memmesh/search"
	"github.com/memmesh/memmesh/storage"
)

// Remember validates, scrubs secrets from, deduplicates and stores a memory.
// It returns once the memory is durable and searchable on this node.
func (n *Node) Remember(ctx context.Context, req api.RememberRequest) (api.RememberResult, error) {
	m, redacted, err := n.newMemory(req)
	if err != nil {
		return api.RememberResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return api.RememberResult{}, err
	}
	words := wordsim.Words(m.Content)
	hash := contentHash(m.Namespace, m.Content)

	similar, err := n.findSimilar(m.Namespace, words)
	if err != nil {
		return api.RememberResult{}, err
	}
	// The content hash's lock makes dedup and store one step; the auto-links'
	// memories are locked too, as Link locks them, so that none is written
	// at a memory being purged.
	targets := autoLinkTargets(similar)
	n.justChecked(targets)
	unlock := n.lockAll(append([]string{hash, m.ID}, targets...))
	defer unlock()
	if err := ctx.Err(); err != nil { // a caller that gave up while the locks were held: nothing is written
		return api.RememberResult{}, err
	}
	if dup, err := n.findDuplicate(m.Namespace, hash); err != nil {
		return api.RememberResult{}, err
	} else if dup != "" {
		return api.RememberResult{ID: DisplayID(dup), ShortID: n.shortID(dup), DuplicateOf: DisplayID(dup), Similar: []api.Similar{}, Redacted: redacted}, nil
	}
	if similar, err = n.stillLive(similar); err != nil {
		return api.RememberResult{}, err
	}
	doc, err := crdt.NewMemoryDoc(n.actor, &m)
	if err != nil {
		return api.RememberResult{}, fmt.Errorf("create memory: %w", err)
	}
	defer doc.Close()
	links, err := n.autoLinks(&m, similar)
	if err != nil {
		return api.RememberResult{}, err
	}
	if err := n.commit(unlock, doc, words, links...); err != nil {
		return api.RememberResult{}, err
	}
	return api.RememberResult{ID: DisplayID(m.ID), ShortID: n.shortID(m.ID), Similar: similar, Redacted: redacted}, nil
}

// newMemory applies the domain rules to a request: validation, defaults and
// secret scrubbing. It reads nothing and writes nothing.
func (n *Node) newMemory(req api.RememberRequest) (model.Memory, []string, error) {
	content, err := rules.CheckContent(req.Content)
	if err != nil {
		return model.Memory{}, nil, err
	}
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return model.Memory{}, nil, err
	}
	title, err := rules.CheckTitle(req.Title)
	if err != nil {
		return model.Memory{}, nil, err
	}
	kind, err := rules.NormalizeKind(req.Kind)
	if err != nil {
		return model.Memory{}, nil, err
	}
	tags, err := rules.NormalizeTags(req.Tags)
	if err != nil {
		return model.Memory{}, nil, err
	}
	tier, err := rules.NormalizeTier(req.Tier, model.TierAgent)
	if err != nil {
		return model.Memory{}, nil, err
	}
	def := rules.TierDefaults(tier)
	confidence := def.Confidence
	if req.Confidence != nil {
		confidence = *req.Confidence
		if err := rules.CheckConfidence(confidence); err != nil {
			return model.Memory{}, nil, err
		}
	}
	ttl := def.TTL
	if req.TTL != "" {
		if ttl, err = api.ParseTTL(req.TTL); err != nil {
			return model.Memory{}, nil, err
		}
	}
	if req.Evergreen {
		ttl = 0
	}
	at := req.At
	if at.IsZero() {
		at = n.now()
	}
	at = at.UTC().Truncate(time.Millisecond)

	agent, agentRedacted, err := rules.CheckLabel("agent", req.Agent)
	if err != nil {
		return model.Memory{}, nil, err
	}
	session, sessionRedacted, err := rules.CheckLabel("session", req.Session)
	if err != nil {
		return model.Memory{}, nil, err
	}
	content, redacted := secrets.Scrub(content)
	title, titleRedacted := secrets.Scrub(title)
	redacted = mergeKinds(mergeKinds(mergeKinds(redacted, titleRedacted), agentRedacted), sessionRedacted)
	if title == "" {
		title = rules.TitleFrom(content)
	}
	m := model.Memory{
		ID:         n.newID(),
		Namespace:  ns,
		Title:      title,
		Content:    content,
		Kind:       kind,
		Tags:       tags,
		Touches:    touches.Extract(content),
		Tier:       tier,
		Confidence: confidence,
		Evergreen:  req.Evergreen,
		Status:     model.StatusActive,
		Provenance: model.Provenance{
			Device:    n.id.DeviceID,
			Agent:     agent,
			Session:   session,
			CreatedAt: at,
			UpdatedAt: at,
		},
	}
	if ttl > 0 {
		m.ExpiresAt = at.Add(ttl)
	}
	return m, redacted, nil
}

func mergeKinds(a, b []string) []string {
	for _, k := range b {
		if !slices.Contains(a, k) {
			a = append(a, k)
		}
	}
	return a
}

// contentHash identifies a memory's content within its namespace, for exact
// duplicate detection.
func contentHash(ns, content string) string {
	sum := sha256.Sum256([]byte(ns + "\n" + strings.Join(strings.Fields(content), " ")))
	return hex.EncodeToString(sum[:16])
}

// findDuplicate returns the id of a live memory in ns with the same content.
func (n *Node) findDuplicate(ns, hash string) (string, error) {
	var found string
	err := n.store.Scan(storage.KindMemory, storage.Term{Field: "hash", Value: hash}, func(id string) error {
		m, err := n.load(id)
		if err != nil {
			return err
		}
		if m.Namespace == ns && live(&m, n.now()) {
			found = id
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", fmt.Errorf("look for duplicates: %w", err)
	}
	return found, nil
}

var errStop = errors.New("stop")

// live reports whether a memory shows in lists and searches.
func live(m *model.Memory, now time.Time) bool {
	return (m.Status == model.StatusActive || m.Status == model.StatusStale) && !m.Expired(now)
}

// findSimilar returns live memories in ns whose words overlap words by at
// least similarThreshold, most similar first. Candidates are the memories
// sharing LSH bands with words; only those sharing the most bands are read
// and compared.
func (n *Node) findSimilar(ns string, words map[string]struct{}) ([]api.Similar, error) {
	bands := map[string]int{}
	for _, key := range wordsim.BandKeys(words) {
		read := 0
		err := n.store.Scan(storage.KindMemory, storage.Term{Field: "lsh", Value: key + "@" + ns}, func(id string) error {
			if read++; read > bandScanLimit {
				return errStop
			}
			bands[id]++
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return nil, fmt.Errorf("look for similar memories: %w", err)
		}
	}
	candidates := make([]string, 0, len(bands))
	for id := range bands {
		candidates = append(candidates, id)
	}
	slices.SortFunc(candidates, func(a, b string) int {
		if c := cmp.Compare(bands[b], bands[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	out := []api.Similar{}
	for _, id := range candidates[:min(len(candidates), maxVerified)] {
		m, err := n.load(id)
		if err != nil {
			return nil, fmt.Errorf("look for similar memories: %w", err)
		}
		if !live(&m, n.now()) {
			continue
		}
		if s := wordsim.Jaccard(words, wordsim.Words(m.Content)); s >= similarThreshold {
			out = append(out, api.Similar{ID: DisplayID(id), ShortID: n.shortID(id), Title: m.Title, Similarity: roundTo(s, 3)})
		}
	}
	sortSimilar(out)
	return out, nil
}

// commit materialises doc and stores it durably in one synced batch, with
// extra records (edges made with it), then hands it to the indexer. words
// may be nil; it is computed when needed. unlock releases the caller's
// locks once the batch is applied, before its fsync (commitUnlock).
func (n *Node) commit(unlock func(), doc *crdt.MemoryDoc, words map[string]struct{}, extra ...storage.Record) error {
	m, err := doc.Materialize()
	if err != nil {
		return fmt.Errorf("materialise memory: %w", err)
	}
	rec, err := memoryRecord(&m, words)
	if err != nil {
		return err
	}
	rec.Doc = doc.Save()
	if err := n.commitUnlock(unlock, append([]storage.Record{rec}, extra...)...); err != nil {
		return writeFailed("store memory "+DisplayID(m.ID), err)
	}
	n.changed()
	return nil
}

// memoryRecord builds the storage record of a memory: its materialised JSON
// and the index terms that lists, dedup and similarity use.
func memoryRecord(m *model.Memory, words map[string]struct{}) (storage.Record, error) {
	value, err := json.Marshal(m)
	if err != nil {
		return storage.Record{}, fmt.Errorf("encode memory: %w", err)
	}
	if words == nil {
		words = wordsim.Words(m.Content)
	}
	terms := []storage.Term{
		{Field: "ns", Value: m.Namespace},
		{Field: "status", Value: string(m.Status)},
		{Field: "kind", Value: m.Kind},
		{Field: "tier", Value: string(m.Tier)},
		{Field: "hash", Value: contentHash(m.Namespace, m.Content)},
	}
	for _, t := range m.Tags {
		terms = append(terms, storage.Term{Field: "tag", Value: t})
	}
	for _, t := range m.Touches {
		terms = append(terms, storage.Term{Field: "touch", Value: t})
	}
	if len(m.Conflict) > 0 {
		terms = append(terms, storage.Term{Field: "conflict", Value: "yes"})
	}
	if t, ok := threadTerm(m); ok {
		terms = append(terms, t)
	}
	if m.Status != model.StatusDeleted {
		for _, k := range wordsim.BandKeys(words) {
			terms = append(terms, storage.Term{Field: "lsh", Value: k + "@" + m.Namespace})
		}
	}
	return storage.Record{Kind: storage.KindMemory, ID: m.ID, Heads: m.Heads, Value: value, Terms: terms}, nil
}

// load reads a memory's materialised record; it never loads the document.
func (n *Node) load(id string) (model.Memory, error) {
	rec, err := n.store.Get(storage.KindMemory, id)
	if err != nil {
		return model.Memory{}, err
	}
	var m model.Memory
	if err := json.Unmarshal(rec.Value, &m); err != nil {
		return model.Memory{}, fmt.Errorf("decode memory %s: %w", id, err)
	}
	return m, nil
}

func (n *Node) view(m model.Memory) api.Memory {
	reads := n.life.readsOf(m.ID)
	return api.Memory{Memory: m, ID: DisplayID(m.ID), ShortID: n.shortID(m.ID), Reads: reads, Maturity: aging.Maturity(reads),
		ConfidenceNow: m.Confidence * confidenceDecay(&m, n.now(), n.confidenceHalfLife())}
}

func storageNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }

// isActive reports whether memory id is here and active. A memory that is not
// here is not live; any other read error is returned, never taken for "not
// live", so that a failing read cannot hide a successor or a contradiction.
func (n *Node) isActive(id string) (bool, error) {
	m, err := n.load(id)
	if storageNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.Status == model.StatusActive, nil
}

// Get returns one memory by full or short id, and counts the access.
func (n *Node) Get(ctx context.Context, ref string) (api.Memory, error) {
	id, err := n.resolve(ref)
	if err != nil {
		return api.Memory{}, err
	}
	m, err := n.load(id)
	if err != nil {
		return api.Memory{}, n.notFound(id, ref, err)
	}
	n.recordAccess(id)
	return n.view(m), nil
}

// Update applies req to a memory as one change and returns the result.
func (n *Node) Update(ctx context.Context, ref string, req api.UpdateRequest) (api.Memory, error) {
	if req.Status != nil {
		switch *req.Status {
		case model.StatusActive, model.StatusStale, model.StatusArchived:
		default:
			return api.Memory{}, api.Invalidf("status %q: update can set active, stale or archived (use delete to delete)", *req.Status)
		}
	}
	id, m, doc, release, err := n.openMemory(ref, false)
	if err != nil {
		return api.Memory{}, err
	}
	defer release()
	if req.Namespace != nil {
		if to, err := NormalizeNamespace(*req.Namespace); err == nil && n.leavesLocal(m.Namespace, to) {
			return n.moveOutOfLocal(id, doc, &m, release, req)
		}
	}
	return n.changeMemory(id, doc, &m, release, func(doc *crdt.MemoryDoc, m *model.Memory) error {
		return n.applyUpdate(doc, m, req)
	})
}

// Forget archives a memory: it leaves lists and searches but is kept, and
// `update --status active` brings it back.
func (n *Node) Forget(ctx context.Context, ref string) (api.Memory, error) {
	return n.setStatus(ref, model.StatusArchived)
}

// Restore brings an archived, stale, compacted or deleted memory back to
// active (a compacted one loses its compacted_into).
func (n *Node) Restore(ctx context.Context, ref string) (api.Memory, error) {
	return n.setStatus(ref, model.StatusActive)
}

// Delete marks a memory deleted: it leaves lists, searches and the brief
// on every machine, since the change replicates, but it is kept, and
// Restore undoes it. Purge erases a memory instead.
func (n *Node) Delete(ctx context.Context, ref string) (api.Memory, error) {
	return n.setStatus(ref, model.StatusDeleted)
}

func (n *Node) setStatus(ref string, s model.Status) (api.Memory, error) {
	return n.editMemory(ref, true, func(doc *crdt.MemoryDoc, m *model.Memory) error {
		if m.Status == s {
			return errUnchanged
		}
		return doc.SetStatus(s, "")
	})
}

// errUnchanged is what a change returns when there is nothing to write.
var errUnchanged = errors.New("unchanged")

// editMemory loads a memory's document under its lock, lets change modify
// it, and commits the result as one durable change. A deleted memory must
// be restored first, unless deleted is set.
func (n *Node) editMemory(ref string, deleted bool, change func(*crdt.MemoryDoc, *model.Memory) error) (api.Memory, error) {
	id, m, doc, release, err := n.openMemory(ref, deleted)
	if err != nil {
		return api.Memory{}, err
	}
	defer release()
	return n.changeMemory(id, doc, &m, release, change)
}

// openMemory resolves ref, takes the memory's lock and loads it for a
// change; release closes the document and unlocks (once, however often it
// is called).
func (n *Node) openMemory(ref string, deleted bool) (id string, m model.Memory, doc *crdt.MemoryDoc, release func(), err error) {
	if id, err = n.resolve(ref); err != nil {
		return "", m, nil, nil, err
	}
	unlock := n.lock(id)
	fail := func(err error) (string, model.Memory, *crdt.MemoryDoc, func(), error) {
		unlock()
		return "", model.Memory{}, nil, nil, err
	}
	if m, err = n.load(id); err != nil {
		return fail(n.notFound(id, ref, err))
	}
	if m.Status == model.StatusDeleted && !deleted {
		return fail(fmt.Errorf("%w: memory %s is deleted: restore it first (or purge it to erase it)", api.ErrNotFound, DisplayID(id)))
	}
	data, err := n.store.GetDoc(storage.KindMemory, id)
	if err != nil {
		return fail(fmt.Errorf("read memory %s: %w", DisplayID(id), err))
	}
	if doc, err = crdt.LoadMemoryDoc(n.actor, data); err != nil {
		return fail(fmt.Errorf("load memory %s: %w", DisplayID(id), err))
	}
	return id, m, doc, sync.OnceFunc(func() { doc.Close(); unlock() }), nil
}

// changeMemory applies change to an opened memory and commits it;
// release (openMemory's) runs once the commit is applied.
func (n *Node) changeMemory(id string, doc *crdt.MemoryDoc, m *model.Memory, release func(), change func(*crdt.MemoryDoc, *model.Memory) error) (api.Memory, error) {
	if err := change(doc, m); errors.Is(err, errUnchanged) {
		return n.view(*m), nil
	} else if err != nil {
		return api.Memory{}, err
	}
	if err := doc.SetUpdated(n.now().UTC()); err != nil {
		return api.Memory{}, err
	}
	if err := doc.Commit("update"); err != nil {
		return api.Memory{}, fmt.Errorf("commit memory %s: %w", DisplayID(id), err)
	}
	if err := n.commit(release, doc, nil); err != nil {
		return api.Memory{}, err
	}
	updated, err := n.load(id)
	if err != nil {
		return api.Memory{}, err
	}
	return n.view(updated), nil
}

// applyUpdate validates every field of req first, then changes doc, so that
// a bad field changes nothing.
func (n *Node) applyUpdate(doc *crdt.MemoryDoc, m *model.Memory, req api.UpdateRequest) error {
	var ops []func() error
	agent, _, err := rules.CheckLabel("agent", req.Agent)
	if err != nil {
		return err
	}
	if req.Title != nil {
		title, err := rules.CheckTitle(*req.Title)
		if err != nil {
			return err
		}
		title, _ = secrets.Scrub(title)
		ops = append(ops, func() error { return doc.SetTitle(title) })
	}
	if req.Content != nil {
		content, err := rules.CheckContent(*req.Content)
		if err != nil {
			return err
		}
		content, _ = secrets.Scrub(content)
		if req.Base != "" && !slices.ContainsFunc(m.Revisions, func(r model.Revision) bool { return r.ID == req.Base }) {
			return api.Invalidf("base revision %q: the memory has no such revision", strings.ToValidUTF8(req.Base[:min(len(req.Base), 40)], ""))
		}
		if content != m.Content || len(m.Conflict) > 0 {
			ops = append(ops, func() error {
				if _, err := doc.EditRevision(req.Base, content, n.id.DeviceID, agent, n.now().UTC()); err != nil {
					return err
				}
				return n.followContent(doc, m, content, req.Title == nil)
			})
		}
	}
	if req.Namespace != nil {
		ns, err := NormalizeNamespace(*req.Namespace)
		if err != nil {
			return err
		}
		ops = append(ops, func() error { return doc.SetNamespace(ns) })
	}
	if req.Kind != nil {
		kind, err := rules.NormalizeKind(*req.Kind)
		if err != nil {
			return err
		}
		ops = append(ops, func() error { return doc.SetKind(kind) })
	}
	add, err := rules.NormalizeTags(req.AddTags)
	if err != nil {
		return err
	}
	remove, err := rules.NormalizeTags(req.RemoveTags)
	if err != nil {
		return err
	}
	if len(add) > 0 {
		if all, _ := rules.NormalizeTags(append(m.Tags, add...)); len(all) > api.MaxTags {
			return api.Invalidf("a memory has at most %d tags", api.MaxTags)
		}
		ops = append(ops, func() error { return doc.AddTags(add...) })
	}
	if len(remove) > 0 {
		ops = append(ops, func() error { return doc.RemoveTags(remove...) })
	}
	if req.Tier != nil {
		tier, err := rules.NormalizeTier(*req.Tier, m.Tier)
		if err != nil {
			return err
		}
		ops = append(ops, func() error { return doc.SetTier(tier) })
		if tier != m.Tier {
			ops = append(ops, n.tierDefaults(doc, m, tier, req)...)
		}
	}
	if req.Confidence != nil {
		c := *req.Confidence
		if err := rules.CheckConfidence(c); err != nil {
			return err
		}
		ops = append(ops, func() error { return doc.SetConfidence(c) })
	}
	if req.Evergreen != nil {
		e := *req.Evergreen
		ops = append(ops, func() error { return doc.SetEvergreen(e) })
		if e {
			ops = append(ops, func() error { return doc.SetExpiresAt(time.Time{}) })
		}
	}
	if req.TTL != nil {
		ttl, err := api.ParseTTL(*req.TTL)
		if err != nil {
			return err
		}
		var at time.Time
		if ttl > 0 {
			at = n.now().UTC().Add(ttl)
		}
		ops = append(ops, func() error { return doc.SetExpiresAt(at) })
	}
	if req.Status != nil {
		s := *req.Status
		ops = append(ops, func() error { return doc.SetStatus(s, "") })
	}
	if req.Confirm || req.ConfirmedBy != "" {
		by, _, err := rules.CheckLabel("confirmer", req.ConfirmedBy)
		if err != nil {
			return err
		}
		by = cmp.Or(by, "device "+n.id.DeviceID)
		ops = append(ops, func() error { return doc.SetConfirmed(n.now().UTC(), by) })
	}
	if len(ops) == 0 {
		return api.Invalidf("nothing to update: give at least one field to change")
	}
	for _, op := range ops {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

// followContent makes what is derived from a memory's content follow new
// content: the touches become those of the new text, and a title that was
// derived from the old text (rather than given) is derived anew, unless
// the same update sets one.
func (n *Node) followContent(doc *crdt.MemoryDoc, m *model.Memory, content string, deriveTitle bool) error {
	found := touches.Extract(content)
	var gone []string
	for _, t := range m.Touches {
		if !slices.Contains(found, t) {
			gone = append(gone, t)
		}
	}
	if err := doc.RemoveTouches(gone...); err != nil {
		return err
	}
	if err := doc.AddTouches(found...); err != nil {
		return err
	}
	if deriveTitle && m.Title == rules.TitleFrom(m.Content) {
		return doc.SetTitle(rules.TitleFrom(content))
	}
	return nil
}

// tierDefaults returns the changes that come with a new trust tier when the
// update does not set them itself: the new tier's time to live, counted
// from now (a human memory does not expire), and its confidence, when the
// memory still has the old tier's default. Evergreen memories never expire.
func (n *Node) tierDefaults(doc *crdt.MemoryDoc, m *model.Memory, tier model.Tier, req api.UpdateRequest) []func() error {
	var ops []func() error
	if req.TTL == nil && !m.Evergreen && (req.Evergreen == nil || !*req.Evergreen) {
		var at time.Time
		if ttl := rules.TierDefaults(tier).TTL; ttl > 0 {
			at = n.now().UTC().Add(ttl)
		}
		ops = append(ops, func() error { return doc.SetExpiresAt(at) })
	}
	if req.Confidence == nil && m.Confidence == rules.TierDefaults(m.Tier).Confidence {
		c := rules.TierDefaults(tier).Confidence
		ops = append(ops, func() error { return doc.SetConfidence(c) })
	}
	return ops
}

// accessPrefix starts the local keys of read counts.
const accessPrefix = "access/"

// accessStats is how often and when this machine read a memory.
type accessStats struct {
	Count int       `json:"count"`
	Last  time.Time `json:"last"`
}

// recordAccess counts a read in local, unreplicated data: reads never
// create a change that has to sync.
func (n *Node) recordAccess(id string) {
	key := accessPrefix + id
	var a accessStats
	if data, err := n.store.GetLocal(key); err == nil {
		_ = json.Unmarshal(data, &a)
	}
	a.Count = max(a.Count+1, n.life.read(id))
	a.Last = n.now().UTC()
	data, _ := json.Marshal(a)
	if err := n.store.PutLocal(key, data); err != nil {
		n.log.Warn("record access", "id", id, "err", err)
	}
}

// Search runs a full-text search. It sees every write acknowledged before it
// was called.
func (n *Node) Search(ctx context.Context, req api.SearchRequest) (api.SearchResult, error) {
	q, err := n.searchQuery(ctx, req)
	if err != nil {
		return api.SearchResult{}, err
	}
	run := n.graphSearch
	if req.NoGraph || q.Text == "" {
		run = n.runSearch
	}
	res, err := run(ctx, q)
	if err != nil {
		return api.SearchResult{}, err
	}
	if err := n.label(ctx, res.Results); err != nil {
		return api.SearchResult{}, err
	}
	needles := n.index.Needles(q.Text)
	for i := range res.Results {
		excerpt(&res.Results[i], needles, api.HitContentBytes)
	}
	if req.Budget > 0 {
		fitBudget(&res, req.Budget, needles)
	}
	return res, nil
}

// excerpt cuts h's texts to excerpts of size bytes around needles and
// drops its revisions.
func excerpt(h *api.SearchHit, needles []string, size int) {
	if h.ContentBytes == 0 {
		h.ContentBytes = len(h.Content)
	}
	h.Revisions = nil
	var cut bool
	h.Content, cut = search.Excerpt(h.Content, needles, size)
	h.Truncated = h.Truncated || cut
	for i := range h.Conflict {
		h.Conflict[i].Text, cut = search.Excerpt(h.Conflict[i].Text, needles, size)
		h.Truncated = h.Truncated || cut
	}
}

// NormalizeNamespace lower-cases a namespace and checks it, as the
// service does; "" is api.DefaultNamespace.
var NormalizeNamespace = rules.NormalizeNamespace

// CheckQuery checks search text against the bounds of a query (its bytes,
// words, word length and phrases) without searching, so that every
// boundary can refuse oversized text before any work.
func CheckQuery(text string) error {
	return invalidQuery(search.CheckText(text))
}

// invalidQuery turns the search index's refusal of a query into
// ErrInvalid with the index's reason.
func invalidQuery(err error) error {
	if !errors.Is(err, search.ErrInvalidQuery) {
		return err
	}
	return api.Invalidf("%s", strings.TrimPrefix(err.Error(), search.ErrInvalidQuery.Error()+": "))
}

func (n *Node) searchQuery(ctx context.Context, req api.SearchRequest) (search.Query, error) {
	if err := CheckQuery(req.Query); err != nil {
		return search.Query{}, err
	}
	q := search.Query{
		Text:     strings.TrimSpace(req.Query),
		Statuses: req.Statuses,
		Tiers:    req.Tiers,
		Since:    req.Since,
		Until:    req.Until,
		Limit:    req.Limit,
		Explain:  req.Explain,
		Now:      n.now(),
		Derived:  n.life.derive,
		Feedback: n.feedbackTexts,
	}
	if req.Namespace != "" {
		ns, err := NormalizeNamespace(req.Namespace)
		if err != nil {
			return q, err
		}
		q.Namespace = ns
	}
	tags, err := rules.NormalizeTags(req.Tags)
	if err != nil {
		return q, err
	}
	q.Tags = tags
	if q.Device, err = n.findDevice(ctx, req.Device); err != nil {
		return q, err
	}
	if req.Kind != "" {
		if q.Kind, err = rules.NormalizeKind(req.Kind); err != nil {
			return q, err
		}
	}
	for _, s := range req.Statuses {
		if !s.Valid() {
			return q, api.Invalidf("status %q: use active, stale, archived, compacted or deleted", s)
		}
	}
	for _, t := range req.Tiers {
		if !t.Valid() {
			return q, api.Invalidf("tier %q: use human, agent or auto", t)
		}
	}
	if req.Limit < 0 || req.Limit > 1000 {
		return q, api.Invalidf("limit %d: use 1 to 1000", req.Limit)
	}
	if req.Budget != 0 && (req.Budget < api.MinSearchBudget || req.Budget > api.MaxSearchBudget) {
		return q, api.Invalidf("budget %d: use %d to %d tokens, or none", req.Budget, api.MinSearchBudget, api.MaxSearchBudget)
	}
	return q, nil
}

// feedbackTexts returns the title and content of each memory of ids, for
// the search index's feedback pass; nil when one cannot be read.
func (n *Node) feedbackTexts(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		m, err := n.load(id)
		if err != nil {
			return nil
		}
		out[i] = m.Title + "\n" + m.Content
	}
	return out
}

func (n *Node) runSearch(ctx context.Context, q search.Query) (api.SearchResult, error) {
	limit := cmp.Or(q.Limit, search.DefaultLimit)
	tq := q
	tq.Limit = max(limit, candidates)
	res, err := n.indexSearch(ctx, tq)
	if err != nil {
		return api.SearchResult{}, err
	}
	byScore := func(a, b search.Hit) int { return cmp.Compare(b.Score, a.Score) }
	err = n.demoteSuperseded(ctx, res.Hits, limit, byScore, func(h *search.Hit) {
		h.Score *= supersededWeight
		demoteExplained(h.Explain)
	})
	if err != nil {
		return api.SearchResult{}, err
	}
	res.Hits = res.Hits[:min(len(res.Hits), limit)]
	return n.hydrate(res, nil)
}

// indexSearch runs q on the search index once it holds every durable
// change.
func (n *Node) indexSearch(ctx context.Context, q search.Query) (search.Result, error) {
	if err := n.indexer.waitFor(ctx, n.store.DurableSeq()); err != nil {
		return search.Result{}, err
	}
	q.Near = n.near(ctx, q)
	res, err := n.index.Search(ctx, q)
	if errors.Is(err, search.ErrInvalidQuery) {
		return search.Result{}, invalidQuery(err)
	}
	if err != nil {
		return search.Result{}, fmt.Errorf("search: %w", err)
	}
	return res, nil
}

// hydrate loads the memories of an index result, with their fusion
// explanations when given.
func (n *Node) hydrate(res search.Result, fusion map[string]*api.Fusion) (api.SearchResult, error) {
	out := api.SearchResult{Results: make([]api.SearchHit, 0, len(res.Hits)), Fuzzy: res.Fuzzy, Loose: res.Loose, Total: res.Total}
	for _, h := range res.Hits {
		m, err := n.load(h.ID)
		if storageNotFound(err) {
			continue // removed since the search ran
		} else if err != nil {
			return api.SearchResult{}, err
		}
		out.Results = append(out.Results, api.SearchHit{Memory: n.view(m), Score: h.Score, Explain: h.Explain, Fusion: fusion[h.ID], Semantic: h.Semantic})
	}
	return out, nil
}

// List returns memories matching the filters, most recently updated first.
func (n *Node) List(ctx context.Context, req api.ListRequest) ([]api.Memory, error) {
	page, err := n.ListPage(ctx, req)
	return page.Memories, err
}

// ListPage is List with the cursor of the page that follows: the update
// time and id of the page's last memory, the listing's order, so that
// paging neither skips nor repeats the memories updated in the same
// millisecond at a page's end.
func (n *Node) ListPage(ctx context.Context, req api.ListRequest) (api.ListPage, error) {
	if req.Limit == 0 {
		req.Limit = 50
	}
	q, err := n.searchQuery(ctx, api.SearchRequest{
		Namespace: req.Namespace, Tags: req.Tags, Kind: req.Kind, Device: req.Device,
		Statuses: req.Statuses, Tiers: req.Tiers, Since: req.Since, Until: req.Until, Limit: req.Limit,
	})
	if err != nil {
		return api.ListPage{}, err
	}
	if req.Cursor != "" {
		after, err := api.DecodeCursor(req.Cursor)
		if err != nil {
			return api.ListPage{}, err
		}
		q.After = &after
	}
	if req.Session != "" {
		if len(req.Session) > maxThreadSession {
			return api.ListPage{}, api.Invalidf("session: at most %d bytes", maxThreadSession)
		}
		if q.IDs, err = n.thread(req.Session); err != nil {
			return api.ListPage{}, err
		}
		if len(q.IDs) == 0 {
			return api.ListPage{Memories: []api.Memory{}}, nil
		}
	}
	res, err := n.indexSearch(ctx, q)
	if err != nil {
		return api.ListPage{}, err
	}
	found, err := n.hydrate(res, nil)
	if err != nil {
		return api.ListPage{}, err
	}
	page := api.ListPage{Memories: make([]api.Memory, len(found.Results))}
	for i, h := range found.Results {
		page.Memories[i] = h.Memory
	}
	if res.Next != nil {
		page.Next = api.EncodeCursor(*res.Next)
	}
	return page, nil
}

// Stats counts memories by status, namespace, kind and tier from the
// storage indexes (no record is decoded).
func (n *Node) Stats(ctx context.Context) (api.Stats, error) {
	s := api.Stats{DeviceID: n.id.DeviceID, Home: n.cfg.Home, SchemaVersion: n.store.SchemaVersion()}
	var err error
	if s.Memories, err = n.store.Count(storage.KindMemory); err != nil {
		return s, err
	}
	for field, into := range map[string]*map[string]int{
		"status": &s.ByStatus, "ns": &s.ByNamespace, "kind": &s.ByKind, "tier": &s.ByTier,
	} {
		counts := map[string]int{}
		err := n.store.ScanPrefix(storage.KindMemory, field, "", func(t storage.Term, _ string) error {
			counts[t.Value]++
			return nil
		})
		if err != nil {
			return s, fmt.Errorf("count by %s: %w", field, err)
		}
		*into = counts
	}
	if s.Indexed, err = n.index.Count(); err != nil {
		return s, err
	}
	return s, nil
}
