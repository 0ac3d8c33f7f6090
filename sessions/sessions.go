// Package sessions keeps agents' sessions, read from their clients'
// transcripts (transcript's adapters): their turns, scrubbed of secrets, as
// local data of the machine that ran them; their summaries, and what they
// teach (extract's rules), as memories written through the node's service
// (Memories), so that the mesh carries them like any other.
package sessions

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/secrets"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transcript"
)

// Sessions are agents' conversations, read from their clients'
// transcripts. A session's turns, scrubbed of secrets, stay on the machine
// that ran it, as local records ("session/" for its metadata, "turn/" for
// each turn); its summary is a memory of kind session in the namespace of
// its project, which the mesh carries like any other, so that every machine
// lists every machine's sessions.
const (
	sessionKeyPrefix = "session/"
	turnKeyPrefix    = "turn/"
	// maxSessionFiles and maxSessionCommands cap what a session's summary
	// lists.
	maxSessionFiles    = 30
	maxSessionCommands = 20
	// maxSessionIDLen bounds a client's session id kept as is; a longer
	// one, or one with other characters, is kept as its hash.
	maxSessionIDLen = 128
	// maxSessionHandoffs bounds the handoffs a session lists.
	maxSessionHandoffs = 20
	// maxSummaryLine bounds the prompt and the outcome quoted in a
	// summary.
	maxSummaryLine = 240
)

var (
	clientRE    = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	sessionIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)
	// decisionRE finds a turn that states a decision (the decisions
	// scope).
	decisionRE = regexp.MustCompile(`(?i)\b(decided|decision|let'?s go with|we('| wi)ll use|going with|settled on|chose|instead of)\b`)
)

// Sessions reads, keeps and searches the sessions of this machine's
// agents, and lists every machine's. Create it with New; the node runs
// Run when it reads transcripts on a schedule.
type Sessions struct {
	cfg    *Config // nil when the node reads no transcripts
	mem    Memories
	store  Store
	device string // this machine's device id
	clock  clock.Clock
	log    *slog.Logger
	// mu serialises the reading of sessions, which writes memories (and
	// so takes document locks) while it reads.
	mu sync.Mutex
	// queue holds the transcript reads asked for (Ingest).
	queue chan api.IngestRequest
}

// New returns the sessions of the machine device, kept in store, whose
// summaries and lessons are written to mem. cfg, when not nil, names the
// transcripts to read.
func New(cfg *Config, mem Memories, store Store, device string, clk clock.Clock, log *slog.Logger) *Sessions {
	return &Sessions{cfg: cfg, mem: mem, store: store, device: device, clock: clk, log: log,
		queue: make(chan api.IngestRequest, maxQueuedIngests)}
}

// sessionRecord is what the machine that ran a session keeps of it: the
// session, and its first prompt and last reply for its summary.
type sessionRecord struct {
	api.Session
	Prompt  string `json:"prompt,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// sessionKey returns the local key of a session's metadata, and the
// prefix of its turns' keys.
func sessionKey(client, id string) (meta, turns string) {
	return sessionKeyPrefix + client + "/" + id, turnKeyPrefix + client + "/" + id + "/"
}

// sessionID returns the id a session is kept under: the client's, or its
// hash when that is too long or holds other characters.
func sessionID(id string) (string, error) {
	if id == "" {
		return "", api.Invalidf("session without an id")
	}
	if len(id) <= maxSessionIDLen && sessionIDRE.MatchString(id) {
		return id, nil
	}
	sum := sha256.Sum256([]byte(id))
	return "h" + hex.EncodeToString(sum[:16]), nil
}

// IngestSession stores what a transcript reader returned of one session
// (its new turns: those already stored are skipped) and writes its summary
// memory in namespace ns, or updates it when the session grew. It returns
// the session as stored.
func (ss *Sessions) IngestSession(ctx context.Context, s transcript.Session, ns string) (api.Session, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.ingestSession(ctx, s, ns)
}

// ingestSession is IngestSession; callers hold sessionsMu.
func (ss *Sessions) ingestSession(ctx context.Context, s transcript.Session, ns string) (api.Session, error) {
	if !clientRE.MatchString(s.Client) {
		return api.Session{}, api.Invalidf("session client %q: use lower-case letters, digits and -", s.Client)
	}
	id, err := sessionID(s.ID)
	if err != nil {
		return api.Session{}, err
	}
	if ns, err = ss.mem.NormalizeNamespace(ns); err != nil {
		return api.Session{}, err
	}
	metaKey, turnPrefix := sessionKey(s.Client, id)

	meta, err := ss.localSession(metaKey)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		meta = sessionRecord{Session: api.Session{ID: id, Client: s.Client, Namespace: ns, Device: ss.device, Local: true,
			FilesChanged: []string{}, Commands: []string{}}}
		// Stored before its summary: a listing, which finds sessions by
		// their summaries, never shows one of this machine's as held
		// elsewhere while it is read. It holds no turn yet, so a read
		// that stops before the end reads them all again.
		if err := ss.putSession(metaKey, meta, false); err != nil {
			return api.Session{}, fmt.Errorf("store session %s: %w", id, err)
		}
	case err != nil:
		return api.Session{}, err
	}
	first := meta.Turns // the first turn this read adds
	if s.Project != "" {
		meta.Project = clip(secretsFree(s.Project), maxSummaryLine)
	}
	meta.Start = earliest(meta.Start, s.Start)
	meta.End = latest(meta.End, s.End)
	added := 0
	for _, t := range s.Turns {
		if err := ctx.Err(); err != nil {
			return api.Session{}, err
		}
		if t.Index < meta.Turns || meta.Turns >= api.MaxSessionTurns {
			continue
		}
		turn := sessionTurn(t)
		data, err := json.Marshal(turn)
		if err != nil {
			return api.Session{}, err
		}
		if err := ss.store.PutLocal(fmt.Sprintf("%s%08d", turnPrefix, t.Index), data); err != nil {
			return api.Session{}, fmt.Errorf("store turn %d of session %s: %w", t.Index, id, err)
		}
		noteTurn(&meta, turn)
		meta.Turns = t.Index + 1
		added++
	}
	if meta.Start.IsZero() {
		meta.Start = ss.clock.Now()
	}
	meta.End = latest(meta.End, meta.Start)
	if added > 0 || meta.SummaryID == "" {
		if err := ss.writeSessionSummary(ctx, &meta); err != nil {
			return api.Session{}, err
		}
	}
	if added > 0 {
		learned, strengthened, err := ss.learnFromSession(ctx, meta.Session, first)
		if err != nil {
			return api.Session{}, err
		}
		meta.Learned, meta.Strengthened = meta.Learned+learned, meta.Strengthened+strengthened
	}
	// Durable: it also syncs the turns written before it.
	if err := ss.putSession(metaKey, meta, true); err != nil {
		return api.Session{}, fmt.Errorf("store session %s: %w", id, err)
	}
	return meta.Session, nil
}

// putSession stores a session's record under key, durably or not.
func (ss *Sessions) putSession(key string, meta sessionRecord, durable bool) error {
	data, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if durable {
		return ss.store.PutLocalDurable(key, data)
	}
	return ss.store.PutLocal(key, data)
}

// sessionTurn is t scrubbed of secrets and bounded.
func sessionTurn(t transcript.Turn) api.SessionTurn {
	files := make([]string, 0, len(t.Files))
	for _, f := range t.Files[:min(len(t.Files), maxSessionFiles)] {
		files = append(files, clip(secretsFree(f), maxSummaryLine))
	}
	return api.SessionTurn{
		Index:    t.Index,
		Time:     t.Time.UTC(),
		Role:     string(t.Role),
		Text:     clip(secretsFree(t.Text), api.MaxTurnText),
		Tool:     clip(t.Tool, 64),
		Command:  clip(secretsFree(t.Command), api.MaxTurnText),
		Files:    files,
		Changed:  t.Changed,
		Failed:   t.Failed,
		ExitCode: t.ExitCode,
	}
}

func secretsFree(s string) string {
	out, _ := secrets.Scrub(s)
	return out
}

// noteTurn adds what turn said, changed, ran and failed to the
// session's record.
func noteTurn(meta *sessionRecord, turn api.SessionTurn) {
	switch text := strings.TrimSpace(turn.Text); {
	case text == "":
	case turn.Role == string(transcript.RoleUser) && meta.Prompt == "":
		meta.Prompt = clip(text, maxSummaryLine*4)
	case turn.Role == string(transcript.RoleAssistant) && turn.Tool == "":
		meta.Outcome = clip(text, maxSummaryLine*4)
	}
	if !turn.Time.IsZero() {
		meta.Start = earliest(meta.Start, turn.Time)
		meta.End = latest(meta.End, turn.Time)
	}
	if turn.Changed {
		for _, f := range turn.Files {
			if len(meta.FilesChanged) < maxSessionFiles && !slices.Contains(meta.FilesChanged, f) {
				meta.FilesChanged = append(meta.FilesChanged, f)
			}
		}
	}
	if c := firstLine(turn.Command); c != "" && len(meta.Commands) < maxSessionCommands && !slices.Contains(meta.Commands, c) {
		meta.Commands = append(meta.Commands, c)
	}
	if turn.Failed {
		meta.Failures++
	}
}

// writeSessionSummary writes the session's summary memory, or a new
// revision of it.
func (ss *Sessions) writeSessionSummary(ctx context.Context, meta *sessionRecord) error {
	meta.Title = "Session: " + cmp.Or(clip(firstLine(meta.Prompt), 80), meta.Client+" in "+cmp.Or(meta.Project, meta.Namespace))
	meta.Summary = sessionSummary(meta.Session, meta.Prompt, meta.Outcome)
	if meta.SummaryID != "" {
		_, err := ss.mem.Update(ctx, meta.SummaryID, api.UpdateRequest{Title: &meta.Title, Content: &meta.Summary, Agent: meta.Client})
		if !errors.Is(err, api.ErrNotFound) {
			return err
		}
		// Forgotten and purged: the session gets a new summary.
	}
	res, err := ss.mem.Remember(ctx, api.RememberRequest{
		Namespace: meta.Namespace, Title: meta.Title, Content: meta.Summary, Kind: api.KindSession,
		// Written now: its time to live runs from now, not from when
		// the session ran (an old session read today stays a month).
		Tier: model.TierAuto, Agent: meta.Client, Session: meta.ID,
	})
	if err != nil {
		return fmt.Errorf("session %s: summary: %w", meta.ID, err)
	}
	meta.SummaryID = res.ID
	return nil
}

// The summary's lines; the first words of each are how sessionFromMemory
// reads them back.
const (
	summaryProject  = "Project: "
	summaryTurns    = "Turns: "
	summaryStarted  = "Started: "
	summaryEnded    = "Ended: "
	summaryFiles    = "Files changed: "
	summaryCommands = "Commands: "
	summaryFailures = "Failed tool calls: "
	summaryAsked    = "Asked: "
	summaryOutcome  = "Outcome: "
)

// sessionSummary is the text of a session's summary memory: readable, and
// read back line by line by sessionFromMemory.
func sessionSummary(meta api.Session, prompt, outcome string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s session %s, %s to %s.\n", meta.Client, meta.ID, meta.Start.UTC().Format(time.RFC3339), meta.End.UTC().Format(time.RFC3339))
	if meta.Project != "" {
		b.WriteString(summaryProject + meta.Project + "\n")
	}
	fmt.Fprintf(&b, "%s%d\n", summaryTurns, meta.Turns)
	b.WriteString(summaryStarted + meta.Start.UTC().Format(time.RFC3339) + "\n")
	b.WriteString(summaryEnded + meta.End.UTC().Format(time.RFC3339) + "\n")
	if len(meta.FilesChanged) > 0 {
		b.WriteString(summaryFiles + strings.Join(meta.FilesChanged, ", ") + "\n")
	}
	if len(meta.Commands) > 0 {
		b.WriteString(summaryCommands + strings.Join(meta.Commands, " ; ") + "\n")
	}
	if meta.Failures > 0 {
		fmt.Fprintf(&b, "%s%d\n", summaryFailures, meta.Failures)
	}
	if p := clip(oneLine(prompt), maxSummaryLine); p != "" {
		b.WriteString(summaryAsked + p + "\n")
	}
	if o := clip(oneLine(outcome), maxSummaryLine); o != "" {
		b.WriteString(summaryOutcome + o + "\n")
	}
	return strings.TrimSpace(b.String())
}

// sessionFromMemory reads a session from its summary memory.
func sessionFromMemory(m api.Memory) api.Session {
	s := api.Session{
		ID: m.Provenance.Session, Client: m.Provenance.Agent, Namespace: m.Namespace,
		Device: m.Provenance.Device, Start: m.Provenance.CreatedAt, End: m.Provenance.UpdatedAt,
		Title: m.Title, Summary: m.Content, SummaryID: m.ID, FilesChanged: []string{}, Commands: []string{},
	}
	for line := range strings.SplitSeq(m.Content, "\n") {
		switch {
		case strings.HasPrefix(line, summaryProject):
			s.Project = strings.TrimPrefix(line, summaryProject)
		case strings.HasPrefix(line, summaryTurns):
			s.Turns, _ = strconv.Atoi(strings.TrimPrefix(line, summaryTurns))
		case strings.HasPrefix(line, summaryStarted):
			if t, err := time.Parse(time.RFC3339, strings.TrimPrefix(line, summaryStarted)); err == nil {
				s.Start = t
			}
		case strings.HasPrefix(line, summaryEnded):
			if t, err := time.Parse(time.RFC3339, strings.TrimPrefix(line, summaryEnded)); err == nil {
				s.End = t
			}
		case strings.HasPrefix(line, summaryFiles):
			s.FilesChanged = strings.Split(strings.TrimPrefix(line, summaryFiles), ", ")
		case strings.HasPrefix(line, summaryCommands):
			s.Commands = strings.Split(strings.TrimPrefix(line, summaryCommands), " ; ")
		case strings.HasPrefix(line, summaryFailures):
			s.Failures, _ = strconv.Atoi(strings.TrimPrefix(line, summaryFailures))
		}
	}
	return s
}

// List lists the sessions of every machine, newest first, from their
// summary memories.
func (ss *Sessions) List(ctx context.Context, req api.SessionsRequest) ([]api.Session, error) {
	limit := cmp.Or(req.Limit, 50)
	if limit < 1 || limit > api.MaxSessionList {
		return nil, api.Invalidf("limit %d: use 1 to %d", req.Limit, api.MaxSessionList)
	}
	mems, err := ss.mem.List(ctx, api.ListRequest{Namespace: req.Namespace, Kind: api.KindSession, Since: req.Since, Until: req.Until, Limit: api.MaxSessionList})
	if err != nil {
		return nil, err
	}
	out := []api.Session{}
	for _, m := range mems {
		s := sessionFromMemory(m)
		s.DeviceName = ss.mem.DeviceName(s.Device)
		if s.ID == "" || (req.Client != "" && s.Client != req.Client) ||
			(req.Device != "" && s.Device != req.Device && s.DeviceName != req.Device) {
			continue
		}
		if s.Device == ss.device {
			s.Local = ss.hasLocalSession(s.Client, s.ID)
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b api.Session) int { return b.End.Compare(a.End) })
	return out[:min(len(out), limit)], nil
}

// Session returns one session by its id or a unique prefix of it, with its
// turns when they are on this machine.
func (ss *Sessions) Session(ctx context.Context, ref string) (api.SessionDetail, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" || len(ref) > maxSessionIDLen+1 {
		return api.SessionDetail{}, api.Invalidf("session id %q: give the id, or a unique prefix of it, from 'memmesh sessions'", ref)
	}
	all, err := ss.List(ctx, api.SessionsRequest{Limit: api.MaxSessionList})
	if err != nil {
		return api.SessionDetail{}, err
	}
	var found []api.Session
	for _, s := range all {
		if s.ID == ref {
			found = []api.Session{s}
			break
		}
		if strings.HasPrefix(s.ID, ref) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return api.SessionDetail{}, api.InputError(api.ErrNotFound, "no session %q", ref)
	case 1:
	default:
		return api.SessionDetail{}, api.Invalidf("session %q is ambiguous: %d sessions start with it", ref, len(found))
	}
	d := api.SessionDetail{Session: found[0], Transcript: []api.SessionTurn{}, Lessons: []api.Lesson{}, Handoffs: []api.MemoryRef{}}
	tagged, err := ss.mem.List(ctx, api.ListRequest{Tags: []string{api.SessionTag(d.ID)}, Limit: maxSessionHandoffs})
	if err != nil {
		return d, err
	}
	for _, m := range tagged {
		d.Handoffs = append(d.Handoffs, api.MemoryRef{ID: m.ID, Kind: m.Kind, Title: m.Title})
	}
	if !d.Local {
		return d, nil
	}
	metaKey, turnPrefix := sessionKey(d.Client, d.ID)
	if meta, err := ss.localSession(metaKey); err == nil {
		meta.DeviceName, meta.Title, meta.Summary, meta.SummaryID = d.DeviceName, d.Title, d.Summary, d.SummaryID
		d.Session = meta.Session
	}
	err = ss.store.ScanLocal(turnPrefix, func(_ string, v []byte) error {
		var t api.SessionTurn
		if json.Unmarshal(v, &t) == nil {
			d.Transcript = append(d.Transcript, t)
		}
		return ctx.Err()
	})
	if err != nil {
		return d, err
	}
	d.Lessons, err = ss.lessons(d.Client, d.ID)
	return d, err
}

// SearchSessions finds the turns of this machine's sessions that hold
// every word of the query, newest session first.
func (ss *Sessions) SearchSessions(ctx context.Context, req api.SessionSearchRequest) ([]api.SessionHit, error) {
	limit := cmp.Or(req.Limit, 20)
	if limit < 1 || limit > api.MaxSessionHits {
		return nil, api.Invalidf("limit %d: use 1 to %d", req.Limit, api.MaxSessionHits)
	}
	if len(req.Query) > api.MaxSessionQuery {
		return nil, api.Invalidf("query of %d bytes: the limit is %d", len(req.Query), api.MaxSessionQuery)
	}
	switch req.Scope {
	case api.ScopeAll, api.ScopePrompts, api.ScopeCommands, api.ScopeFiles, api.ScopeErrors, api.ScopeDecisions:
	default:
		return nil, api.Invalidf("scope %q: use prompts, commands, files, errors or decisions", req.Scope)
	}
	words := strings.FieldsFunc(strings.ToLower(req.Query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 && req.Scope == api.ScopeAll {
		return nil, api.Invalidf("give words to search for, or a scope")
	}
	var metas []api.Session
	err := ss.store.ScanLocal(sessionKeyPrefix, func(_ string, v []byte) error {
		var s api.Session
		if json.Unmarshal(v, &s) == nil && sessionSelected(s, req) {
			metas = append(metas, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(metas, func(a, b api.Session) int { return b.End.Compare(a.End) })
	hits := []api.SessionHit{}
	for _, s := range metas {
		_, turnPrefix := sessionKey(s.Client, s.ID)
		var found []api.SessionHit
		err := ss.store.ScanLocal(turnPrefix, func(_ string, v []byte) error {
			var t api.SessionTurn
			if json.Unmarshal(v, &t) == nil && turnInScope(t, req.Scope) && turnHolds(t, words) {
				found = append(found, api.SessionHit{Session: s.ID, Client: s.Client, Namespace: s.Namespace, Turn: t})
			}
			return ctx.Err()
		})
		if err != nil {
			return nil, err
		}
		slices.Reverse(found) // the latest turns of a session first
		hits = append(hits, found[:min(len(found), limit-len(hits))]...)
		if len(hits) == limit {
			break
		}
	}
	return hits, nil
}

func sessionSelected(s api.Session, req api.SessionSearchRequest) bool {
	return (req.Namespace == "" || s.Namespace == req.Namespace) &&
		(req.Client == "" || s.Client == req.Client) &&
		(req.Since.IsZero() || !s.End.Before(req.Since)) &&
		(req.Until.IsZero() || !s.Start.After(req.Until))
}

func turnInScope(t api.SessionTurn, scope string) bool {
	switch scope {
	case api.ScopePrompts:
		return t.Role == string(transcript.RoleUser)
	case api.ScopeCommands:
		return t.Command != ""
	case api.ScopeFiles:
		return len(t.Files) > 0
	case api.ScopeErrors:
		return t.Failed
	case api.ScopeDecisions:
		return t.Role != string(transcript.RoleTool) && decisionRE.MatchString(t.Text)
	}
	return true
}

// turnHolds reports whether the turn's text, command or files hold every
// word.
func turnHolds(t api.SessionTurn, words []string) bool {
	hay := strings.ToLower(t.Text + "\n" + t.Command + "\n" + strings.Join(t.Files, "\n"))
	for _, w := range words {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

func (ss *Sessions) localSession(key string) (sessionRecord, error) {
	data, err := ss.store.GetLocal(key)
	if err != nil {
		return sessionRecord{}, err
	}
	var s sessionRecord
	if err := json.Unmarshal(data, &s); err != nil {
		return sessionRecord{}, fmt.Errorf("session record %s: %w", key, err)
	}
	return s, nil
}

func (ss *Sessions) hasLocalSession(client, id string) bool {
	key, _ := sessionKey(client, id)
	_, err := ss.store.GetLocal(key)
	return err == nil
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b.UTC()
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b.UTC()
	}
	return a
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to at most max bytes, at a character boundary.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}
