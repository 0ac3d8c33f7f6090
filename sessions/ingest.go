package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transcript"
)

// Config makes a node read agents' transcripts.
type Config struct {
	// Readers are the transcript adapters, one per client.
	Readers []transcript.Adapter
	// Home is the user's home directory, under which the readers find
	// their clients' transcripts.
	Home string
	// Interval is the time between two scans of the readers' locations;
	// 0 means a minute, negative none (only IngestTranscript reads).
	Interval time.Duration
	// Namespace names the namespace of a session's project directory
	// ("" when the session names none); nil, or "", means the default
	// namespace.
	Namespace func(project string) string
}

// transcriptKeyPrefix holds, per transcript file, where its last read
// ended (local data).
const transcriptKeyPrefix = "transcript/"

// maxReadsPerIngest bounds the reads of one transcript in one ingest; the
// rest waits for the next.
const maxReadsPerIngest = 64

// transcriptState is what a node keeps of a transcript file between two
// reads.
type transcriptState struct {
	Client  string            `json:"client"`
	Path    string            `json:"path"`
	Session string            `json:"session,omitempty"` // its session id, once known
	Cursor  transcript.Cursor `json:"cursor"`
}

func transcriptKey(path string) string {
	sum := sha256.Sum256([]byte(path))
	return transcriptKeyPrefix + hex.EncodeToString(sum[:16])
}

// reader returns the configured reader of client.
func (ss *Sessions) reader(client string) (transcript.Adapter, error) {
	var known []string
	if ss.cfg != nil {
		for _, r := range ss.cfg.Readers {
			if r.Client() == client {
				return r, nil
			}
			known = append(known, r.Client())
		}
	}
	return nil, api.Invalidf("client %q: this node reads %v", client, known)
}

// IngestTranscript reads what is new in the transcript at path, written
// by client, and ingests it (IngestSession). A file read before is read
// from where the last read ended; one rewritten or truncated since is
// read again whole, and its session's turns replaced.
func (ss *Sessions) IngestTranscript(ctx context.Context, client, path string) (api.IngestReport, error) {
	rep := api.IngestReport{Client: client, Path: path}
	r, err := ss.checkTranscript(client, path)
	if err != nil {
		return rep, err
	}
	key := transcriptKey(path)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	state := transcriptState{Client: client, Path: path}
	if data, err := ss.store.GetLocal(key); err == nil {
		if json.Unmarshal(data, &state) != nil || state.Client != client {
			state = transcriptState{Client: client, Path: path}
		}
	} else if !errors.Is(err, storage.ErrNotFound) {
		return rep, err
	}
	project := ""
	for range maxReadsPerIngest {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		b, err := r.Read(path, state.Cursor, transcript.Limits{TurnText: api.MaxTurnText})
		if err != nil {
			return rep, fmt.Errorf("read %s transcript %s: %w", client, path, err)
		}
		for _, w := range b.Warnings {
			ss.log.Warn("transcript: part skipped", "client", client, "path", w.Path, "line", w.Line, "record", w.Record, "reason", w.Reason)
		}
		rep.Warnings += len(b.Warnings)
		if b.Session.ID == "" {
			b.Session.ID = state.Session
		}
		if b.Session.ID != "" && (len(b.Session.Turns) > 0 || b.Restarted) {
			if b.Restarted {
				if err := ss.resetSession(client, b.Session.ID); err != nil {
					return rep, err
				}
				rep.Restarted = true
			}
			project = b.Session.Project
			s, err := ss.ingestSession(ctx, b.Session, ss.sessionNamespace(project))
			if err != nil {
				return rep, err
			}
			rep.Session, rep.Turns = s.ID, rep.Turns+len(b.Session.Turns)
			state.Session = s.ID
		}
		state.Cursor = b.Cursor
		data, err := json.Marshal(state)
		if err != nil {
			return rep, err
		}
		// After the session: a crash between the two reads the turns
		// again, and IngestSession skips those it has.
		if err := ss.store.PutLocalDurable(key, data); err != nil {
			return rep, err
		}
		if !b.More {
			return rep, nil
		}
	}
	rep.More = true
	return rep, nil
}

// maxTranscriptPath bounds a transcript's path.
const maxTranscriptPath = 4096

// checkTranscript checks that path names a regular file and returns the
// reader of client.
func (ss *Sessions) checkTranscript(client, path string) (transcript.Adapter, error) {
	r, err := ss.reader(client)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(path) || len(path) > maxTranscriptPath {
		return nil, api.Invalidf("transcript path %q: give an absolute path", clip(path, 200))
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, api.Invalidf("transcript %s: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, api.Invalidf("transcript %s: not a regular file", path)
	}
	return r, nil
}

// sessionNamespace is the namespace of a session run in project.
func (ss *Sessions) sessionNamespace(project string) string {
	if ss.cfg != nil && ss.cfg.Namespace != nil {
		if ns := ss.cfg.Namespace(project); ns != "" {
			return ns
		}
	}
	return api.DefaultNamespace
}

// resetSession drops a session's turns, to be read again from the start.
// Callers hold sessionsMu.
func (ss *Sessions) resetSession(client, id string) error {
	sid, err := sessionID(id)
	if err != nil {
		return err
	}
	metaKey, turnPrefix := sessionKey(client, sid)
	meta, err := ss.localSession(metaKey)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := ss.store.DeleteLocalPrefix(turnPrefix); err != nil {
		return err
	}
	meta.Turns, meta.Failures, meta.FilesChanged, meta.Commands = 0, 0, []string{}, []string{}
	meta.Prompt, meta.Outcome = "", ""
	return ss.putSession(metaKey, meta, true)
}

// IngestAll reads what is new in every transcript the readers find.
func (ss *Sessions) IngestAll(ctx context.Context) ([]api.IngestReport, error) {
	if ss.cfg == nil {
		return nil, nil
	}
	var reps []api.IngestReport
	var errs []error
	for _, r := range ss.cfg.Readers {
		paths, err := r.Discover(ss.cfg.Home)
		if err != nil {
			errs = append(errs, fmt.Errorf("find %s transcripts: %w", r.Client(), err))
			continue
		}
		slices.Sort(paths)
		for _, path := range paths {
			rep, err := ss.IngestTranscript(ctx, r.Client(), path)
			if ctx.Err() != nil {
				return reps, ctx.Err()
			}
			if err != nil {
				// One bad transcript does not stop the others.
				ss.log.Warn("transcript not read", "client", r.Client(), "path", path, "err", err)
				errs = append(errs, err)
				continue
			}
			if rep.Turns > 0 || rep.Restarted {
				reps = append(reps, rep)
			}
		}
	}
	return reps, errors.Join(errs...)
}

// maxQueuedIngests bounds the reads asked for and not yet done; more are
// dropped (the next scan reads what they would have).
const maxQueuedIngests = 32

// Ingest reads transcripts as req asks: now (Wait), or in the background.
func (ss *Sessions) Ingest(ctx context.Context, req api.IngestRequest) ([]api.IngestReport, error) {
	if ss.cfg == nil {
		return nil, api.Invalidf("this node reads no transcripts")
	}
	if req.Path == "" {
		if req.Client != "" {
			return nil, api.Invalidf("give the transcript's path with its client")
		}
		if req.Wait {
			reps, err := ss.IngestAll(ctx)
			if reps == nil {
				reps = []api.IngestReport{}
			}
			return reps, err
		}
	} else if req.Wait {
		rep, err := ss.IngestTranscript(ctx, req.Client, req.Path)
		if err != nil {
			return nil, err
		}
		return []api.IngestReport{rep}, nil
	} else if _, err := ss.checkTranscript(req.Client, req.Path); err != nil {
		return nil, err
	}
	select {
	case ss.queue <- req:
	default:
		ss.log.Warn("too many transcript reads asked for at once; the next scan reads this one", "client", req.Client, "path", req.Path)
	}
	return []api.IngestReport{{Client: req.Client, Path: req.Path, Queued: true}}, nil
}

// Run scans the readers' locations every interval (never when
// negative), and reads what Ingest queued, until ctx is done.
func (ss *Sessions) Run(ctx context.Context, interval time.Duration) {
	t := ss.clock.NewTimer(0)
	if interval < 0 {
		t.Stop()
	}
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case req := <-ss.queue:
			if req.Path != "" {
				if _, err := ss.IngestTranscript(ctx, req.Client, req.Path); err != nil && ctx.Err() == nil {
					ss.log.Warn("transcript not read", "client", req.Client, "path", req.Path, "err", err)
				}
				continue
			}
		case <-t.Chan():
			t.Reset(interval)
		}
		reps, err := ss.IngestAll(ctx)
		if ctx.Err() != nil {
			return
		}
		turns := 0
		for _, r := range reps {
			turns += r.Turns
		}
		if turns > 0 {
			ss.log.Info("sessions read", "transcripts", len(reps), "turns", turns)
		}
		if err != nil {
			ss.log.Debug("some transcripts were not read", "err", err)
		}
	}
}
