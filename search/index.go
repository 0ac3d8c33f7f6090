package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	bsearch "github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/memmesh/memmesh/model"
)

// Errors returned by Index methods.
var (
	ErrClosed       = errors.New("search: index closed")
	ErrInvalidQuery = errors.New("search: invalid query")
)

// Field names in the index.
const (
	fieldTitle       = "title"   // title and tags, analyzerText
	fieldContent     = "content" // analyzerText
	fieldWhen        = "when"    // month and year the memory was learned, analyzerText
	fieldSession     = "session" // keyword, stored
	fieldAsks        = "asks"    // keyword, stored: "yes" when the memory asks a question
	fieldTags        = "tags"    // keyword
	fieldDevices     = "devices" // keyword: the devices that wrote the memory
	fieldNamespace   = "namespace"
	fieldKind        = "kind"
	fieldStatus      = "status"
	fieldTier        = "tier"
	fieldConfidence  = "confidence"
	fieldUpdated     = "updated"
	fieldExpires     = "expires"
	fieldUpdatedKey  = "updated_key"
	fieldUpdatedDay  = "updated_day"
	fieldUpdatedHour = "updated_hour"
)

// Internal (non-document) keys.
var (
	watermarkKey = []byte("memmesh.watermark")
	schemaKey    = []byte("memmesh.schema")
)

// schemaVersion changes whenever the mapping or the analysis changes. An
// index with another version is removed and recreated empty, so that its
// watermark (0) makes the caller rebuild it from storage.
const schemaVersion = "8"

// Time bounds of indexed datetimes. Bleve stores datetimes as Unix
// nanoseconds, which end in 2262.
var (
	minTime   = time.Unix(0, 0).UTC()
	farFuture = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// whenLayout writes the when field: month and year.
const whenLayout = "January 2006"

// isWhen reports whether term can match the when field: a month or a
// year. Other terms skip the field, which saves a clause per term.
func (ix *Index) isWhen(term string) bool {
	if ix.months[term] {
		return true
	}
	if len(term) != 4 {
		return false
	}
	for _, r := range term {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// closeFlushTimeout bounds how long Close waits for the background
// persister. What is not flushed is rebuilt from storage, as after a crash.
const closeFlushTimeout = 10 * time.Second

// runtimeConfig is the scorch configuration of an open index.
//
// unsafe_batch makes Batch return once the batch is searchable instead of
// waiting for the persister to write and fsync it; the persister still
// writes every snapshot with its segments and internal values (the
// watermark) together.
//
// PersisterNapTimeMSec (Options.FlushDelay) lets the persister wait
// between snapshots, so that the small segments of consecutive batches are
// merged in memory and written once, as bleve advises for unsafe_batch; a
// second cuts the CPU cost of bulk indexing by about a third. Close waits
// for the nap to end.
//
// asyncErrorCallbackName makes scorch call writeFailed when its persister
// or merger cannot write (persist.go).
func runtimeConfig(flushDelay time.Duration) map[string]any {
	return map[string]any{
		"unsafe_batch":           true,
		"scorchPersisterOptions": map[string]any{"PersisterNapTimeMSec": flushDelay.Milliseconds()},
		"asyncErrorCallbackName": writeFailedCallback,
	}
}

// defaultFlushDelay is Options.FlushDelay's default.
const defaultFlushDelay = time.Second

// Options configures an Index.
type Options struct {
	Logger   *slog.Logger  // nil: discard
	HalfLife time.Duration // recency half-life, 0: 30 days
	// FlushDelay is how long the index gathers batches in memory before
	// it writes them to disk (they are searchable at once either way):
	// longer costs less CPU under a stream of writes, and Close waits for
	// it. 0 means a second; negative writes each batch at once.
	FlushDelay time.Duration
}

// Index is a full-text index of memories. Its methods are safe for
// concurrent use.
type Index struct {
	idx      bleve.Index
	log      *slog.Logger
	halfLife time.Duration
	text     analysis.Analyzer // analyzerText, for query text
	months   map[string]bool   // month names through analyzerText
	words    analysis.Analyzer // analyzerWords: the words of query text, unstemmed

	closed atomic.Bool
	cache  storedCache

	mu sync.Mutex // serialises Apply and Close
	// persisted is closed once the last applied batch is on disk.
	persisted chan struct{}
	// writeFailing is set while scorch fails to write (writeFailed).
	writeFailing atomic.Bool
	closing      chan struct{} // closed by Close
	dir          string
}

// Open opens the index in dir, creating it if dir holds none.
func Open(dir string, opts Options) (*Index, error) {
	if opts.HalfLife < 0 {
		return nil, fmt.Errorf("search: negative half-life %v", opts.HalfLife)
	}
	if opts.HalfLife == 0 {
		opts.HalfLife = defaultHalfLife
	}
	switch {
	case opts.FlushDelay == 0:
		opts.FlushDelay = defaultFlushDelay
	case opts.FlushDelay < 0:
		opts.FlushDelay = 0
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "search")

	idx, err := openOrCreate(dir, runtimeConfig(opts.FlushDelay), log)
	if err != nil {
		return nil, fmt.Errorf("search: open %s: %w", dir, err)
	}
	ix := &Index{idx: idx, log: log, halfLife: opts.HalfLife, closing: make(chan struct{}), dir: dir}
	ix.text = idx.Mapping().AnalyzerNamed(analyzerText)
	ix.words = idx.Mapping().AnalyzerNamed(analyzerWords)
	if ix.text == nil || ix.words == nil {
		_ = idx.Close()
		return nil, fmt.Errorf("search: open %s: analyzers missing from mapping", dir)
	}
	ix.months = map[string]bool{}
	for m := time.January; m <= time.December; m++ {
		for _, t := range terms(ix.text, m.String()) {
			ix.months[t] = true
		}
	}
	openIndexes.Store(scorchPath(dir), ix)
	return ix, nil
}

func openOrCreate(dir string, config map[string]any, log *slog.Logger) (bleve.Index, error) {
	idx, err := bleve.OpenUsing(dir, config)
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) || errors.Is(err, bleve.ErrorIndexMetaMissing) {
		return create(dir, config)
	}
	if err != nil {
		return nil, err
	}
	version, err := idx.GetInternal(schemaKey)
	if err != nil {
		_ = idx.Close()
		return nil, err
	}
	if string(version) == schemaVersion {
		return idx, nil
	}
	log.Info("search index schema changed, recreating it", "dir", dir,
		"old", string(version), "new", schemaVersion)
	if err := idx.Close(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	return create(dir, config)
}

// create makes a new index in dir. It is created with scorch's default,
// synchronous batches so that the mapping and the schema version are on
// disk before the first use, then reopened with config.
func create(dir string, config map[string]any) (bleve.Index, error) {
	m, err := newMapping()
	if err != nil {
		return nil, err
	}
	idx, err := bleve.NewUsing(dir, m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, err
	}
	if err := idx.SetInternal(schemaKey, []byte(schemaVersion)); err != nil {
		_ = idx.Close()
		return nil, err
	}
	if err := idx.Close(); err != nil {
		return nil, err
	}
	return bleve.OpenUsing(dir, config)
}

// lengthNormalisation is BM25's b. Bleve's default, 0.75, favours short
// documents strongly; memories range from a line to a few paragraphs, and
// the line that matches two query words is rarely better than the
// paragraph that explains them. Bleve keeps b in a package variable, so it
// holds for every index of the process.
const lengthNormalisation = 0.3

func init() { bsearch.BM25_b = lengthNormalisation }

func newMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	im.DefaultAnalyzer = analyzerText
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	if err := addAnalyzers(im); err != nil {
		return nil, err
	}

	dm := bleve.NewDocumentStaticMapping()
	dm.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())
	dm.AddFieldMappingsAt("title", textField(fieldTitle))
	dm.AddFieldMappingsAt("body", textField(fieldContent))
	dm.AddFieldMappingsAt("tags", keywordField(fieldTags, false), textField(fieldTitle))
	dm.AddFieldMappingsAt("when", &mapping.FieldMapping{
		Name: fieldWhen, Type: "text", Analyzer: analyzerText, Index: true,
	})
	dm.AddFieldMappingsAt("session", keywordField(fieldSession, true))
	dm.AddFieldMappingsAt("asks", keywordField(fieldAsks, true))
	dm.AddFieldMappingsAt("devices", keywordField(fieldDevices, false))
	dm.AddFieldMappingsAt("namespace", keywordField(fieldNamespace, false))
	dm.AddFieldMappingsAt("kind", keywordField(fieldKind, false))
	dm.AddFieldMappingsAt("status", keywordField(fieldStatus, true))
	dm.AddFieldMappingsAt("tier", keywordField(fieldTier, true))
	dm.AddFieldMappingsAt("confidence", &mapping.FieldMapping{
		Name: fieldConfidence, Type: "number", Store: true,
	})
	// The update time is stored for ranking but not indexed as a
	// datetime: that has 16 terms per value, 11 of them unique to the
	// memory among a year of memories, which cost a third of the CPU of
	// indexing a batch. Listing sorts on updated_key; a since/until
	// window matches the whole days inside it in updated_day, the whole
	// hours left at its ends in updated_hour and the rest in updated_key
	// (updatedWindow): three terms per memory, two of them shared.
	dm.AddFieldMappingsAt("updated", &mapping.FieldMapping{
		Name: fieldUpdated, Type: "datetime", Store: true,
	})
	dm.AddFieldMappingsAt("updated_key", &mapping.FieldMapping{
		Name: fieldUpdatedKey, Type: "text", Analyzer: keyword.Name, Index: true, DocValues: true, SkipFreqNorm: true,
	})
	dm.AddFieldMappingsAt("updated_day", keywordField(fieldUpdatedDay, false))
	dm.AddFieldMappingsAt("updated_hour", keywordField(fieldUpdatedHour, false))
	dm.AddFieldMappingsAt("expires", &mapping.FieldMapping{
		Name: fieldExpires, Type: "datetime", Index: true,
	})
	im.DefaultMapping = dm
	return im, nil
}

// textField is an English text field; positions are kept for phrases.
func textField(name string) *mapping.FieldMapping {
	return &mapping.FieldMapping{
		Name: name, Type: "text", Analyzer: analyzerText, Index: true, IncludeTermVectors: true,
	}
}

// keywordField is an exact-match field for filters; stored when ranking
// reads it.
func keywordField(name string, store bool) *mapping.FieldMapping {
	return &mapping.FieldMapping{
		Name: name, Type: "text", Analyzer: keyword.Name, Index: true, Store: store, SkipFreqNorm: true,
	}
}

// document is what bleve indexes for a memory; its json names are the
// mapping's property names.
type document struct {
	Title       string     `json:"title"`
	Body        string     `json:"body"` // title, tags and content
	When        string     `json:"when"`
	Session     string     `json:"session"`
	Asks        string     `json:"asks,omitempty"` // asksYes or empty
	Tags        []string   `json:"tags"`
	Devices     []string   `json:"devices"` // devicesOf the memory
	Namespace   string     `json:"namespace"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Tier        string     `json:"tier"`
	Confidence  float64    `json:"confidence"`
	Updated     time.Time  `json:"updated"`
	Expires     *time.Time `json:"expires,omitempty"` // nil: never expires
	UpdatedKey  string     `json:"updated_key"`       // timeKey(Updated) + id: the listing's order
	UpdatedDay  string     `json:"updated_day"`       // timeKey of the start of its day
	UpdatedHour string     `json:"updated_hour"`      // timeKey of the start of its hour
}

func newDocument(m *model.Memory) document {
	var expires *time.Time
	if !m.ExpiresAt.IsZero() {
		t := clampTime(m.ExpiresAt)
		expires = &t
	}
	updated := clampTime(m.Provenance.UpdatedAt)
	title := m.Title
	if strings.HasPrefix(m.Content, strings.TrimSuffix(title, "…")) {
		// A title taken from the content's first line says nothing more;
		// indexed, it would count those words twice.
		title = ""
	}
	return document{
		Title:       title,
		Body:        strings.Join(append(append([]string{title}, m.Tags...), m.Content), "\n"),
		When:        m.Provenance.CreatedAt.Format(whenLayout),
		Session:     m.Provenance.Session,
		Asks:        asksOf(m.Content),
		Tags:        m.Tags,
		Devices:     devicesOf(m),
		Namespace:   m.Namespace,
		Kind:        m.Kind,
		Status:      string(m.Status),
		Tier:        string(m.Tier),
		Confidence:  m.Confidence,
		Updated:     updated,
		Expires:     expires,
		UpdatedKey:  timeKey(updated) + m.ID,
		UpdatedDay:  timeKey(floor(updated, day)),
		UpdatedHour: timeKey(floor(updated, time.Hour)),
	}
}

// devicesOf returns the devices that wrote m, its provenance's and its
// revisions', each once: what a device filter matches.
func devicesOf(m *model.Memory) []string {
	out := make([]string, 0, 1)
	add := func(d string) {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	add(m.Provenance.Device)
	for _, r := range m.Revisions {
		add(r.Device)
	}
	return out
}

// day is the unit of updated_day: days start at midnight UTC.
const day = 24 * time.Hour

// timeKey is the keyword term of t (within minTime..farFuture): its Unix
// nanoseconds in timeKeyLen decimal digits, which sort as the times do.
func timeKey(t time.Time) string { return fmt.Sprintf("%019d", t.UnixNano()) }

// timeKeyLen is the length of a timeKey.
const timeKeyLen = 19

// floor returns the start of the unit of time that holds t (within
// minTime..farFuture); units start at the epoch.
func floor(t time.Time, unit time.Duration) time.Time {
	ns := t.UnixNano()
	return time.Unix(0, ns-ns%int64(unit)).UTC()
}

// asksYes is the asks field of a memory that asks a question.
const asksYes = "yes"

// question is a question mark that ends a sentence: followed by a space,
// a closing quote or bracket, or the end of the text, so that the query
// string of a URL does not count.
var question = regexp.MustCompile(`\?+(["'”’)\]]*)(\s|$)`)

// asksOf returns asksYes when text asks a question, else "".
func asksOf(text string) string {
	if question.MatchString(text) {
		return asksYes
	}
	return ""
}

// clampTime brings t into the range bleve can index.
func clampTime(t time.Time) time.Time {
	if t.Before(minTime) {
		return minTime
	}
	if t.After(farFuture) {
		return farFuture
	}
	return t
}

// Close waits up to closeFlushTimeout for applied batches to reach the
// disk, unless writing them is failing, then closes the index.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed.Swap(true) {
		return nil
	}
	close(ix.closing)
	defer openIndexes.Delete(scorchPath(ix.dir))
	if ix.writeFailing.Load() {
		ix.log.Warn("search index closed before its last changes reached the disk; storage will catch it up")
	} else if ix.persisted != nil {
		select {
		case <-ix.persisted:
		case <-time.After(closeFlushTimeout):
			ix.log.Warn("search index not flushed before close; storage will catch it up",
				"timeout", closeFlushTimeout)
		}
	}
	if err := ix.idx.Close(); err != nil {
		return fmt.Errorf("search: close: %w", err)
	}
	return nil
}

// Apply indexes the memories in put (removing those whose status is
// deleted), removes the ids in del, and records watermark, all in one
// batch: the watermark reaches the disk in the same snapshot as the
// changes it covers. Apply returns once the changes are searchable; they
// are written to disk in the background. Bad input changes nothing.
func (ix *Index) Apply(put []model.Memory, del []string, watermark uint64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed.Load() {
		return ErrClosed
	}
	b := ix.idx.NewBatch()
	indexed := make(map[string]stored, len(put))
	removed := slices.Clone(del)
	for i := range put {
		m := &put[i]
		if m.ID == "" {
			return fmt.Errorf("search: apply: memory %d of %d has no id", i, len(put))
		}
		if m.Status == model.StatusDeleted {
			removed = append(removed, m.ID)
			continue
		}
		d := newDocument(m)
		if err := b.Index(m.ID, d); err != nil {
			return fmt.Errorf("search: apply: index %s: %w", m.ID, err)
		}
		indexed[m.ID] = storedOf(&d)
	}
	for _, id := range removed {
		if id == "" {
			return errors.New("search: apply: empty id to delete")
		}
		b.Delete(id)
	}
	b.SetInternal(watermarkKey, binary.BigEndian.AppendUint64(nil, watermark))
	persisted := make(chan struct{})
	b.SetPersistedCallback(func(error) {
		ix.writeFailing.Store(false)
		close(persisted)
	})
	if err := ix.idx.Batch(b); err != nil {
		return bleveError("apply", err)
	}
	ix.persisted = persisted
	ix.cache.applied(indexed, removed)
	return nil
}

// Watermark returns the watermark of the last Apply; after Open, the one
// persisted with the data on disk. It is 0 for a new index.
func (ix *Index) Watermark() (uint64, error) {
	v, err := ix.idx.GetInternal(watermarkKey)
	if err != nil {
		return 0, bleveError("watermark", err)
	}
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("search: watermark: %d bytes, want 8", len(v))
}

// Count returns the number of indexed memories.
func (ix *Index) Count() (uint64, error) {
	n, err := ix.idx.DocCount()
	if err != nil {
		return 0, bleveError("count", err)
	}
	return n, nil
}

// Devices returns the devices that wrote indexed memories (Query.Device)
// whose ids start with prefix, in order, at most limit of them. A device
// whose memories were all removed may stay listed until its segments
// merge.
func (ix *Index) Devices(prefix string, limit int) ([]string, error) {
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	dict, err := ix.idx.FieldDictPrefix(fieldDevices, []byte(prefix))
	if err != nil {
		return nil, bleveError("devices", err)
	}
	defer dict.Close()
	var out []string
	for len(out) < limit {
		e, err := dict.Next()
		if err != nil {
			return nil, bleveError("devices", err)
		}
		if e == nil {
			break
		}
		out = append(out, e.Term)
	}
	return out, nil
}

// reader returns a reader of the index's current snapshot, for op; the
// caller closes it.
func (ix *Index) reader(op string) (index.IndexReader, error) {
	adv, err := ix.idx.Advanced()
	if err != nil {
		return nil, bleveError(op, err)
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, bleveError(op, err)
	}
	return r, nil
}

// bleveError adds op to an error from bleve, reporting a closed index as
// ErrClosed.
func bleveError(op string, err error) error {
	if errors.Is(err, bleve.ErrorIndexClosed) {
		return ErrClosed
	}
	return fmt.Errorf("search: %s: %w", op, err)
}
