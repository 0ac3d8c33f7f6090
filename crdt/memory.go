package crdt

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/memmesh/memmesh/model"
)

// Root keys of a memory document, besides keyType, keySchema and keyID.
const (
	keyNamespace  = "namespace"
	keyTitle      = "title"
	keyKind       = "kind"
	keyTags       = "tags"    // map: tag -> true
	keyTouches    = "touches" // map: path or entity -> true
	keyTier       = "tier"
	keyConfidence = "confidence"
	keyEvergreen  = "evergreen"
	keyStatus     = "status" // see statusValue
	keyExpiresAt  = "expires_at"
	keyProvenance = "provenance" // map, keys below
	keyRevisions  = "revisions"  // map: revision id -> map, keys below
)

// Keys of the provenance map.
const (
	keyDevice    = "device" // also a revision key
	keyAgent     = "agent"  // also a revision key
	keySession   = "session"
	keyCreatedAt = "created_at" // also an edge key
	keyUpdatedAt = "updated_at" // also an edge key
	// Written by the first confirmation (SetConfirmed), absent before.
	keyConfirmedAt = "confirmed_at"
	keyConfirmedBy = "confirmed_by"
)

// Keys of a revision map. The revision id is its key in keyRevisions.
const (
	keyParent = "parent" // absent for the first revision
	keyMerges = "merges" // comma-separated ids; absent if none
	keyText   = "text"
	keyAt     = "at"
)

// MemoryDoc is the Automerge document of one memory. It is not safe for
// concurrent use. Setters record operations; Commit turns them into one
// change. After Close the document must not be used.
type MemoryDoc struct {
	document
}

// NewMemoryDoc creates the document of m and commits it as one change.
// When m.Revisions is empty, m.Content becomes the first revision, made by
// m.Provenance.Device and m.Provenance.Agent at m.Provenance.CreatedAt; otherwise m.Revisions are
// written as they are (a memory recreated from an export) and m.Content is
// ignored. m.Conflict and m.Heads are always ignored.
// actor is the Automerge actor id of this device (see ActorID).
func NewMemoryDoc(actor string, m *model.Memory) (*MemoryDoc, error) {
	d, _, err := newMemoryDoc(actor, m)
	return d, err
}

// CreateMemory is NewMemoryDoc that also returns the memory as
// Materialize would read it from the new document, built from m instead:
// times at millisecond precision in UTC, tags and touches sorted and
// unique, revisions oldest first, Content and Conflict from their leaves,
// and the document's heads. A batch import creates a document per memory,
// and reading each back cost a seventh of its work.
func CreateMemory(actor string, m *model.Memory) (*MemoryDoc, model.Memory, error) {
	d, revs, err := newMemoryDoc(actor, m)
	if err != nil {
		return nil, model.Memory{}, err
	}
	return d, written(m, revs, d.heads()), nil
}

// newMemoryDoc is NewMemoryDoc; it also returns the revisions written.
func newMemoryDoc(actor string, m *model.Memory) (*MemoryDoc, []model.Revision, error) {
	if err := checkMemory(m); err != nil {
		return nil, nil, err
	}
	revs := m.Revisions
	if len(revs) == 0 {
		revs = []model.Revision{{ID: NewID(), Text: m.Content, Device: m.Provenance.Device, Agent: m.Provenance.Agent, At: m.Provenance.CreatedAt}}
	}
	if err := checkRevisions(revs); err != nil {
		return nil, nil, err
	}
	base, err := newDocument(actor)
	if err != nil {
		return nil, nil, err
	}
	d := &MemoryDoc{base}
	if err := d.create(m, revs); err != nil {
		d.Close()
		return nil, nil, err
	}
	if err := d.Commit("create"); err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, revs, nil
}

// written returns what create wrote for m and revs, as Materialize reads
// it, with heads.
func written(m *model.Memory, revs []model.Revision, heads []string) model.Memory {
	at := func(t time.Time) time.Time { return fromMillis(millis(t)) }
	out := model.Memory{
		ID:         m.ID,
		Namespace:  m.Namespace,
		Title:      m.Title,
		Kind:       m.Kind,
		Tags:       uniqueSorted(m.Tags),
		Touches:    uniqueSorted(m.Touches),
		Tier:       m.Tier,
		Confidence: m.Confidence,
		Evergreen:  m.Evergreen,
		ExpiresAt:  at(m.ExpiresAt),
		Provenance: model.Provenance{
			Device:    m.Provenance.Device,
			Agent:     m.Provenance.Agent,
			Session:   m.Provenance.Session,
			CreatedAt: at(m.Provenance.CreatedAt),
			UpdatedAt: at(m.Provenance.UpdatedAt),
		},
		Revisions: make([]model.Revision, len(revs)),
		Heads:     heads,
	}
	if !m.Provenance.ConfirmedAt.IsZero() {
		out.Provenance.ConfirmedAt, out.Provenance.ConfirmedBy = at(m.Provenance.ConfirmedAt), m.Provenance.ConfirmedBy
	}
	out.Status, out.CompactedInto = parseStatus(statusValue(m.Status, m.CompactedInto))
	for i, r := range revs {
		out.Revisions[i] = model.Revision{ID: r.ID, Parent: r.Parent, Text: r.Text, Device: r.Device, Agent: r.Agent, At: at(r.At)}
		if merges := strings.Join(r.Merges, ","); merges != "" {
			out.Revisions[i].Merges = strings.Split(merges, ",")
		}
	}
	orderRevisions(out.Revisions)
	tips := leaves(out.Revisions)
	out.Content = tips[0].Text
	if len(tips) > 1 {
		out.Conflict = tips
	}
	return out
}

// uniqueSorted returns the distinct elements of s sorted, nil when there
// are none: the keys of a set map as Materialize reads them.
func uniqueSorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

func (d *MemoryDoc) create(m *model.Memory, revisions []model.Revision) error {
	root := d.am.RootMap()
	err := d.init(root,
		field{keyType, typeMemory},
		field{keySchema, int64(schemaVersion)},
		field{keyID, m.ID},
		field{keyNamespace, m.Namespace},
		field{keyTitle, m.Title},
		field{keyKind, m.Kind},
		field{keyTier, string(m.Tier)},
		field{keyConfidence, m.Confidence},
		field{keyEvergreen, m.Evergreen},
		field{keyStatus, statusValue(m.Status, m.CompactedInto)},
		field{keyExpiresAt, millis(m.ExpiresAt)},
	)
	if err != nil {
		return err
	}
	p := m.Provenance
	prov, err := d.newMap(root, keyProvenance)
	if err != nil {
		return err
	}
	fields := []field{
		{keyDevice, p.Device},
		{keyAgent, p.Agent},
		{keySession, p.Session},
		{keyCreatedAt, millis(p.CreatedAt)},
		{keyUpdatedAt, millis(p.UpdatedAt)},
	}
	if !p.ConfirmedAt.IsZero() {
		fields = append(fields, field{keyConfirmedAt, millis(p.ConfirmedAt)}, field{keyConfirmedBy, p.ConfirmedBy})
	}
	if err := d.init(prov, fields...); err != nil {
		return err
	}
	for _, s := range []struct {
		key   string
		elems []string
	}{{keyTags, m.Tags}, {keyTouches, m.Touches}} {
		set, err := d.newMap(root, s.key)
		if err != nil {
			return err
		}
		for _, e := range s.elems {
			if err := d.put(set, field{e, true}); err != nil {
				return err
			}
		}
	}
	revs, err := d.newMap(root, keyRevisions)
	if err != nil {
		return err
	}
	for _, r := range revisions {
		if err := d.putRevision(revs, r); err != nil {
			return err
		}
	}
	return nil
}

// LoadMemoryDoc loads a memory document made by Save. The bytes are
// checked before Automerge parses them (see the package documentation), and
// a document that is not a memory document, or has a newer schema, is
// refused. actor is the Automerge actor id of this device.
func LoadMemoryDoc(actor string, data []byte) (*MemoryDoc, error) {
	base, err := loadDocument(actor, typeMemory, data)
	if err != nil {
		return nil, err
	}
	return &MemoryDoc{base}, nil
}

// SetTitle sets the title.
func (d *MemoryDoc) SetTitle(s string) error { return d.putString(keyTitle, s) }

// SetNamespace sets the namespace.
func (d *MemoryDoc) SetNamespace(s string) error { return d.putString(keyNamespace, s) }

// SetKind sets the kind (note, decision, convention, ...).
func (d *MemoryDoc) SetKind(s string) error { return d.putString(keyKind, s) }

func (d *MemoryDoc) putString(key, s string) error {
	if err := checkText(key, s); err != nil {
		return err
	}
	return d.putRoot(field{key, s})
}

// SetTier sets the trust tier.
func (d *MemoryDoc) SetTier(t model.Tier) error {
	if !t.Valid() {
		return fmt.Errorf("%w: %q", ErrInvalidTier, t)
	}
	return d.putRoot(field{keyTier, string(t)})
}

// SetConfidence sets the confidence, which must be in [0, 1].
func (d *MemoryDoc) SetConfidence(c float64) error {
	if err := checkUnit("confidence", c); err != nil {
		return err
	}
	return d.putRoot(field{keyConfidence, c})
}

// SetEvergreen sets the evergreen flag.
func (d *MemoryDoc) SetEvergreen(b bool) error { return d.putRoot(field{keyEvergreen, b}) }

// SetStatus sets the status. compactedInto is the id of the memory this
// one was compacted into: required for StatusCompacted, empty otherwise.
func (d *MemoryDoc) SetStatus(s model.Status, compactedInto string) error {
	if err := checkStatus(s, compactedInto); err != nil {
		return err
	}
	return d.putRoot(field{keyStatus, statusValue(s, compactedInto)})
}

// statusValue encodes a status and the memory it was compacted into as one
// value, "compacted:<id>" or just the status, so that concurrent changes
// merge to one replica's pair rather than a mix of two.
func statusValue(s model.Status, compactedInto string) string {
	if s == model.StatusCompacted {
		return string(s) + ":" + compactedInto
	}
	return string(s)
}

func parseStatus(v string) (s model.Status, compactedInto string) {
	status, into, _ := strings.Cut(v, ":")
	return model.Status(status), into
}

// SetExpiresAt sets when the memory expires; the zero time means never.
func (d *MemoryDoc) SetExpiresAt(t time.Time) error {
	return d.putRoot(field{keyExpiresAt, millis(t)})
}

// SetUpdated sets provenance.updated_at.
func (d *MemoryDoc) SetUpdated(at time.Time) error {
	prov, err := d.rootMap(keyProvenance)
	if err != nil {
		return err
	}
	return d.put(prov, field{keyUpdatedAt, millis(at)})
}

// SetConfirmed records that by (a person or an agent) checked the memory
// at at and found it still holds.
func (d *MemoryDoc) SetConfirmed(at time.Time, by string) error {
	if err := checkText(keyConfirmedBy, by); err != nil {
		return err
	}
	prov, err := d.rootMap(keyProvenance)
	if err != nil {
		return err
	}
	if err := d.put(prov, field{keyConfirmedAt, millis(at)}); err != nil {
		return err
	}
	return d.put(prov, field{keyConfirmedBy, by})
}

// AddTags adds tags to the tag set. Tags must be non-empty UTF-8.
func (d *MemoryDoc) AddTags(tags ...string) error { return d.addToSet(keyTags, tags) }

// RemoveTags removes tags from the tag set; absent tags are ignored.
func (d *MemoryDoc) RemoveTags(tags ...string) error { return d.removeFromSet(keyTags, tags) }

// AddTouches adds file paths or entities to the touches set.
func (d *MemoryDoc) AddTouches(t ...string) error { return d.addToSet(keyTouches, t) }

// RemoveTouches removes file paths or entities from the touches set.
func (d *MemoryDoc) RemoveTouches(t ...string) error { return d.removeFromSet(keyTouches, t) }

// AppendRevision records a new version of the content, written by agent
// (the client, "" when unknown) on device. Its parent is the current leaf
// (the newest), and it merges every other leaf, so an edit made while a
// conflict is shown resolves the conflict.
func (d *MemoryDoc) AppendRevision(text, device, agent string, at time.Time) (model.Revision, error) {
	return d.EditRevision("", text, device, agent, at)
}

// EditRevision records a new version of the content made from the
// revision base, as a person who read base edited it: when base is a
// leaf (or ""), as AppendRevision does; when a revision was built on base
// since, the new one is another leaf beside it, a sync conflict, as if the
// two edits had been made on two machines. A base the document does not
// hold is ErrUnknownRevision.
func (d *MemoryDoc) EditRevision(base, text, device, agent string, at time.Time) (model.Revision, error) {
	if err := checkText("text", text, "device", device, "agent", agent); err != nil {
		return model.Revision{}, err
	}
	revs, err := d.rootMap(keyRevisions)
	if err != nil {
		return model.Revision{}, err
	}
	var r reader
	all := readRevisions(&r, r.all(revs))
	if err := r.done(); err != nil {
		return model.Revision{}, err
	}
	rev := model.Revision{ID: NewID(), Text: text, Device: device, Agent: agent, At: fromMillis(millis(at))}
	tips := leaves(all)
	switch i := slices.IndexFunc(tips, func(l model.Revision) bool { return l.ID == base }); {
	case base != "" && i < 0 && !slices.ContainsFunc(all, func(r model.Revision) bool { return r.ID == base }):
		return model.Revision{}, fmt.Errorf("%w: %q", ErrUnknownRevision, base)
	case base != "" && i < 0:
		rev.Parent = base // built on since: a leaf beside the newer ones
	case len(tips) > 0:
		if i > 0 { // base first: the edit continues it, and merges the rest
			tips[0], tips[i] = tips[i], tips[0]
		}
		rev.Parent = tips[0].ID
		for _, l := range tips[1:] {
			rev.Merges = append(rev.Merges, l.ID)
		}
	}
	if err := d.putRevision(revs, rev); err != nil {
		return model.Revision{}, err
	}
	return rev, nil
}

func (d *MemoryDoc) putRevision(revs *automerge.Map, r model.Revision) error {
	m, err := d.newMap(revs, r.ID)
	if err != nil {
		return err
	}
	return d.init(m,
		field{keyText, r.Text},
		field{keyDevice, r.Device},
		field{keyAgent, r.Agent},
		field{keyAt, millis(r.At)},
		field{keyParent, r.Parent},
		field{keyMerges, strings.Join(r.Merges, ",")},
	)
}

// Commit turns the operations made since the last commit into one change
// with message msg. It does nothing if there are none.
func (d *MemoryDoc) Commit(msg string) error { return d.commit(msg) }

// Materialize returns the memory as a plain value: tags and touches
// sorted, revisions oldest first, Content the text of the newest leaf
// revision, Conflict the leaves (newest first) when there is more than
// one, and Heads sorted. Pending operations are committed first, without
// a message.
func (d *MemoryDoc) Materialize() (model.Memory, error) {
	if d.am == nil {
		return model.Memory{}, ErrClosed
	}
	var r reader
	root := r.all(d.am.RootMap())
	prov := r.mapValues(root, keyProvenance)
	m := model.Memory{
		ID:         r.str(root, keyID),
		Namespace:  r.str(root, keyNamespace),
		Title:      r.str(root, keyTitle),
		Kind:       r.str(root, keyKind),
		Tags:       r.set(root, keyTags),
		Touches:    r.set(root, keyTouches),
		Tier:       model.Tier(r.str(root, keyTier)),
		Confidence: r.float(root, keyConfidence),
		Evergreen:  r.bool(root, keyEvergreen),
		ExpiresAt:  r.time(root, keyExpiresAt),
		Provenance: model.Provenance{
			Device:      r.str(prov, keyDevice),
			Agent:       r.str(prov, keyAgent),
			Session:     r.str(prov, keySession),
			CreatedAt:   r.time(prov, keyCreatedAt),
			UpdatedAt:   r.time(prov, keyUpdatedAt),
			ConfirmedAt: r.time(prov, keyConfirmedAt),
			ConfirmedBy: r.str(prov, keyConfirmedBy),
		},
	}
	m.Status, m.CompactedInto = parseStatus(r.str(root, keyStatus))
	m.Revisions = readRevisions(&r, r.mapValues(root, keyRevisions))
	if err := r.done(); err != nil {
		return model.Memory{}, err
	}
	if err := checkMemory(&m); err != nil {
		return model.Memory{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	tips := leaves(m.Revisions)
	if len(tips) == 0 {
		return model.Memory{}, fmt.Errorf("%w: no current revision", ErrMalformed)
	}
	m.Content = tips[0].Text
	if len(tips) > 1 {
		m.Conflict = tips
	}
	m.Heads = d.heads()
	return m, nil
}

// readRevisions reads the values of the revisions map, oldest first.
func readRevisions(r *reader, vals values) []model.Revision {
	revs := make([]model.Revision, 0, len(vals))
	for id := range vals {
		if !ValidID(id) && r.err == nil {
			r.err = fmt.Errorf("%w: revision id %q", ErrMalformed, id)
		}
		f := r.mapValues(vals, id)
		revs = append(revs, model.Revision{
			ID:     id,
			Parent: r.str(f, keyParent),
			Merges: r.list(f, keyMerges),
			Text:   r.str(f, keyText),
			Device: r.str(f, keyDevice),
			Agent:  r.str(f, keyAgent),
			At:     r.time(f, keyAt),
		})
	}
	orderRevisions(revs)
	return revs
}

// orderRevisions sorts revs oldest first: each after the revisions it was
// built on (its parent and those it merges), and otherwise by At, then by
// ID. An edit can bear an At before its parent's: two edits within one
// millisecond, or another machine's clock.
func orderRevisions(revs []model.Revision) {
	slices.SortFunc(revs, compareRevisions)
	if len(revs) < 2 {
		return
	}
	pos := make(map[string]int, len(revs))
	for i, r := range revs {
		pos[r.ID] = i
	}
	// ancestors calls f with the position of each revision r was built on.
	ancestors := func(r model.Revision, f func(j int)) {
		if j, ok := pos[r.Parent]; ok {
			f(j)
		}
		for _, id := range r.Merges {
			if j, ok := pos[id]; ok {
				f(j)
			}
		}
	}
	sorted := true
	for i, r := range revs {
		ancestors(r, func(j int) { sorted = sorted && j < i })
	}
	if sorted {
		return
	}
	waits := make([]int, len(revs))   // the ancestors of each not yet placed
	after := make([][]int, len(revs)) // the revisions built on each
	for i, r := range revs {
		ancestors(r, func(j int) {
			if j != i {
				after[j] = append(after[j], i)
				waits[i]++
			}
		})
	}
	// Kahn's algorithm, the earliest ready revision first. Only a hostile
	// peer's document has a cycle: its revisions go last, as they were.
	ready := &positions{}
	for i := range revs {
		if waits[i] == 0 {
			heap.Push(ready, i)
		}
	}
	order := make([]model.Revision, 0, len(revs))
	placed := make([]bool, len(revs))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order, placed[i] = append(order, revs[i]), true
		for _, k := range after[i] {
			if waits[k]--; waits[k] == 0 {
				heap.Push(ready, k)
			}
		}
	}
	for i, r := range revs {
		if !placed[i] {
			order = append(order, r)
		}
	}
	copy(revs, order)
}

// compareRevisions orders revisions by At, then by ID.
func compareRevisions(a, b model.Revision) int {
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// positions is a min-heap of positions in a slice.
type positions []int

func (h positions) Len() int           { return len(h) }
func (h positions) Less(i, j int) bool { return h[i] < h[j] }
func (h positions) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *positions) Push(x any)        { *h = append(*h, x.(int)) }
func (h *positions) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// leaves returns the revisions that no other revision names as its parent
// or merges, newest first (by At, then by ID).
func leaves(revs []model.Revision) []model.Revision {
	built := make(map[string]bool, len(revs))
	for _, r := range revs {
		built[r.Parent] = true
		for _, id := range r.Merges {
			built[id] = true
		}
	}
	var out []model.Revision
	for _, r := range revs {
		if !built[r.ID] {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b model.Revision) int { return compareRevisions(b, a) })
	return out
}

// Heads returns the document's heads as sorted hex strings. Pending
// operations are committed first, without a message.
func (d *MemoryDoc) Heads() []string { return d.heads() }

// Save returns the whole document in Automerge's binary format. Pending
// operations are committed first, without a message.
func (d *MemoryDoc) Save() []byte { return d.save() }

// Merge applies the changes of other that d lacks. Both documents must
// be of the same memory. If Automerge refuses the changes
// (ErrUnmergeable; see document.merge), d is closed.
func (d *MemoryDoc) Merge(other *MemoryDoc) error { return d.merge(&other.document) }

// Fork returns an independent copy of d that makes changes as actor.
func (d *MemoryDoc) Fork(actor string) (*MemoryDoc, error) {
	f, err := d.fork(actor)
	if err != nil {
		return nil, err
	}
	return &MemoryDoc{f}, nil
}

// Close releases the document; see the package documentation. It is safe
// to call more than once.
func (d *MemoryDoc) Close() { d.close() }

// checkMemory checks the fields of m that have rules. Revisions are not
// checked; Content is checked by the caller where it matters.
func checkMemory(m *model.Memory) error {
	if err := checkID("memory", m.ID); err != nil {
		return err
	}
	if !m.Tier.Valid() {
		return fmt.Errorf("%w: %q", ErrInvalidTier, m.Tier)
	}
	if err := checkStatus(m.Status, m.CompactedInto); err != nil {
		return err
	}
	if err := checkUnit("confidence", m.Confidence); err != nil {
		return err
	}
	err := checkText(
		"namespace", m.Namespace,
		"title", m.Title,
		"kind", m.Kind,
		"provenance.device", m.Provenance.Device,
		"provenance.agent", m.Provenance.Agent,
		"provenance.session", m.Provenance.Session,
		"provenance.confirmed_by", m.Provenance.ConfirmedBy,
	)
	if err != nil {
		return err
	}
	if err := checkElems(keyTags, m.Tags); err != nil {
		return err
	}
	return checkElems(keyTouches, m.Touches)
}

// checkRevisions checks revisions given to NewMemoryDoc: valid, unique
// ids, valid references, UTF-8 text, and at least one leaf.
func checkRevisions(revs []model.Revision) error {
	seen := make(map[string]bool, len(revs))
	for _, r := range revs {
		if err := checkID("revision", r.ID); err != nil {
			return err
		}
		if seen[r.ID] {
			return fmt.Errorf("%w: revision %s appears twice", ErrInvalidID, r.ID)
		}
		seen[r.ID] = true
		for _, ref := range append([]string{r.Parent}, r.Merges...) {
			if ref != "" && !ValidID(ref) {
				return fmt.Errorf("%w: revision %s refers to %q", ErrInvalidID, r.ID, ref)
			}
		}
		if err := checkText("text", r.Text, "device", r.Device, "agent", r.Agent); err != nil {
			return err
		}
	}
	if len(leaves(revs)) == 0 {
		return fmt.Errorf("%w: revisions form a cycle", ErrInvalidID)
	}
	return nil
}

func checkStatus(s model.Status, compactedInto string) error {
	if !s.Valid() {
		return fmt.Errorf("%w: %q", ErrInvalidStatus, s)
	}
	if s == model.StatusCompacted {
		return checkID("compacted_into", compactedInto)
	}
	if compactedInto != "" {
		return fmt.Errorf("%w: compacted_into is only for status %q, not %q", ErrInvalidStatus, model.StatusCompacted, s)
	}
	return nil
}

// checkUnit checks that x is a number in [0, 1].
func checkUnit(what string, x float64) error {
	if math.IsNaN(x) || x < 0 || x > 1 {
		return fmt.Errorf("%w: %s %v", ErrInvalidNumber, what, x)
	}
	return nil
}
