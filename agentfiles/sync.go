package agentfiles

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/model"
)

// Service is what an import and an export need of a node (web.Client and
// node.Node have it).
type Service interface {
	List(ctx context.Context, req api.ListRequest) ([]api.Memory, error)
	Remember(ctx context.Context, req api.RememberRequest) (api.RememberResult, error)
	Update(ctx context.Context, ref string, req api.UpdateRequest) (api.Memory, error)
	Forget(ctx context.Context, ref string) (api.Memory, error)
	Edges(ctx context.Context, req api.EdgesRequest) ([]api.Edge, error)
	Link(ctx context.Context, req api.LinkRequest) (api.Edge, error)
	Unlink(ctx context.Context, from, rel, to string) (api.Edge, error)
}

// An item's memory records where it came from twice: its provenance
// session is the file ("file:CLAUDE.md", Source.Session), by which an
// import finds the memories of a file, and an edge RelDefinedIn to the
// item's lines ("file:CLAUDE.md:21-24", origin OriginImport), which
// `memmesh graph` and `memmesh impact CLAUDE.md` show and an import moves
// when the lines move.
const (
	RelDefinedIn = "defined_in"
	OriginImport = "import"
)

// Similarity of words from which an item of the file is taken for a
// memory edited: within its section, and from another section (moved
// and edited).
const (
	sameSectionSimilarity  = 0.5
	otherSectionSimilarity = 0.7
	// maxListed is how many memories of one file an import reads.
	maxListed = 1000
)

// ImportOptions say where an import goes.
type ImportOptions struct {
	Namespace string
	Format    Format
	// ArchiveRemoved archives the memories whose item left the file;
	// without it they are only reported.
	ArchiveRemoved bool
	// DryRun reports what the import would do and changes nothing.
	DryRun bool
}

// ImportResult counts what an import did with each item, and lists what
// changed.
type ImportResult struct {
	File      string `json:"file"` // the file's key
	Namespace string `json:"namespace"`
	Items     int    `json:"items"`
	Created   int    `json:"created"`
	Updated   int    `json:"updated"`
	Unchanged int    `json:"unchanged"`
	Moved     int    `json:"moved"` // unchanged items whose lines moved
	// Duplicates are items whose text a memory of the namespace (from
	// elsewhere) already holds: they are left to it.
	Duplicates int      `json:"duplicates"`
	Removed    int      `json:"removed"`  // memories whose item left the file
	Archived   int      `json:"archived"` // of those, archived (ArchiveRemoved)
	Redacted   []string `json:"redacted,omitempty"`
	Changes    []Change `json:"changes"`
	DryRun     bool     `json:"dry_run,omitempty"`
}

// Change is one memory an import created, updated, found removed or left
// to a duplicate.
type Change struct {
	Action string `json:"action"` // created, updated, removed, archived, duplicate
	ID     string `json:"id,omitempty"`
	Line   int    `json:"line,omitempty"` // the item's line; the old line for a removed one
	Title  string `json:"title"`
}

// Import brings a file's items into the namespace as memories of tier
// human (the file is a person's), deduplicated against what an earlier
// import of the file stored: an unchanged item is skipped (its line edge
// follows it when it moved); an edited one updates its memory, found in
// the same section by the words they share (or, when a section has one
// item changed, by that), or in another section by more of them; a new
// one is created; a memory whose item left the file is reported, and
// archived with ArchiveRemoved. An item a memory of the namespace
// already says from elsewhere is left to it. Texts are scrubbed of
// secrets before they are compared or sent.
func Import(ctx context.Context, svc Service, src Source, items []Item, opt ImportOptions) (ImportResult, error) {
	res := ImportResult{File: src.Key, Namespace: opt.Namespace, Items: len(items), Changes: []Change{}, DryRun: opt.DryRun}
	old, err := svc.List(ctx, api.ListRequest{Namespace: opt.Namespace, Session: src.Session(), Limit: maxListed,
		Statuses: []model.Status{model.StatusActive, model.StatusStale, model.StatusArchived}})
	if err != nil {
		return res, err
	}
	lines, err := lineEdges(ctx, svc, src, old)
	if err != nil {
		return res, err
	}
	news := make([]want, len(items))
	for i, it := range items {
		text, kinds := secrets.Scrub(it.Text)
		title, titleKinds := secrets.Scrub(cmp.Or(it.Title(), src.Name()))
		for _, k := range append(kinds, titleKinds...) {
			if !slices.Contains(res.Redacted, k) {
				res.Redacted = append(res.Redacted, k)
			}
		}
		news[i] = want{item: it, text: text, title: title, words: words(text), match: -1}
	}
	olds := make([]have, len(old))
	for i := range old {
		olds[i] = have{mem: &old[i], words: words(old[i].Content), match: -1}
	}
	match(news, olds)

	for i := range news {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := apply(ctx, svc, src, opt, &news[i], olds, lines, &res); err != nil {
			return res, err
		}
	}
	for i := range olds {
		o := &olds[i]
		if o.match >= 0 || o.mem.Status == model.StatusArchived {
			continue
		}
		c := Change{Action: "removed", ID: o.mem.ShortID, Line: lineOf(lines[o.mem.ID], src), Title: o.mem.Title}
		res.Removed++
		if opt.ArchiveRemoved {
			c.Action = "archived"
			res.Archived++
			if !opt.DryRun {
				if _, err := svc.Forget(ctx, o.mem.ID); err != nil {
					return res, err
				}
			}
		}
		res.Changes = append(res.Changes, c)
	}
	return res, nil
}

// want is an item of the file, as it is to be stored.
type want struct {
	item        Item
	text, title string
	words       map[string]bool
	match       int // index in the memories found, or -1
}

// have is a memory an earlier import of the file stored.
type have struct {
	mem   *api.Memory
	words map[string]bool
	match int // index in the items, or -1
}

// match pairs items with memories: the same text first, then, best pairs
// first, similar text in the same section, the one changed item of a
// section, and more similar text in another section.
func match(news []want, olds []have) {
	pair := func(i, j int) { news[i].match, olds[j].match = j, i }
	for _, exact := range []func(w *want, h *have) bool{
		func(w *want, h *have) bool { return normal(w.text) == normal(h.mem.Content) && w.title == h.mem.Title },
		func(w *want, h *have) bool { return normal(w.text) == normal(h.mem.Content) },
	} {
		for i := range news {
			for j := range olds {
				if news[i].match < 0 && olds[j].match < 0 && exact(&news[i], &olds[j]) {
					pair(i, j)
				}
			}
		}
	}
	similar(news, olds, sameSectionSimilarity, true, pair)
	alone(news, olds, pair)
	similar(news, olds, otherSectionSimilarity, false, pair)
}

// similar pairs unmatched items and memories whose words are at least
// floor alike, most alike first.
func similar(news []want, olds []have, floor float64, sameSection bool, pair func(i, j int)) {
	type candidate struct {
		i, j int
		sim  float64
	}
	var cs []candidate
	for i := range news {
		for j := range olds {
			if news[i].match >= 0 || olds[j].match >= 0 || sameSection && news[i].title != olds[j].mem.Title {
				continue
			}
			if s := jaccard(news[i].words, olds[j].words); s >= floor {
				cs = append(cs, candidate{i, j, s})
			}
		}
	}
	slices.SortStableFunc(cs, func(a, b candidate) int { return cmp.Compare(b.sim, a.sim) })
	for _, c := range cs {
		if news[c.i].match < 0 && olds[c.j].match < 0 {
			pair(c.i, c.j)
		}
	}
}

// alone pairs the one unmatched item of a section with the one unmatched
// memory of that section: a line rewritten in other words.
func alone(news []want, olds []have, pair func(i, j int)) {
	itemsOf, memsOf := map[string][]int{}, map[string][]int{}
	for i := range news {
		if news[i].match < 0 {
			itemsOf[news[i].title] = append(itemsOf[news[i].title], i)
		}
	}
	for j := range olds {
		if olds[j].match < 0 {
			memsOf[olds[j].mem.Title] = append(memsOf[olds[j].mem.Title], j)
		}
	}
	for title, is := range itemsOf {
		if js := memsOf[title]; len(is) == 1 && len(js) == 1 {
			pair(is[0], js[0])
		}
	}
}

// apply stores one item: created, updated, or left as it is.
func apply(ctx context.Context, svc Service, src Source, opt ImportOptions, w *want, olds []have, lines map[string]string, res *ImportResult) error {
	it := w.item
	at := lineArtefact(src, it)
	headingTags := it.Tags()
	if w.match < 0 {
		c := Change{Action: "created", Line: it.Line, Title: w.title}
		if !opt.DryRun {
			r, err := svc.Remember(ctx, api.RememberRequest{Namespace: opt.Namespace, Title: w.title, Content: w.text, Kind: it.Kind,
				Tags: append([]string{string(opt.Format)}, headingTags...), Tier: model.TierHuman, Agent: string(opt.Format), Session: src.Session()})
			if err != nil {
				return fmt.Errorf("%s:%d: %w", src.Key, it.Line, err)
			}
			c.ID = r.ShortID
			if r.DuplicateOf != "" {
				c.Action = "duplicate"
				res.Duplicates++
				res.Changes = append(res.Changes, c)
				return nil
			}
			if _, err := svc.Link(ctx, api.LinkRequest{From: r.ID, Rel: RelDefinedIn, To: at, Origin: OriginImport}); err != nil {
				return err
			}
		}
		res.Created++
		res.Changes = append(res.Changes, c)
		return nil
	}
	m := olds[w.match].mem
	var req api.UpdateRequest
	changed := false
	if normal(w.text) != normal(m.Content) {
		req.Content, req.Kind, changed = &w.text, &it.Kind, true
	}
	if w.title != m.Title {
		req.Title, changed = &w.title, true
	}
	oldTags := slugs(strings.Split(m.Title, " › "))
	for _, t := range headingTags {
		if !slices.Contains(m.Tags, t) {
			req.AddTags, changed = append(req.AddTags, t), true
		}
	}
	for _, t := range oldTags {
		if t != string(opt.Format) && slices.Contains(m.Tags, t) && !slices.Contains(headingTags, t) {
			req.RemoveTags, changed = append(req.RemoveTags, t), true
		}
	}
	if m.Status == model.StatusArchived {
		active := model.StatusActive
		req.Status, changed = &active, true
	}
	moved := lines[m.ID] != at
	switch {
	case changed:
		res.Updated++
		res.Changes = append(res.Changes, Change{Action: "updated", ID: m.ShortID, Line: it.Line, Title: w.title})
	case moved:
		res.Unchanged++
		res.Moved++
	default:
		res.Unchanged++
		return nil
	}
	if opt.DryRun {
		return nil
	}
	if changed {
		if _, err := svc.Update(ctx, m.ID, req); err != nil {
			return fmt.Errorf("%s:%d: %w", src.Key, it.Line, err)
		}
	}
	if !moved {
		return nil
	}
	if prev := lines[m.ID]; prev != "" {
		if _, err := svc.Unlink(ctx, m.ID, RelDefinedIn, prev); err != nil {
			return err
		}
	}
	_, err := svc.Link(ctx, api.LinkRequest{From: m.ID, Rel: RelDefinedIn, To: at, Origin: OriginImport})
	return err
}

// lineEdges returns, per memory id, the artefact of the lines its
// defined_in edge names in the file.
func lineEdges(ctx context.Context, svc Service, src Source, mems []api.Memory) (map[string]string, error) {
	out := map[string]string{}
	if len(mems) == 0 {
		return out, nil
	}
	ids := make([]string, len(mems))
	for i, m := range mems {
		ids[i] = m.ID
	}
	edges, err := svc.Edges(ctx, api.EdgesRequest{Endpoints: ids, Direction: api.Out})
	if err != nil {
		return nil, err
	}
	prefix := src.Session() + ":"
	for _, e := range edges {
		if e.Rel == RelDefinedIn && strings.HasPrefix(e.To, prefix) && !e.Deleted {
			out[e.From] = e.To
		}
	}
	return out, nil
}

// lineArtefact names an item's lines: file:KEY:LINE or file:KEY:FIRST-LAST.
func lineArtefact(src Source, it Item) string {
	if it.EndLine > it.Line {
		return fmt.Sprintf("%s:%d-%d", src.Session(), it.Line, it.EndLine)
	}
	return fmt.Sprintf("%s:%d", src.Session(), it.Line)
}

// lineOf returns the first line an artefact of lineArtefact names, 0 when
// none.
func lineOf(artefact string, src Source) int {
	rest, ok := strings.CutPrefix(artefact, src.Session()+":")
	if !ok {
		return 0
	}
	first, _, _ := strings.Cut(rest, "-")
	n, _ := strconv.Atoi(first)
	return n
}

// normal is text with its runs of white space made one space, as a
// memory's content is compared.
func normal(s string) string { return strings.Join(strings.Fields(s), " ") }

// words returns the lower-cased words of s (versions and paths whole).
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.' && r != '_' && r != '-' && r != '/'
	}) {
		if w = strings.Trim(w, ".-/"); w != "" {
			out[w] = true
		}
	}
	return out
}

// jaccard is the share of words two sets have in common.
func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	both := 0
	for w := range a {
		if b[w] {
			both++
		}
	}
	return float64(both) / float64(len(a)+len(b)-both)
}

// slugs returns the tag of each heading.
func slugs(headings []string) []string {
	out := make([]string, 0, len(headings))
	for _, h := range headings {
		if s := slug(h); s != "" {
			out = append(out, s)
		}
	}
	return out
}
