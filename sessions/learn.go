package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/extract"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transcript"
)

// What a session teaches is derived from its turns with no model
// (extract): the user's instructions and corrections, decisions, bug
// fixes, the project's commands, pitfalls. Each candidate becomes a memory
// at tier auto (30 days from when it was learned, unless recalled:
// RunLifecycle promotes an auto
// memory read often enough to agent) with the session as its provenance,
// so it sits in the session's thread. A candidate that repeats a memory
// (the same text, or nearly) strengthens that memory instead of adding a
// copy. Which memory each candidate became is kept as local data
// ("learned/<client>/<session>/<rule>/<first turn>", with its evidence),
// so that reading the session again revises it instead of adding another.
const (
	learnedKeyPrefix = "learned/"
	// nearRepeat is the word similarity from which a candidate repeats a
	// memory.
	nearRepeat = 0.7
	// strengthenStep is what a repeat adds to a memory's confidence, up
	// to maxStrength.
	strengthenStep = 0.1
	maxStrength    = 0.95
	// maxLearnTurns bounds the turns of a session read for candidates at
	// once, and learnContext is how many turns before the new ones are
	// read with them (a fix's failed run, a decision's proposal).
	maxLearnTurns = 5000
	learnContext  = 200
	// maxSessionLessons bounds the memories one session adds.
	maxSessionLessons = 24
)

// errEnough stops a scan that read as much as it needs.
var errEnough = errors.New("enough")

// learned is what a candidate of a session became.
type learned struct {
	Memory  string `json:"memory"`  // full memory id
	Content string `json:"content"` // the candidate's content, to see it change
	Turns   []int  `json:"turns"`   // evidence: the session's turns it comes from
	Repeat  bool   `json:"repeat"`  // it strengthened a memory that was there
}

// learnFromSession stores what the session's turns from turn first on
// teach (read with the learnContext turns before them) and returns how
// many memories it added and strengthened. A read of a few new turns
// costs those turns and their context, not the whole session.
func (ss *Sessions) learnFromSession(ctx context.Context, meta api.Session, first int) (added, strengthened int, err error) {
	_, turnPrefix := sessionKey(meta.Client, meta.ID)
	s := transcript.Session{Client: meta.Client, ID: meta.ID, Project: meta.Project}
	from := fmt.Sprintf("%08d", max(0, first-learnContext))
	err = ss.store.ScanLocalFrom(turnPrefix, from, func(_ string, v []byte) error {
		var t api.SessionTurn
		if json.Unmarshal(v, &t) != nil {
			return nil
		}
		s.Turns = append(s.Turns, transcript.Turn{Index: t.Index, Time: t.Time, Role: transcript.Role(t.Role), Text: t.Text,
			Tool: t.Tool, Command: t.Command, Files: t.Files, Changed: t.Changed, Failed: t.Failed, ExitCode: t.ExitCode})
		if len(s.Turns) >= maxLearnTurns {
			return errEnough
		}
		return ctx.Err()
	})
	if err != nil && !errors.Is(err, errEnough) {
		return 0, 0, err
	}
	for _, c := range extract.Candidates(s) {
		if err := ctx.Err(); err != nil {
			return added, strengthened, err
		}
		if meta.Learned+added >= maxSessionLessons {
			break // a long session does not flood the namespace
		}
		a, st, err := ss.learn(ctx, meta, c)
		if err != nil {
			return added, strengthened, err
		}
		added, strengthened = added+a, strengthened+st
	}
	return added, strengthened, nil
}

// learn stores one candidate: a new memory, a revision of the one it
// became at an earlier read, or a repeat of a memory that was there.
func (ss *Sessions) learn(ctx context.Context, meta api.Session, c extract.Candidate) (added, strengthened int, err error) {
	first := 0
	if len(c.Evidence.Turns) > 0 {
		first = c.Evidence.Turns[0]
	}
	key := fmt.Sprintf("%s%s/%s/%s/%08d", learnedKeyPrefix, meta.Client, meta.ID, c.Rule, first)
	var was learned
	if data, err := ss.store.GetLocal(key); err == nil && json.Unmarshal(data, &was) == nil {
		if was.Content == c.Content || was.Repeat {
			return 0, 0, nil
		}
		_, err := ss.mem.Update(ctx, was.Memory, api.UpdateRequest{Title: &c.Title, Content: &c.Content, Agent: meta.Client})
		if err == nil {
			return 0, 0, ss.keepLearned(key, learned{Memory: was.Memory, Content: c.Content, Turns: c.Evidence.Turns})
		}
		if !errors.Is(err, api.ErrNotFound) {
			return 0, 0, err
		}
		// Forgotten since: learn it anew.
	} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, 0, err
	}
	req := api.RememberRequest{Namespace: meta.Namespace, Title: c.Title, Content: c.Content, Kind: c.Kind,
		Tier: model.TierAuto, Tags: []string{"learned", string(c.Rule)}, Agent: meta.Client, Session: meta.ID}
	if id, err := ss.mem.Repeat(req, nearRepeat); err != nil {
		return 0, 0, err
	} else if id != "" {
		if err := ss.strengthen(ctx, id); err != nil {
			return 0, 0, err
		}
		return 0, 1, ss.keepLearned(key, learned{Memory: id, Content: c.Content, Turns: c.Evidence.Turns, Repeat: true})
	}
	res, err := ss.mem.Remember(ctx, req)
	if err != nil {
		return 0, 0, fmt.Errorf("session %s: learn %s: %w", meta.ID, c.Rule, err)
	}
	m, err := ss.mem.Peek(res.ID)
	if err != nil {
		return 0, 0, err
	}
	return 1, 0, ss.keepLearned(key, learned{Memory: m.Memory.ID, Content: c.Content, Turns: c.Evidence.Turns})
}

// strengthen raises a repeated memory's confidence and, for a learned
// one, renews its time to live.
func (ss *Sessions) strengthen(ctx context.Context, id string) error {
	m, err := ss.mem.Peek(id) // not a read: a repeat is no recall
	if err != nil {
		return err
	}
	conf := max(m.Confidence, min(maxStrength, m.Confidence+strengthenStep)) // never lowered
	req := api.UpdateRequest{Confidence: &conf}
	if m.Tier == model.TierAuto {
		ttl := "30d"
		req.TTL = &ttl
	}
	_, err = ss.mem.Update(ctx, m.ID, req)
	return err
}

func (ss *Sessions) keepLearned(key string, l learned) error {
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return ss.store.PutLocal(key, data)
}

// lessons lists the memories learned from a session that still exist.
func (ss *Sessions) lessons(client, id string) ([]api.Lesson, error) {
	prefix := learnedKeyPrefix + client + "/" + id + "/"
	out := []api.Lesson{}
	err := ss.store.ScanLocal(prefix, func(key string, v []byte) error {
		var l learned
		if json.Unmarshal(v, &l) != nil {
			return nil
		}
		m, err := ss.mem.Peek(l.Memory)
		if err != nil || m.Status == model.StatusDeleted {
			return nil // forgotten or purged since
		}
		rule, _, _ := strings.Cut(strings.TrimPrefix(key, prefix), "/")
		out = append(out, api.Lesson{ID: m.ID, Kind: m.Kind, Title: m.Title, Rule: rule, Turns: l.Turns, Repeat: l.Repeat})
		return nil
	})
	return out, err
}
