package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/aging"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/rules"
	"github.com/memmesh/memmesh/search"
	"github.com/memmesh/memmesh/storage"
)

// Lifecycle defaults.
const defaultConfidenceHalfLife = 180 * 24 * time.Hour

// DefaultLifecycleInterval is how often the daemon runs a lifecycle pass.
const DefaultLifecycleInterval = time.Hour

// lifecycleStartDelay is how long after start the first scheduled pass
// waits (or the interval, if shorter): a pass reads every memory and edge,
// seconds of CPU on a large store, which a daemon that just started
// should spend answering instead.
const lifecycleStartDelay = time.Minute

// derivedLife is what a lifecycle pass derives about one live memory.
type derivedLife struct {
	heads string // the version of the memory it was derived from
	stale bool
	decay float64
}

// lifecycle holds the derived state of the last lifecycle pass and the
// read counts behind maturity. Nothing of it is replicated: every node
// derives staleness, expiry and decay the same way from the same
// documents, and reads are local by design.
type lifecycle struct {
	mu      sync.RWMutex
	derived map[string]derivedLife
	reads   map[string]int
	last    api.LifecycleReport
}

// derive gives the search ranking what the last pass derived about id and
// its current maturity.
func (l *lifecycle) derive(id string) search.Derived {
	l.mu.RLock()
	defer l.mu.RUnlock()
	d := l.derived[id]
	return search.Derived{Stale: d.stale, Decay: d.decay, Maturity: aging.Weight(aging.Maturity(l.reads[id]))}
}

// changed drops what a pass derived about a memory that has changed
// since: its staleness is judged again by the next pass.
func (l *lifecycle) changed(m *model.Memory) {
	heads := strings.Join(m.Heads, ",")
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.derived[m.ID]; ok && d.heads != heads {
		delete(l.derived, m.ID)
	}
}

// read counts one read of id and returns the new count.
func (l *lifecycle) read(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads[id]++
	return l.reads[id]
}

// moveReads gives memory id to the reads counted of memory from.
func (l *lifecycle) moveReads(from, to string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.reads[from]; ok {
		l.reads[to] = r
		delete(l.reads, from)
	}
}

func (l *lifecycle) readsOf(id string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.reads[id]
}

// confidenceDecay is the factor m's stated confidence has decayed by at
// now (aging.Decay).
func confidenceDecay(m *model.Memory, now time.Time, halfLife time.Duration) float64 {
	return aging.Decay(m.Evergreen, m.Provenance.UpdatedAt, now, halfLife)
}

// RunLifecycle runs a lifecycle pass now: it judges every live memory's
// staleness (by age, supersession and lack of links, as Stale does),
// counts the expired, decays confidence and reads maturity from this
// machine's read counts. The results feed search ranking until the next
// pass. The pass writes nothing to memories: every node derives the same
// state from the same documents, so nodes never fight over it. The daemon
// runs a pass a minute after start and every LifecycleInterval.
func (n *Node) RunLifecycle(ctx context.Context) (api.LifecycleReport, error) {
	began := time.Now()
	now := n.now()
	linked, err := n.linkedMemories(ctx, now)
	if err != nil {
		return api.LifecycleReport{}, err
	}
	superseded, err := n.superseded(ctx)
	if err != nil {
		return api.LifecycleReport{}, err
	}
	// Every memory is judged: read each edge once, not each memory's.
	rules := n.staleRules(ctx)
	defer rules.close()
	rules.linked = func(id string) (bool, error) { return linked[id], nil }
	rules.supersededBy = func(id string) ([]string, error) { return superseded[id], nil }

	r := api.LifecycleReport{
		At:          now.UTC(),
		Maturity:    map[api.Maturity]int{},
		StaleByRule: map[string]int{},
		Namespaces:  map[string]int{},
	}
	derived := map[string]derivedLife{} // by full memory id
	var promote []string                // learned memories recalled often enough
	err = n.store.All(storage.KindMemory, func(rec storage.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var m model.Memory
		if err := json.Unmarshal(rec.Value, &m); err != nil {
			return fmt.Errorf("decode memory %s: %w", rec.ID, err)
		}
		r.Memories++
		if m.Status != model.StatusActive && m.Status != model.StatusStale {
			return nil
		}
		if m.Expired(now) {
			r.Expired++
			return nil
		}
		r.Live++
		r.Namespaces[m.Namespace]++
		r.Maturity[aging.Maturity(n.life.readsOf(m.ID))]++
		if m.Tier == model.TierAuto && n.life.readsOf(m.ID) >= promoteReads {
			promote = append(promote, m.ID)
		}
		d := derivedLife{heads: strings.Join(m.Heads, ","), decay: confidenceDecay(&m, now, n.confidenceHalfLife())}
		if d.decay < 0.5 {
			r.Decayed++
		}
		if m.Status == model.StatusActive {
			reasons, err := rules.reasons(&m)
			if err != nil {
				return err
			}
			d.stale = len(reasons) > 0
			if d.stale {
				r.Stale++
			}
			for _, reason := range reasons {
				r.StaleByRule[reason.Rule]++
			}
		}
		derived[m.ID] = d
		return nil
	})
	if err != nil {
		return api.LifecycleReport{}, fmt.Errorf("lifecycle pass: %w", err)
	}
	if r.Promoted, err = n.promote(ctx, promote); err != nil {
		return api.LifecycleReport{}, fmt.Errorf("lifecycle pass: %w", err)
	}
	r.TookMS = float64(time.Since(began).Microseconds()) / 1000

	n.life.mu.Lock()
	n.life.derived = derived
	n.life.last = r
	n.life.mu.Unlock()
	n.log.Info("lifecycle pass", "memories", r.Memories, "live", r.Live, "stale", r.Stale,
		"expired", r.Expired, "decayed", r.Decayed, "took_ms", r.TookMS)
	return r, nil
}

// promoteReads is how often this machine must have recalled an auto-tier
// memory (one learned from a session, say) before it is promoted to
// agent: a recalled memory earned its place.
const promoteReads = 2

// promote raises the memories ids to tier agent, with that tier's time to
// live from now; one forgotten or purged since is skipped.
func (n *Node) promote(ctx context.Context, ids []string) (int, error) {
	tier := model.TierAgent
	ttl := fmt.Sprintf("%dd", int(rules.TierDefaults(tier).TTL.Hours()/24))
	done := 0
	for _, id := range ids {
		_, err := n.Update(ctx, DisplayID(id), api.UpdateRequest{Tier: &tier, TTL: &ttl})
		if errors.Is(err, api.ErrNotFound) {
			continue
		}
		if err != nil {
			return done, fmt.Errorf("promote %s: %w", DisplayID(id), err)
		}
		done++
	}
	return done, nil
}

// LastLifecycle returns the report of the last lifecycle pass since the
// node started; its At is zero when none ran yet.
func (n *Node) LastLifecycle() api.LifecycleReport {
	n.life.mu.RLock()
	defer n.life.mu.RUnlock()
	return n.life.last
}

func (n *Node) confidenceHalfLife() time.Duration {
	if n.cfg.ConfidenceHalfLife > 0 {
		return n.cfg.ConfidenceHalfLife
	}
	return defaultConfidenceHalfLife
}

// loadReads reads this machine's read counts (recordAccess) for the
// lifecycle's maturity.
func (n *Node) loadReads() (map[string]int, error) {
	reads := map[string]int{}
	err := n.store.ScanLocal(accessPrefix, func(key string, value []byte) error {
		var a accessStats
		if json.Unmarshal(value, &a) == nil {
			reads[strings.TrimPrefix(key, accessPrefix)] = a.Count
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read access counts: %w", err)
	}
	return reads, nil
}

// linkedMemories returns the full ids of the memories a valid edge starts
// or ends at, reading every edge once.
func (n *Node) linkedMemories(ctx context.Context, now time.Time) (map[string]bool, error) {
	linked := map[string]bool{}
	err := n.store.All(storage.KindEdge, func(rec storage.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var e model.Edge
		if err := json.Unmarshal(rec.Value, &e); err != nil {
			return fmt.Errorf("decode edge %s: %w", rec.ID, err)
		}
		if !validAt(&e, now) {
			return nil
		}
		for _, end := range []string{e.From, e.To} {
			if id, ok := strings.CutPrefix(end, IDPrefix); ok {
				linked[id] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read edges: %w", err)
	}
	return linked, nil
}

// runLifecycle runs a pass shortly after start and then every interval
// until ctx ends.
// A failed pass is logged and tried again at the next tick.
func (n *Node) runLifecycle(ctx context.Context, interval time.Duration) {
	n.every(ctx, min(interval, lifecycleStartDelay), interval, func(ctx context.Context) {
		if _, err := n.RunLifecycle(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("lifecycle pass failed", "err", err)
		}
	})
}

// every calls fn once first has passed on the node's clock, then every
// interval after it returns, until ctx ends.
func (n *Node) every(ctx context.Context, first, interval time.Duration, fn func(context.Context)) {
	t := n.clock.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		fn(ctx)
		t.Reset(interval)
	}
}
