package node

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/storage"
)

// ContextRequest asks for a namespace's brief.
type ContextRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Budget    int    `json:"budget,omitempty"` // tokens; default 2000
}

// BriefItem is one memory in a brief, shortened to fit.
type BriefItem struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	Kind       string    `json:"kind"`
	Tier       crdt.Tier `json:"tier"`
	Confidence float64   `json:"confidence"`
	Device     string    `json:"device"`
	Agent      string    `json:"agent,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
	Content    string    `json:"content"`
	Truncated  bool      `json:"truncated,omitempty"`
	Reason     string    `json:"reason,omitempty"` // conflicts and stale alerts: why it is listed there
}

// Brief is what an agent should know at the start of a session in a
// namespace, cut to a token budget.
type Brief struct {
	Namespace   string      `json:"namespace"`
	LoadedAt    time.Time   `json:"loaded_at"`
	Budget      int         `json:"budget"`
	Tokens      int         `json:"tokens"` // estimated tokens used
	Conflicts   []BriefItem `json:"conflicts"`
	Cycles      []Cycle     `json:"cycles"`           // acyclic relations that merged into a cycle through this namespace
	FromPeers   []BriefItem `json:"from_peers"`       // written or changed on other machines since this one last asked
	Decisions   []BriefItem `json:"recent_decisions"` // kind decision, changed in the last 14 days
	Tasks       []BriefItem `json:"open_tasks"`       // kind task, active
	Active      []BriefItem `json:"active"`           // the other active memories, most important first
	StaleAlerts []BriefItem `json:"stale_alerts"`
}

// Empty reports whether the brief lists nothing.
func (b *Brief) Empty() bool {
	return len(b.Conflicts)+len(b.Cycles)+len(b.FromPeers)+len(b.Decisions)+len(b.Tasks)+len(b.Active)+len(b.StaleAlerts) == 0
}

const (
	defaultBudget     = 2000
	maxBudget         = 100_000
	briefCandidates   = 200
	briefItemMaxRunes = 600 // content shown per item before it is cut
	itemOverhead      = 16  // tokens for an item's id, title and metadata
)

// recentDecisions is how long a decision counts as recent in a brief.
const recentDecisions = 14 * 24 * time.Hour

// firstAsk is how far back "from peers" reaches when this machine has
// never asked for the namespace's brief.
const firstAsk = 7 * 24 * time.Hour

// lastAsked is when this machine last asked for ns's brief (local data).
func (n *Node) lastAsked(ns string, now time.Time) time.Time {
	data, err := n.store.GetLocal("brief/asked/" + ns)
	if err != nil {
		return now.Add(-firstAsk)
	}
	t, err := time.Parse(time.RFC3339Nano, string(data))
	if err != nil {
		return now.Add(-firstAsk)
	}
	return t
}

// markAsked records that this machine was given ns's brief at now, to the
// millisecond: memories keep their times to the millisecond, and one
// written in the same millisecond after the ask must still count as new.
func (n *Node) markAsked(ns string, now time.Time) {
	if err := n.store.PutLocal("brief/asked/"+ns, []byte(now.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano))); err != nil {
		n.log.Warn("cannot record when the brief was read", "namespace", ns, "err", err)
	}
}

// estimateTokens approximates a text's token count (about four bytes each).
func estimateTokens(s string) int { return (len(s) + 3) / 4 }

// briefWeight orders memories for a brief: trust, confidence after decay,
// centrality (how many valid edges it has: a memory much linked to holds
// much together), recency and maturity.
func briefWeight(m *Memory, degree int, now time.Time) float64 {
	tier := map[crdt.Tier]float64{crdt.TierHuman: 1.2, crdt.TierAgent: 1, crdt.TierAuto: 0.85}[m.Tier]
	age := now.Sub(m.Provenance.UpdatedAt).Hours() / 24
	centrality := 1 + 0.25*math.Log2(1+float64(degree))
	return tier * (0.5 + 0.5*m.ConfidenceNow) * centrality * (0.7 + 0.3*math.Exp2(-age/30)) * maturityWeights[m.Maturity]
}

// Context returns the brief of a namespace within the budget, in order of
// urgency: conflicts (sync conflicts and contradictions), cycles, what other
// machines learned since this one last asked, recent decisions, open
// tasks, the most important other active memories, and stale alerts.
func (n *Node) Context(ctx context.Context, req ContextRequest) (Brief, error) {
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return Brief{}, err
	}
	budget := req.Budget
	if budget == 0 {
		budget = defaultBudget
	}
	if budget < 100 || budget > maxBudget {
		return Brief{}, invalidf("budget %d: use 100 to %d tokens", budget, maxBudget)
	}
	now := n.now()
	b := Brief{Namespace: ns, LoadedAt: now.UTC(), Budget: budget, Conflicts: []BriefItem{}, Cycles: []Cycle{},
		FromPeers: []BriefItem{}, Decisions: []BriefItem{}, Tasks: []BriefItem{}, Active: []BriefItem{}, StaleAlerts: []BriefItem{}}
	add := func(into *[]BriefItem, m *Memory, reason string) bool {
		item, cost := briefItem(m)
		item.Reason = reason
		cost += estimateTokens(reason)
		if b.Tokens+cost > budget {
			return false
		}
		b.Tokens += cost
		*into = append(*into, item)
		return true
	}

	conflicts, err := n.conflicted(ns)
	if err != nil {
		return b, err
	}
	for i := range conflicts {
		add(&b.Conflicts, &conflicts[i], "edited on two machines at once")
	}
	facts, err := n.graphFacts(ctx)
	if err != nil {
		return b, err
	}
	contradicted := map[string]bool{}
	for _, c := range facts.pairs {
		for i, id := range c.ids {
			if c.namespaces[i] != ns || contradicted[id] {
				continue
			}
			m, err := n.load(id)
			if err != nil {
				continue // removed since
			}
			contradicted[id] = true
			v := n.view(m)
			add(&b.Conflicts, &v, "contradicts "+n.shortID(c.ids[1-i]))
		}
	}
	for _, c := range facts.cycles {
		cost := itemOverhead + estimateTokens(strings.Join(c.Members, " "))
		if n.touchesNamespace(c.Members, ns) && b.Tokens+cost <= budget {
			b.Tokens += cost
			b.Cycles = append(b.Cycles, c)
		}
	}
	active, err := n.List(ctx, ListRequest{Namespace: ns, Statuses: []crdt.Status{crdt.StatusActive}, Limit: briefCandidates})
	if err != nil {
		return b, err
	}
	rules := n.staleRules()
	since := n.lastAsked(ns, now)
	weight := make(map[string]float64, len(active))
	for i := range active {
		edges, err := n.edgesAt(rules, active[i].Memory.ID)
		if err != nil {
			return b, err
		}
		weight[active[i].ID] = briefWeight(&active[i], len(edges), now)
	}
	slices.SortStableFunc(active, func(a, c Memory) int { return cmp.Compare(weight[c.ID], weight[a.ID]) })
	var alerts []StaleMemory
	var fromPeers, decisions, tasks, rest []*Memory
	for i := range active {
		m := &active[i]
		reasons, err := rules.reasons(&m.Memory)
		if err != nil {
			return b, err
		}
		switch {
		case len(reasons) > 0:
			alerts = append(alerts, StaleMemory{Memory: *m, Reasons: reasonTexts(reasons)})
		case len(m.Conflict) > 0 || contradicted[m.Memory.ID]:
			// listed with the conflicts
		case m.Provenance.Device != n.id.DeviceID && !m.Provenance.UpdatedAt.Before(since):
			fromPeers = append(fromPeers, m)
		case m.Kind == "decision" && now.Sub(m.Provenance.UpdatedAt) <= recentDecisions:
			decisions = append(decisions, m)
		case m.Kind == "task":
			tasks = append(tasks, m)
		default:
			rest = append(rest, m)
		}
	}
	// Sections take the budget in order of urgency.
	for _, sec := range []struct {
		into *[]BriefItem
		from []*Memory
	}{{&b.FromPeers, fromPeers}, {&b.Decisions, decisions}, {&b.Tasks, tasks}, {&b.Active, rest}} {
		for _, m := range sec.from {
			add(sec.into, m, "")
		}
	}
	stale, err := n.List(ctx, ListRequest{Namespace: ns, Statuses: []crdt.Status{crdt.StatusStale}, Limit: 20})
	if err != nil {
		return b, err
	}
	for _, m := range stale {
		alerts = append(alerts, StaleMemory{Memory: m, Reasons: []string{"marked stale"}})
	}
	for i := range alerts {
		add(&b.StaleAlerts, &alerts[i].Memory, strings.Join(alerts[i].Reasons, "; "))
	}
	n.markAsked(ns, now)
	return b, nil
}

func briefItem(m *Memory) (BriefItem, int) {
	content, truncated := m.Content, false
	if utf8.RuneCountInString(content) > briefItemMaxRunes {
		content, truncated = string([]rune(content)[:briefItemMaxRunes])+"…", true
	}
	item := BriefItem{
		ID: m.ID, Title: m.Title, Kind: m.Kind, Tier: m.Tier, Confidence: m.Confidence,
		Device: m.Provenance.Device, Agent: m.Provenance.Agent, UpdatedAt: m.Provenance.UpdatedAt,
		Content: content, Truncated: truncated,
	}
	return item, itemOverhead + estimateTokens(m.Title) + estimateTokens(content)
}

// touchesNamespace reports whether any of the endpoints is a memory of ns.
func (n *Node) touchesNamespace(endpoints []string, ns string) bool {
	for _, e := range endpoints {
		if id, ok := strings.CutPrefix(e, IDPrefix); ok {
			if m, err := n.load(id); err == nil && m.Namespace == ns {
				return true
			}
		}
	}
	return false
}

// conflicted returns the live memories of ns with an unresolved sync
// conflict, found through their index term.
func (n *Node) conflicted(ns string) ([]Memory, error) {
	var out []Memory
	err := n.store.Scan(storage.KindMemory, storage.Term{Field: "conflict", Value: "yes"}, func(id string) error {
		m, err := n.load(id)
		if err != nil {
			return err
		}
		if m.Namespace == ns && live(&m, n.now()) {
			out = append(out, n.view(m))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find conflicts: %w", err)
	}
	return out, nil
}
