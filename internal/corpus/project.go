package corpus

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
)

// A project is what a team's agents store about one code base over a few
// weeks: key memories of known kinds written first (decisions, a decision
// they superseded, conventions, preferences, open tasks, a note that
// contradicts a decision), then many later, low-value notes, some of them
// near duplicates of each other. A brief must show the key memories
// whatever the notes around them.

// keyMemory is one key memory of a project.
type keyMemory struct {
	kind, tier, content string
}

// The key memories, in the order they were written.
var keyMemories = []keyMemory{
	{"decision", "human", "Use pgx, not lib/pq, for every Postgres connection: lib/pq is in maintenance mode."},
	{"decision", "human", "Payments go through the Stripe adapter in billing/stripe.go; no other package calls Stripe."},
	{"decision", "human", "Feature flags live in LaunchDarkly; never add environment-variable flags."},
	{"decision", "human", "The public API is versioned in the path (/v1, /v2); a breaking change needs a new version."},
	{"decision", "human", "Background jobs run on the queue in internal/queue, not in goroutines started by handlers."},
	{"decision", "human", "Sessions are stored in Redis with a 24-hour TTL; JWTs are only for service-to-service calls."},
	{"decision", "human", "Migrations are written with goose and must be reversible: each has a down step."},
	{"decision", "human", "We deploy with Helm from deploy/helm; nobody runs kubectl apply by hand in production."},
	{"decision", "human", "Errors returned to clients are RFC 7807 problem+json bodies."},
	{"decision", "human", "The frontend talks only to the BFF in cmd/bff, never to internal services directly."},
	{"decision", "human", "Sessions are stored in Postgres, in the sessions table."}, // superseded by the sixth
	{"convention", "agent", "Handler tests are table-driven, with t.Run names."},
	{"convention", "agent", "Log with log/slog; the request id goes under the key req_id."},
	{"convention", "agent", "Wrap errors with %w and a lower-case message naming the operation."},
	{"preference", "human", "Prefer small PRs, under 400 changed lines; split refactors from behaviour changes."},
	{"preference", "human", "Prefer explicit SQL with sqlc over an ORM."},
	{"preference", "human", "The author merges after one approval; no force-push once review started."},
	{"task", "agent", "Migrate the cron jobs in scripts/cron to the queue scheduler."},
	{"task", "agent", "Add rate limiting to POST /v1/login (rateLimiter.Allow) before launch."},
	{"task", "agent", "Remove lib/pq from go.mod once the reports service moves to pgx."},
	{"task", "agent", "Write the runbook for rotating the Stripe webhook secret."},
	{"note", "agent", "Use lib/pq for the reports service: pgx breaks its COPY usage."}, // contradicts the first
}

// The links among key memories: indexes into keyMemories.
var keyLinks = []struct {
	from int
	rel  string
	to   int
}{{5, "supersedes", 10}, {21, "contradicts", 0}}

// ProjectKeys is the number of key memories of a generated project.
var ProjectKeys = len(keyMemories)

// Project generates a project of size memories (at least ProjectKeys) in
// namespace ns, dated in the four weeks before now: the key memories first,
// then notes, about one in ten of them with a cluster of near duplicates
// linked to it as memmesh links them (related_to, origin auto-link), and
// a few links among notes. The same seed gives the same project.
type Project struct {
	NS   string
	Size int
	Now  time.Time
	Seed uint64
}

// Write writes the project as an import file for `memmesh import` and
// returns the display ids ("m-" + id) of its key memories.
func (p Project) Write(w io.Writer) ([]string, error) {
	if p.Size < len(keyMemories) {
		return nil, fmt.Errorf("corpus: a project has at least %d memories", len(keyMemories))
	}
	g := New(p.Seed)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	var ids []string
	memory := func(kind, tier, content string, at time.Time) error {
		id := g.id()
		ids = append(ids, "m-"+id)
		return enc.Encode(exportLine{
			Type: "memory", ID: id, Namespace: p.NS, Kind: kind, Tier: tier, Confidence: 0.8, Status: "active",
			Provenance: provenance{Device: "BENCH", CreatedAt: at, UpdatedAt: at},
			Revisions:  []revision{{ID: g.id(), Text: content, At: at}},
		})
	}
	link := func(from, rel, to string, origin string, at time.Time) error {
		return enc.Encode(edgeLine{Type: "edge", Edge: model.Edge{ID: crdt.EdgeID(from, rel, to), From: from, Rel: rel, To: to,
			Strength: 1, Origin: origin, CreatedAt: at, UpdatedAt: at}})
	}
	start := p.Now.Add(-28 * 24 * time.Hour)
	for i, k := range keyMemories {
		if err := memory(k.kind, k.tier, k.content, start.Add(time.Duration(i)*time.Hour)); err != nil {
			return nil, err
		}
	}
	for _, l := range keyLinks {
		if err := link(ids[l.from], l.rel, ids[l.to], "manual", start.Add(time.Duration(len(keyMemories))*time.Hour)); err != nil {
			return nil, err
		}
	}
	// Notes fill the three weeks after the key memories, evenly.
	notes := p.Size - len(keyMemories)
	first := start.Add(7 * 24 * time.Hour)
	step := (p.Now.Sub(first) - time.Hour) / time.Duration(max(notes, 1))
	for i := 0; i < notes; {
		at := first.Add(time.Duration(i) * step)
		m := g.Next()
		tier := "agent"
		if g.rng.IntN(3) == 0 {
			tier = "auto"
		}
		if err := memory("note", tier, m.Content, at); err != nil {
			return nil, err
		}
		head := ids[len(ids)-1]
		i++
		if g.rng.IntN(10) == 0 {
			// A cluster of near duplicates: the same note again, its
			// reference number changed.
			for d := range min(2+g.rng.IntN(6), notes-i) {
				if err := memory("note", tier, fmt.Sprintf("%s (seen again, %d)", m.Content, d+2), at.Add(time.Duration(d+1)*time.Second)); err != nil {
					return nil, err
				}
				if err := link(ids[len(ids)-1], "related_to", head, "auto-link", at); err != nil {
					return nil, err
				}
				i++
			}
		}
		if g.rng.IntN(5) == 0 && len(ids) > len(keyMemories)+1 {
			other := ids[len(keyMemories)+g.rng.IntN(len(ids)-len(keyMemories)-1)]
			if err := link(head, "related_to", other, "manual", at); err != nil {
				return nil, err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	return ids[:len(keyMemories)], nil
}

// edgeLine is an edge line of memmesh's export format.
type edgeLine struct {
	Type string `json:"type"`
	model.Edge
}
