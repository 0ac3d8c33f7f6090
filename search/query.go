package search

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// Query limits. Text is bounded before any analysis: the work a query
// costs grows with its words and terms, and the typo-tolerant pass builds
// Levenshtein automata per word (one for its stem and each probe prefix,
// spell.go) whose size grows with the word (vellum
// reserves 1 KiB per possible state, about 34 KiB per character at two
// edits: one 60 KB word asked for gigabytes).
const (
	DefaultLimit  = 10 // results of a query without a limit
	maxLimit      = 1000
	MaxQueryBytes = 4096 // bytes of query text
	MaxQueryWords = 64   // whitespace-separated words of query text
	maxWordBytes  = 256  // bytes of one word
	maxPhrases    = 16   // "quoted" phrases
	maxQueryTerms = 128  // distinct terms once analysed (identifier parts count)
	// The typo-tolerant pass matches with edits only the first
	// maxFuzzyWords words of at most maxFuzzyRunes characters; longer
	// words, and those after them, are matched exactly.
	maxFuzzyRunes = 24
	maxFuzzyWords = 8
)

// Match kinds reported in Explanation.Match.
const (
	MatchTerms  = "terms"  // query terms, ranked by BM25
	MatchPhrase = "phrase" // the query had phrases, all of which matched
	MatchFuzzy  = "fuzzy"  // the typo-tolerant fallback
	MatchFilter = "filter" // no query text: filters only, newest first
)

// Query is a search over the index.
type Query struct {
	Text      string         // user query; "double-quoted parts" are phrase queries; the rest, and text after an unmatched quote, are terms
	Namespace string         // "" = all
	Tags      []string       // every tag must be present
	Kind      string         // "" = all
	IDs       []string       // only these memories; nil = all
	Statuses  []model.Status // nil = active and stale
	Tiers     []model.Tier   // nil = all
	Device    string         // "" = all; else a device id that wrote the memory (Devices lists them)
	Since     time.Time      // updated at or after; zero = open
	Until     time.Time      // updated before; zero = open
	Limit     int            // 0 = 10; capped at 1000
	// After, in a listing (a query without text), starts the list after
	// this place in it; nil starts from the newest.
	After   *api.Cursor
	Explain bool
	Now     time.Time // for recency and expiry; zero = time.Now()
	// Derived, when set, gives what the caller derives about a memory
	// and the index does not store (see Derived); it must be cheap and
	// safe for concurrent use.
	Derived func(id string) Derived
	// Feedback, when set, returns the texts of the memories ids, in
	// order (nil when one cannot be read), so that the words the best
	// matches share with each other find the memories that say the same
	// in other words (pseudo-relevance feedback, feedback.go).
	Feedback func(ids []string) []string
	// Near, when set, holds the memories whose vectors are nearest the
	// query's, best first: search by meaning, fused with the matches of
	// the words (meaning.go). Only a query with text uses it.
	Near []Near
}

// Derived is what a node derives locally about a memory, outside the
// index, and feeds into its ranking.
type Derived struct {
	Stale    bool    // stale by a derived rule: weighs as status stale
	Decay    float64 // confidence decay factor in (0, 1]; 0 means 1
	Maturity float64 // multiplier for how much the memory is used; 0 means 1
}

// Result is the outcome of a search.
type Result struct {
	Hits  []Hit
	Fuzzy bool   // true when no exact hits existed and the typo-tolerant fallback produced these
	Loose bool   // true when no memory held every quoted phrase and these match their words, loose
	Total uint64 // matching documents before Limit
	// Next, for a listing that filled its limit, is the place of its last
	// hit: Query.After for the next page.
	Next *api.Cursor
}

// Hit is one matching memory.
type Hit struct {
	ID      string
	Score   float64
	Session string // the session that wrote the memory, if any
	Asks    bool   // the memory asks a question: what follows it in its session may answer
	// Semantic is the cosine of a memory near the query by meaning
	// (Query.Near); 0 for one that is not. Explain's match says whether
	// the words found it too.
	Semantic float64
	Explain  *api.Explanation // when Query.Explain
}

// rankFields are the stored fields read for reranking.
var rankFields = []string{fieldTier, fieldStatus, fieldConfidence, fieldUpdated, fieldSession, fieldAsks}

// plan is a validated, analysed Query.
type plan struct {
	limit   int
	now     time.Time
	explain bool
	derived func(id string) Derived
	texts   func(ids []string) []string

	// Constraints that do not score. A memory matches when it matches
	// every include and no exclude.
	include []query.Query
	exclude []query.Query

	hasText bool
	after   *api.Cursor
	terms   []string        // loose terms through analyzerText
	when    map[string]bool // those of terms that can match the when field
	words   []string        // loose terms through analyzerWords
	phrases []string        // phrases with at least one indexed token
}

// Search runs q. Query text is never parsed as bleve query syntax: only
// double quotes are special.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	if ix.closed.Load() {
		return Result{}, ErrClosed
	}
	p, err := ix.plan(q)
	if err != nil {
		return Result{}, err
	}
	if !p.hasText {
		return ix.list(ctx, p)
	}
	res, strong, err := ix.byWords(ctx, p)
	if err != nil || len(q.Near) == 0 {
		return res, err
	}
	return ix.withMeaning(ctx, p, res, q.Near, strong)
}

// byWords ranks the memories that match the words of p; strong reports
// that they hold every term (or every phrase) of the query.
func (ix *Index) byWords(ctx context.Context, p *plan) (res Result, strong bool, err error) {
	res, found, strong, err := ix.searchWords(ctx, p)
	if err != nil || found {
		res, err = ix.feedbackOn(ctx, p, res, err)
		return res, strong, err
	}
	if len(p.phrases) > 0 {
		// No memory holds every quoted phrase: their words, loose, may
		// still find what was meant (a title misremembered by a letter).
		// Quoted words stay exact: no typo-tolerant pass follows.
		if !ix.loosen(p) {
			return Result{Hits: []Hit{}}, false, nil
		}
		res, found, _, err = ix.searchWords(ctx, p)
		if err != nil || !found {
			return Result{Hits: []Hit{}}, false, err
		}
		res, err = ix.feedback(ctx, p, res)
		res.Loose = true
		return res, false, err
	}
	fuzzy, err := ix.fuzzyQuery(ctx, p)
	if err != nil || fuzzy == nil {
		return Result{Hits: []Hit{}}, false, err
	}
	res, _, err = ix.rank(ctx, p, fuzzy, MatchFuzzy)
	res.Fuzzy = len(res.Hits) > 0
	return res, false, err
}

// searchWords ranks the memories that hold every loose term, when there
// are enough of them, else those that hold any; found reports that it
// found any, strong that some hold every term. Phrases are required in
// both.
func (ix *Index) searchWords(ctx context.Context, p *plan) (res Result, found, strong bool, err error) {
	match := MatchTerms
	if len(p.phrases) > 0 {
		match = MatchPhrase
	}
	if all := p.allTermsQuery(); all != nil {
		res, full, err := ix.rank(ctx, p, all, match)
		if err != nil || full {
			return res, true, true, err
		}
		strong = len(res.Hits) > 0
	}
	if exact := p.exactQuery(); exact != nil {
		res, _, err := ix.rank(ctx, p, exact, match)
		found = len(res.Hits) > 0
		return res, found, found && (strong || len(p.terms) < 2), err
	}
	return Result{}, false, false, nil
}

// loosen turns the phrases of p into loose terms. It reports false, and
// changes nothing, when they would take the terms past maxQueryTerms.
func (ix *Index) loosen(p *plan) bool {
	loose, words := slices.Clone(p.terms), slices.Clone(p.words)
	for _, ph := range p.phrases {
		loose = appendNew(loose, terms(ix.text, ph))
		words = appendNew(words, terms(ix.words, ph))
	}
	if len(loose) > maxQueryTerms {
		return false
	}
	p.terms, p.words, p.phrases = loose, words, nil
	for _, t := range p.terms {
		p.when[t] = ix.isWhen(t)
	}
	return true
}

// appendNew appends to dst the elements of src it does not hold.
func appendNew(dst, src []string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// feedbackOn adds the feedback pass to res unless err is set.
func (ix *Index) feedbackOn(ctx context.Context, p *plan, res Result, err error) (Result, error) {
	if err != nil {
		return res, err
	}
	return ix.feedback(ctx, p, res)
}

// plan validates q and analyses its text.
func (ix *Index) plan(q Query) (*plan, error) {
	if q.Limit < 0 {
		return nil, fmt.Errorf("%w: negative limit %d", ErrInvalidQuery, q.Limit)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until) {
		return nil, fmt.Errorf("%w: since %v is after until %v", ErrInvalidQuery, q.Since, q.Until)
	}
	p := &plan{limit: q.Limit, now: q.Now, explain: q.Explain, derived: q.Derived, texts: q.Feedback, after: q.After}
	if p.limit == 0 {
		p.limit = DefaultLimit
	}
	p.limit = min(p.limit, maxLimit)
	if p.now.IsZero() {
		p.now = time.Now()
	}
	if err := p.addFilters(q); err != nil {
		return nil, err
	}
	if err := ix.analyse(p, q.Text); err != nil {
		return nil, err
	}
	return p, nil
}

// CheckText checks query text against the bounds on its size, words and
// phrases; it does no analysis, so callers can refuse text early.
func CheckText(text string) error {
	if len(text) > MaxQueryBytes {
		return fmt.Errorf("%w: query is %d bytes: at most %d are allowed; search for a few words", ErrInvalidQuery, len(text), MaxQueryBytes)
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%w: text is not valid UTF-8", ErrInvalidQuery)
	}
	words := strings.Fields(text)
	if len(words) > MaxQueryWords {
		return fmt.Errorf("%w: %d words: at most %d are allowed", ErrInvalidQuery, len(words), MaxQueryWords)
	}
	for _, w := range words {
		if len(w) > maxWordBytes {
			return fmt.Errorf("%w: a word of %d bytes: words are at most %d bytes", ErrInvalidQuery, len(w), maxWordBytes)
		}
	}
	if n := strings.Count(text, `"`) / 2; n > maxPhrases {
		return fmt.Errorf("%w: %d phrases: at most %d are allowed", ErrInvalidQuery, n, maxPhrases)
	}
	return nil
}

// analyse splits text into loose terms and "phrases" and analyses both.
func (ix *Index) analyse(p *plan, text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	p.hasText = true
	if err := CheckText(text); err != nil {
		return err
	}
	parts := strings.Split(text, `"`)
	if len(parts)%2 == 0 {
		// The last quote has no partner: what follows it is loose text.
		last := len(parts) - 1
		parts[last-1] += " " + parts[last]
		parts = parts[:last]
	}
	var loose strings.Builder
	for i, part := range parts {
		if i%2 == 0 {
			loose.WriteString(part)
			loose.WriteByte(' ')
			continue
		}
		if len(ix.text.Analyze([]byte(part))) > 0 {
			p.phrases = append(p.phrases, part)
		}
	}
	p.terms = terms(ix.text, loose.String())
	if len(p.terms) > maxQueryTerms {
		return fmt.Errorf("%w: %d terms once identifiers are split: at most %d are allowed", ErrInvalidQuery, len(p.terms), maxQueryTerms)
	}
	p.when = map[string]bool{}
	for _, t := range p.terms {
		p.when[t] = ix.isWhen(t)
	}
	p.words = terms(ix.words, loose.String())
	return nil
}

// terms returns the distinct terms of text through a.
func terms(a analysis.Analyzer, text string) []string {
	var out []string
	for _, tok := range a.Analyze([]byte(text)) {
		if t := string(tok.Term); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// indexedStatuses are the statuses a memory in the index can have.
var indexedStatuses = []model.Status{model.StatusActive, model.StatusStale, model.StatusArchived, model.StatusCompacted}

// addFilters turns the filters of q into includes and excludes. Bleve
// checks a constraint for every candidate, and checking one that almost
// every memory matches (status active, not expired) costs as much as the
// text search, while excluding the few that do not is nearly free. So
// statuses are excluded by their complement when active is wanted, and
// expiry excludes the expired.
func (p *plan) addFilters(q Query) error {
	if q.Namespace != "" {
		p.include = append(p.include, termQuery(fieldNamespace, q.Namespace))
	}
	if q.Kind != "" {
		p.include = append(p.include, termQuery(fieldKind, q.Kind))
	}
	if q.Device != "" {
		p.include = append(p.include, termQuery(fieldDevices, q.Device))
	}
	if q.IDs != nil {
		p.include = append(p.include, query.NewDocIDQuery(q.IDs))
	}
	for _, tag := range q.Tags {
		if tag == "" {
			return fmt.Errorf("%w: empty tag", ErrInvalidQuery)
		}
		p.include = append(p.include, termQuery(fieldTags, tag))
	}

	statuses := q.Statuses
	if len(statuses) == 0 {
		statuses = []model.Status{model.StatusActive, model.StatusStale}
	}
	for _, s := range statuses {
		if !s.Valid() {
			return fmt.Errorf("%w: unknown status %q", ErrInvalidQuery, s)
		}
	}
	if slices.Contains(statuses, model.StatusActive) {
		for _, s := range indexedStatuses {
			if !slices.Contains(statuses, s) {
				p.exclude = append(p.exclude, termQuery(fieldStatus, string(s)))
			}
		}
	} else {
		p.include = append(p.include, anyTerm(fieldStatus, statuses))
	}

	for _, t := range q.Tiers {
		if !t.Valid() {
			return fmt.Errorf("%w: unknown tier %q", ErrInvalidQuery, t)
		}
	}
	if len(q.Tiers) > 0 {
		p.include = append(p.include, anyTerm(fieldTier, q.Tiers))
	}

	if !q.Since.IsZero() || !q.Until.IsZero() {
		var since, until time.Time
		if !q.Since.IsZero() {
			since = clampTime(q.Since)
		}
		if !q.Until.IsZero() {
			until = clampTime(q.Until)
		}
		p.include = append(p.include, updatedWindow(since, until))
	}
	p.exclude = append(p.exclude, dateRange(fieldExpires, minTime, true, clampTime(p.now), true))
	return nil
}

func termQuery(field, term string) query.Query {
	q := query.NewTermQuery(term)
	q.SetField(field)
	return q
}

// anyTerm matches field equal to any of values.
func anyTerm[S ~string](field string, values []S) query.Query {
	qs := make([]query.Query, len(values))
	for i, v := range values {
		qs[i] = termQuery(field, string(v))
	}
	return query.NewDisjunctionQuery(qs)
}

// dateRange matches field between start and end; a zero bound is open.
func dateRange(field string, start time.Time, startInclusive bool, end time.Time, endInclusive bool) query.Query {
	q := query.NewDateRangeInclusiveQuery(start, end, &startInclusive, &endInclusive)
	q.SetField(field)
	return q
}

// windowLevels are the units of time a since/until window is matched
// by, widest first, and the fields that hold them; updated_key holds the
// exact time.
var windowLevels = []struct {
	field string
	unit  time.Duration
}{{fieldUpdatedDay, day}, {fieldUpdatedHour, time.Hour}}

// updatedWindow matches the memories updated in [since, until) (a zero
// time leaves that end open; both within minTime..farFuture, since not
// after until): the whole days inside it by their updated_day, the whole
// hours left at its ends by their updated_hour, and the rest by the exact
// time. It reads one term per day and hour with memories inside the
// window, and one per memory of the two hours at its ends.
func updatedWindow(since, until time.Time) query.Query {
	return query.NewDisjunctionQuery(windowParts(since, until, 0, nil))
}

// windowParts appends to parts the queries that match [since, until) in
// the units of windowLevels[level] and finer.
func windowParts(since, until time.Time, level int, parts []query.Query) []query.Query {
	key := func(t time.Time) string {
		if t.IsZero() {
			return "" // open
		}
		return timeKey(t)
	}
	if level == len(windowLevels) {
		return append(parts, termRange(fieldUpdatedKey, key(since), key(until)))
	}
	unit := windowLevels[level].unit
	from, to := since, until // the whole units within the window
	if !since.IsZero() {
		if from = floor(since, unit); from.Before(since) {
			from = from.Add(unit)
		}
	}
	if !until.IsZero() {
		to = floor(until, unit)
	}
	if !since.IsZero() && !until.IsZero() && !from.Before(to) {
		return windowParts(since, until, level+1, parts) // no whole unit
	}
	parts = append(parts, termRange(windowLevels[level].field, key(from), key(to)))
	if !since.IsZero() && since.Before(from) {
		parts = windowParts(since, from, level+1, parts)
	}
	if !until.IsZero() && to.Before(until) {
		parts = windowParts(to, until, level+1, parts)
	}
	return parts
}

// termRange matches the terms of field in [from, to); "" leaves that end
// open.
func termRange(field, from, to string) query.Query {
	incl, excl := true, false
	q := query.NewTermRangeInclusiveQuery(from, to, &incl, &excl)
	q.SetField(field)
	return q
}

// constrained adds the includes of p to b as a filter and its excludes.
func (p *plan) constrained(b *query.BooleanQuery) *query.BooleanQuery {
	if len(p.include) > 0 {
		b.AddFilter(query.NewConjunctionQuery(p.include))
	}
	b.AddMustNot(p.exclude...)
	return b
}

// exactQuery matches the phrases (all required) and the loose terms (any,
// scored), or returns nil when the text has nothing to search for.
func (p *plan) exactQuery() query.Query {
	if len(p.terms)+len(p.phrases) == 0 {
		return nil
	}
	b := query.NewBooleanQuery(nil, nil, nil)
	for _, t := range p.terms {
		b.AddShould(p.termFields(t)...)
	}
	p.addPhrases(b)
	return p.constrained(b)
}

// allTermsQuery is exactQuery with every loose term required, or nil when
// there are fewer than two terms (requiring the one term changes nothing).
func (p *plan) allTermsQuery() query.Query {
	if len(p.terms) < 2 {
		return nil
	}
	b := query.NewBooleanQuery(nil, nil, nil)
	for _, t := range p.terms {
		// The content field holds the title and tags too: one term
		// query per term drives the conjunction, and the title only
		// adds its boost.
		content := boosted(query.NewTermQuery(t), fieldContent, boostContent)
		if p.when[t] {
			b.AddMust(query.NewDisjunctionQuery([]query.Query{content, boosted(query.NewTermQuery(t), fieldWhen, boostWhen)}))
		} else {
			b.AddMust(content)
		}
		b.AddShould(boosted(query.NewTermQuery(t), fieldTitle, boostTitle))
	}
	p.addPhrases(b)
	return p.constrained(b)
}

// termFields are the scored clauses of a loose term, one per text field
// it can match.
func (p *plan) termFields(t string) []query.Query {
	qs := []query.Query{
		boosted(query.NewTermQuery(t), fieldTitle, boostTitle),
		boosted(query.NewTermQuery(t), fieldContent, boostContent),
	}
	if p.when[t] {
		qs = append(qs, boosted(query.NewTermQuery(t), fieldWhen, boostWhen))
	}
	return qs
}

// addPhrases requires every phrase of p in the title or the content.
func (p *plan) addPhrases(b *query.BooleanQuery) {
	for _, ph := range p.phrases {
		b.AddMust(query.NewDisjunctionQuery([]query.Query{
			phraseQuery(ph, fieldTitle, boostTitle),
			phraseQuery(ph, fieldContent, boostContent),
		}))
	}
}

// fuzzyQuery matches, for each loose word, the stems of the words within
// fuzziness edits of it (spell.go); only the first maxFuzzyWords words
// that allow edits get them, the others match their own stems. It
// returns nil when the text has phrases (quoted text is exact, and no
// memory matched it), no word allows an edit, or no word has a stem to
// match.
func (ix *Index) fuzzyQuery(ctx context.Context, p *plan) (query.Query, error) {
	if len(p.phrases) > 0 {
		return nil, nil
	}
	words := p.fuzzyWords()
	if !slices.ContainsFunc(words, func(w fuzzyWord) bool { return w.edits > 0 }) {
		return nil, nil
	}
	r, err := ix.reader("fuzzy")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fr, ok := r.(index.IndexReaderFuzzy)
	if !ok {
		return nil, fmt.Errorf("search: fuzzy: a %T reads no term dictionary by edit distance", r)
	}
	b := query.NewBooleanQuery(nil, nil, nil)
	matched := false
	for _, w := range words {
		stems := terms(ix.text, w.word)
		if w.edits > 0 {
			if stems, err = ix.corrections(ctx, fr, w.word, w.edits); err != nil {
				return nil, err
			}
		}
		if len(stems) == 0 {
			continue
		}
		qs := make([]query.Query, len(stems))
		for i, t := range stems {
			qs[i] = boosted(query.NewTermQuery(t), fieldContent, boostContent)
		}
		b.AddShould(query.NewDisjunctionQuery(qs))
		matched = true
	}
	if !matched {
		return nil, nil
	}
	return p.constrained(b), nil
}

// fuzzyWord is a loose word of a query and the edits it is matched with.
type fuzzyWord struct {
	word  string
	edits int
}

// fuzzyWords returns the loose words with their edits: fuzziness for
// the first maxFuzzyWords words that allow one, none for the others.
func (p *plan) fuzzyWords() []fuzzyWord {
	out := make([]fuzzyWord, len(p.words))
	fuzzed := 0
	for i, w := range p.words {
		out[i].word = w
		if fuzzed < maxFuzzyWords {
			out[i].edits = fuzziness(w)
		}
		if out[i].edits > 0 {
			fuzzed++
		}
	}
	return out
}

// listQuery matches every memory that passes the filters. The includes are
// required clauses rather than a filter, so that the most selective one
// drives the iteration.
func (p *plan) listQuery() query.Query {
	b := query.NewBooleanQuery(nil, nil, nil)
	b.AddMust(p.include...)
	b.AddMustNot(p.exclude...)
	return b
}

// fuzziness is the edit distance allowed for a term: 1 from 4 characters,
// 2 from 8, none past maxFuzzyRunes.
func fuzziness(term string) int {
	switch n := utf8.RuneCountInString(term); {
	case n > maxFuzzyRunes:
		return 0
	case n >= 8:
		return 2
	case n >= 4:
		return 1
	}
	return 0
}

type fieldQuery interface {
	query.FieldableQuery
	query.BoostableQuery
}

func boosted[Q fieldQuery](q Q, field string, boost float64) Q {
	q.SetField(field)
	q.SetBoost(boost)
	return q
}

func phraseQuery(phrase, field string, boost float64) query.Query {
	q := query.NewMatchPhraseQuery(phrase)
	q.Analyzer = analyzerText
	return boosted(q, field, boost)
}

// rank runs q for enough candidates, applies the multipliers and keeps
// the best p.limit. full reports that q matched at least as many memories
// as were taken as candidates.
func (ix *Index) rank(ctx context.Context, p *plan, q query.Query, match string) (res Result, full bool, err error) {
	size := max(minCandidates, candidateFactor*p.limit)
	gen := ix.cache.generation()
	sr, err := ix.idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(q, size, 0, false))
	if err != nil {
		return Result{}, false, bleveError("query", err)
	}
	fields, err := ix.storedFields(ctx, gen, sr.Hits)
	if err != nil {
		return Result{}, false, err
	}
	hits := make([]Hit, 0, len(sr.Hits))
	for i, h := range sr.Hits {
		e := explain(h.Score, p.rankInputs(h.ID, fields[i]), p.now, ix.halfLife, match)
		hit := Hit{ID: h.ID, Score: e.Final, Session: fields[i].session, Asks: fields[i].asks}
		if p.explain {
			hit.Explain = &e
		}
		hits = append(hits, hit)
	}
	// Stable: equal scores keep bleve's order.
	slices.SortStableFunc(hits, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
	return Result{Hits: hits[:min(len(hits), p.limit)], Total: sr.Total}, sr.Total >= uint64(size), nil
}

// list returns the memories matching the filters, newest first.
func (ix *Index) list(ctx context.Context, p *plan) (Result, error) {
	req := bleve.NewSearchRequestOptions(p.listQuery(), p.limit, 0, false)
	// One sort value, the time and then the id: sorting on the id as a
	// second key made bleve read every matching document's id, a third
	// of the time of listing 100,000 memories.
	req.SortBy([]string{"-" + fieldUpdatedKey})
	if p.after != nil {
		req.SetSearchAfter([]string{timeKey(clampTime(p.after.Updated)) + p.after.ID})
	}
	req.Score = "none"
	if p.explain {
		req.Fields = rankFields
	}
	sr, err := ix.idx.SearchInContext(ctx, req)
	if err != nil {
		return Result{}, bleveError("query", err)
	}
	hits := make([]Hit, 0, len(sr.Hits))
	for _, h := range sr.Hits {
		hit := Hit{ID: h.ID}
		if p.explain {
			e := explain(0, p.rankInputs(h.ID, storedFrom(h.Fields)), p.now, ix.halfLife, MatchFilter)
			hit.Explain = &e
		}
		hits = append(hits, hit)
	}
	res := Result{Hits: hits, Total: sr.Total}
	if n := len(sr.Hits); n > 0 && n == p.limit {
		last := sr.Hits[n-1]
		key := last.Sort[0]
		ns, err := strconv.ParseInt(key[:min(len(key), timeKeyLen)], 10, 64)
		if err != nil || key[min(len(key), timeKeyLen):] != last.ID {
			return Result{}, fmt.Errorf("search: list: the sort key %q of %s is no time and id", key, last.ID)
		}
		res.Next = &api.Cursor{Updated: time.Unix(0, ns).UTC(), ID: last.ID}
	}
	return res, nil
}

// rankInputs joins a hit's stored ranking fields and what the caller
// derives about it.
func (p *plan) rankInputs(id string, st stored) rankInputs {
	in := rankInputs{stored: st, decay: 1, maturity: 1}
	if p.derived != nil {
		d := p.derived(id)
		in.derivedStale = d.Stale
		if d.Decay > 0 {
			in.decay = d.Decay
		}
		if d.Maturity > 0 {
			in.maturity = d.Maturity
		}
	}
	return in
}

// storedFields returns the stored ranking fields of hits: from the cache,
// and for the others from the index (one query for all of them), which
// then fills the cache if no Apply ran since generation gen.
func (ix *Index) storedFields(ctx context.Context, gen uint64, hits bsearch.DocumentMatchCollection) ([]stored, error) {
	out := make([]stored, len(hits))
	var missing []string
	at := map[string]int{}
	for i, h := range hits {
		if st, ok := ix.cache.get(h.ID); ok {
			out[i] = st
			continue
		}
		missing = append(missing, h.ID)
		at[h.ID] = i
	}
	if len(missing) == 0 {
		return out, nil
	}
	req := bleve.NewSearchRequestOptions(query.NewDocIDQuery(missing), len(missing), 0, false)
	req.Fields = rankFields
	req.Score = "none"
	sr, err := ix.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, bleveError("stored fields", err)
	}
	for _, h := range sr.Hits {
		st := storedFrom(h.Fields)
		out[at[h.ID]] = st
		ix.cache.fill(gen, h.ID, st)
	}
	return out, nil
}

// storedFrom decodes the stored fields bleve returns.
func storedFrom(fields map[string]any) stored {
	var st stored
	if s, ok := fields[fieldTier].(string); ok {
		st.tier = model.Tier(s)
	}
	if s, ok := fields[fieldStatus].(string); ok {
		st.status = model.Status(s)
	}
	if f, ok := fields[fieldConfidence].(float64); ok {
		st.confidence = f
	}
	if s, ok := fields[fieldUpdated].(string); ok {
		st.updated, _ = time.Parse(time.RFC3339, s)
	}
	st.session, _ = fields[fieldSession].(string)
	asks, _ := fields[fieldAsks].(string)
	st.asks = asks == asksYes
	return st
}
