// Package search is the full-text index of memories: a bleve v2 (scorch)
// index in its own directory, derived from storage and rebuildable from it.
//
// # Fields
//
// Each memory is one bleve document whose id is the memory id. Nothing
// large is stored: callers read records from storage by id.
//
//	title        title and tags, English text with positions (phrases); a
//	             title that is the start of the content is left out, so
//	             that its words do not count twice
//	content      title, tags and content: English text with positions, so
//	             that one term query finds a term wherever it is
//	when         month and year the memory was learned ("June 2025"),
//	             English text, so that "what changed in June" finds it
//	session      keyword, stored: the session that wrote the memory
//	asks         keyword, stored: "yes" when the memory asks a question
//	             (a question mark that ends a sentence), so that graph
//	             search can lend more to what follows it
//	tags         keyword, for filters
//	devices      keyword: the devices that wrote the memory (provenance
//	             and every revision), for the device filter
//	namespace    keyword
//	kind         keyword
//	status       keyword, stored (ranking)
//	tier         keyword, stored (ranking)
//	confidence   number, stored only (ranking)
//	updated      datetime, stored only (ranking)
//	updated_key  updated as a sortable keyword (Unix nanoseconds in 19
//	             digits) followed by the memory's id, with doc values: the
//	             listing's order (time, then id) in one value, and the ends
//	             of a since/until window (a time's digits sort before every
//	             key of that time)
//	updated_day  the start of updated's UTC day, as a time key (the
//	             whole days within a since/until window)
//	updated_hour the start of updated's hour, as a time key (the whole
//	             hours at the ends of a since/until window)
//	expires      datetime; absent for a memory without TTL
//
// Memories whose status is deleted are removed, never indexed.
//
// # Analysis
//
// Text is split into words by Unicode word segmentation. Code identifiers
// stay whole and are followed by their parts at the same position:
// parseConfig, HTTPServer, snake_case_name and file_source.go are found by
// parse, http, snake or source as well as whole. The text fields then go
// through bleve's English chain: possessives, lower case, English stop
// words, Porter stemmer, so "running" finds "runs". Before the stop words,
// the irregular past forms of common English verbs and a few irregular
// plurals become their base forms (irregular.go), which no stemmer joins:
// "choose" finds "chose", "go" finds "went", "child" finds "children".
// Edit distances are measured on words, not stems: see the fallback below.
//
// # Queries and ranking
//
// Query text is never parsed as bleve query syntax; "foo:bar" and "+x" are
// words. Double-quoted parts are phrases, which must all match (unless
// none can: the fallback below); the other
// words, and those after a quote that has no partner, are terms, any of
// which may match. Text is refused (ErrInvalidQuery) past 4096 bytes, 64
// words, 256 bytes in one word, 16 phrases or 128 distinct terms once
// identifiers are split, before any work starts. A query runs as:
//
//  1. Filters. Namespace, kind, tags (all of them), tiers and the updated
//     window are required; unwanted statuses (by default archived and
//     compacted) and expired memories (expires <= Now) are excluded.
//  2. BM25. Each term is scored in content, in title (again: a title's
//     words weigh twice) and in when, with bleve's BM25 model
//     (IndexMapping.ScoringModel "bm25", b = 0.3: memories vary from a
//     line to a few paragraphs, and bleve's default 0.75 favours the
//     shortest ones); phrases add their own scores. The best
//     max(50, 2*Limit) candidates are kept. When at least that many
//     memories hold every term, only they are scored: a memory missing a
//     word rarely outranks that many holding all of them, and requiring
//     all terms spares scoring every memory that holds one common word.
//     That pass requires each term in content (or when, for a month or a
//     year) and lets the title add its score; Result.Total then counts
//     those memories.
//  3. Multipliers. Each candidate's BM25 score is multiplied by its
//     confidence, trust tier, recency (half-life decay of updated) and
//     status weights, and by what the caller derives (Query.Derived:
//     confidence decay, derived staleness, maturity), defined together in
//     rank.go, and the candidates are reordered and cut to Limit.
//     Query.Explain returns every component.
//  4. Feedback. When Query.Feedback is set and the words found fewer
//     memories than Limit, the terms that at least two of the best five
//     matches share and the query lacks are searched for too (feedback.go);
//     what only they find joins the results, scored at most half the best
//     match (MatchAssociated).
//  5. Fallback. When no memory holds every phrase, the phrases' words
//     join the terms and the query runs again as loose terms, and
//     Result.Loose is set: a title misremembered by a letter or a word
//     still finds what holds its other words. Quoted words stay exact.
//     When nothing matched and the text has no phrases, each
//     word is matched against the words within 1 edit (4 to 7
//     characters) or 2 edits (8 to 24) whose stems the content field
//     holds (spell.go): its stem and its prefixes are looked up in the
//     field's terms within those edits, and a stem found counts when the
//     stem with a common English ending, which stems back to it, is
//     within the edits of the word ("postgress" finds "postgres", stemmed
//     "postgr"). Result.Fuzzy is then set. Only the first 8 words that
//     allow edits get them; longer words and the others match exactly
//     (each edit automaton costs memory in proportion to its word). No
//     field of unstemmed words is indexed for it.
//
// A query without text lists the memories that pass the filters, newest
// first (then by id, last first), without scores. A listing that filled
// its limit returns Result.Next, the place of its last memory (update
// time and id); Query.After starts the next page after it, so memories
// updated in the same instant at a page's end are neither skipped nor
// repeated.
//
// # Durability and the watermark
//
// Apply writes one bleve batch holding the changed documents and the
// caller's watermark (an internal value). Scorch runs with unsafe_batch:
// a batch is searchable when Apply returns, and a background persister
// writes and fsyncs snapshots later, each snapshot holding segments and
// internal values together. The watermark on disk therefore always
// describes exactly the data on disk: after a crash the index reopens at
// an older, consistent watermark, and the caller replays storage from it.
// Close waits for the persister to catch up. An index written with an
// older schema version is recreated empty (watermark 0).
package search
