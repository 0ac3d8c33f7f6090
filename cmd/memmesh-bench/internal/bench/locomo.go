package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/node"
)

// LocomoOptions configures Locomo.
type LocomoOptions struct {
	// Data is the folder holding the conversations (conv-*.json).
	Data string
	// Baseline, when set, is the reference script run on the same files
	// (locomo_fts5_baseline.py); its figures are reported beside ours.
	Baseline string
	// NoGraph searches by text alone, without links, threads and
	// sessions.
	NoGraph bool
	Common
}

// Validate checks the options.
func (o LocomoOptions) Validate() error {
	if o.Data == "" {
		return errors.New("--data is required: the folder holding the conv-*.json files")
	}
	return nil
}

// LocomoReport holds the retrieval figures of the LoCoMo protocol.
type LocomoReport struct {
	Conversations int             `json:"conversations"`
	Memories      int             `json:"memories"`
	Questions     int             `json:"questions"`
	RecallAt5     float64         `json:"r@5"`
	RecallAt10    float64         `json:"r@10"`
	MRR           float64         `json:"mrr"`
	Latency       Summary         `json:"latency"`
	Baseline      *LocomoBaseline `json:"baseline,omitempty"`
}

// LocomoBaseline is the reference script's output.
type LocomoBaseline struct {
	System     string  `json:"system"`
	Questions  int     `json:"questions"`
	RecallAt5  float64 `json:"r@5"`
	RecallAt10 float64 `json:"r@10"`
	MRR        float64 `json:"mrr"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
}

// Rows implements Report.
func (r LocomoReport) Rows() []Row {
	rows := []Row{
		{"conversations", fmt.Sprint(r.Conversations)},
		{"memories (one per turn)", fmt.Sprint(r.Memories)},
		{"questions", fmt.Sprint(r.Questions)},
		{"memmesh R@5", fmt.Sprintf("%.3f", r.RecallAt5)},
		{"memmesh R@10", fmt.Sprintf("%.3f", r.RecallAt10)},
		{"memmesh MRR", fmt.Sprintf("%.3f", r.MRR)},
		{"memmesh query latency", r.Latency.String()},
	}
	if b := r.Baseline; b != nil {
		rows = append(rows,
			Row{b.System + " R@5", fmt.Sprintf("%.3f", b.RecallAt5)},
			Row{b.System + " R@10", fmt.Sprintf("%.3f", b.RecallAt10)},
			Row{b.System + " MRR", fmt.Sprintf("%.3f", b.MRR)},
			Row{b.System + " query latency", Summary{P50: b.P50, P99: b.P99}.String()},
		)
	}
	return rows
}

// conversation is the part of a LoCoMo file the protocol reads.
type conversation struct {
	name      string
	sessions  []session
	questions []question
}

type session struct {
	n     int
	at    time.Time
	turns []turn
}

type turn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

// content is the memory of a turn, as the protocol spells it.
func (t turn) content() string {
	s := t.Speaker + ": " + t.Text
	if t.Caption != "" {
		s += " (shared an image: " + t.Caption + ")"
	}
	return s
}

type question struct {
	Question string   `json:"question"`
	Category int      `json:"category"`
	Evidence []string `json:"evidence"`
}

// sessionTime is the layout of session_N_date_time ("1:56 pm on 8 May, 2023").
const sessionTime = "3:04 pm on 2 January, 2006"

// readConversation parses one conv-*.json file.
func readConversation(path string) (conversation, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return conversation{}, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return conversation{}, fmt.Errorf("%s: %w", path, err)
	}
	c := conversation{name: strings.TrimSuffix(filepath.Base(path), ".json")}
	for n := 1; ; n++ {
		key := fmt.Sprintf("session_%d", n)
		body, ok := fields[key]
		if !ok {
			break
		}
		s := session{n: n}
		var when string
		if err := json.Unmarshal(fields[key+"_date_time"], &when); err != nil {
			return conversation{}, fmt.Errorf("%s: %s_date_time: %w", path, key, err)
		}
		if s.at, err = time.Parse(sessionTime, strings.ToLower(when)); err != nil {
			return conversation{}, fmt.Errorf("%s: %s_date_time: %w", path, key, err)
		}
		if err := json.Unmarshal(body, &s.turns); err != nil {
			return conversation{}, fmt.Errorf("%s: %s: %w", path, key, err)
		}
		c.sessions = append(c.sessions, s)
	}
	var qs []question
	if err := json.Unmarshal(fields["qa"], &qs); err != nil {
		return conversation{}, fmt.Errorf("%s: qa: %w", path, err)
	}
	for _, q := range qs {
		// Category 5 is adversarial (unanswerable); the others need evidence.
		if q.Category >= 1 && q.Category <= 4 && len(q.Evidence) > 0 {
			c.questions = append(c.questions, q)
		}
	}
	if len(c.sessions) == 0 {
		return conversation{}, fmt.Errorf("%s: no sessions", path)
	}
	return c, nil
}

// Locomo runs the LoCoMo retrieval protocol through a real node: every
// turn is captured as a memory of its conversation's namespace at its
// session's time, and every question is searched in that namespace.
func Locomo(ctx context.Context, opts LocomoOptions) (LocomoReport, error) {
	if err := opts.Validate(); err != nil {
		return LocomoReport{}, err
	}
	log := logger(opts.Log)
	paths, err := filepath.Glob(filepath.Join(opts.Data, "conv-*.json"))
	if err != nil || len(paths) == 0 {
		return LocomoReport{}, fmt.Errorf("bench: no conv-*.json in %q", opts.Data)
	}
	slices.Sort(paths)
	convs := make([]conversation, len(paths))
	for i, p := range paths {
		if convs[i], err = readConversation(p); err != nil {
			return LocomoReport{}, fmt.Errorf("bench: %w", err)
		}
	}

	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return LocomoReport{}, err
	}
	defer cleanup()
	n, err := node.New(node.Config{Home: dir, Logger: nodeLogger(log)})
	if err != nil {
		return LocomoReport{}, err
	}
	defer n.Close()
	if err := n.Start(ctx); err != nil {
		return LocomoReport{}, err
	}

	var r LocomoReport
	var recall5, recall10, rr float64
	var lat Latencies
	for _, c := range convs {
		turnsOf, err := capture(ctx, n, c)
		if err != nil {
			return LocomoReport{}, err
		}
		r.Memories += len(turnsOf)
		log.Info("captured", "conversation", c.name, "memories", len(turnsOf), "questions", len(c.questions))
		for _, q := range c.questions {
			start := time.Now()
			res, err := n.Search(ctx, api.SearchRequest{Query: q.Question, Namespace: c.name, Limit: 10, NoGraph: opts.NoGraph})
			lat = append(lat, time.Since(start))
			if err != nil {
				return LocomoReport{}, fmt.Errorf("bench: %s: %q: %w", c.name, q.Question, err)
			}
			var ranked []string
			for _, h := range res.Results {
				ranked = append(ranked, turnsOf[h.ID]...)
			}
			evidence := evidenceSet(q.Evidence)
			recall5 += recall(ranked, evidence, 5)
			recall10 += recall(ranked, evidence, 10)
			if i := slices.IndexFunc(ranked[:min(len(ranked), 10)], func(id string) bool { return evidence[id] }); i >= 0 {
				rr += 1 / float64(i+1)
			}
			r.Questions++
		}
	}
	r.Conversations = len(convs)
	if r.Questions > 0 {
		q := float64(r.Questions)
		r.RecallAt5, r.RecallAt10, r.MRR = recall5/q, recall10/q, rr/q
	}
	r.Latency = lat.Summary()

	if opts.Baseline != "" {
		b, err := runBaseline(ctx, opts.Baseline, paths)
		if err != nil {
			return LocomoReport{}, err
		}
		r.Baseline = &b
	}
	return r, nil
}

// capture stores the turns of c and returns the turn ids each memory
// holds (a repeated turn is one memory).
func capture(ctx context.Context, n *node.Node, c conversation) (map[string][]string, error) {
	turnsOf := make(map[string][]string)
	for _, s := range c.sessions {
		for i, t := range s.turns {
			res, err := remember(ctx, n, api.RememberRequest{
				Namespace: c.name,
				Content:   t.content(),
				Session:   fmt.Sprintf("%s/session_%d", c.name, s.n),
				TTL:       "none",
				// Turns a few seconds apart keep their order.
				At: s.at.Add(time.Duration(i) * 10 * time.Second),
			})
			if err != nil {
				return nil, fmt.Errorf("bench: %s %s: %w", c.name, t.DiaID, err)
			}
			turnsOf[res.ID] = append(turnsOf[res.ID], t.DiaID)
		}
	}
	return turnsOf, nil
}

// evidenceSet returns the evidence ids, trimmed, exactly as the reference
// script reads them, so that both count the same.
func evidenceSet(evidence []string) map[string]bool {
	set := make(map[string]bool)
	for _, e := range evidence {
		set[strings.TrimSpace(e)] = true
	}
	return set
}

// recall is the share of evidence among the first k of ranked.
func recall(ranked []string, evidence map[string]bool, k int) float64 {
	found := 0
	for _, id := range ranked[:min(len(ranked), k)] {
		if evidence[id] {
			found++
		}
	}
	return float64(found) / float64(len(evidence))
}

// runBaseline runs the reference script on paths and reads its figures.
func runBaseline(ctx context.Context, script string, paths []string) (LocomoBaseline, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "python3", append([]string{script}, paths...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return LocomoBaseline{}, fmt.Errorf("bench: baseline %s: %w: %s", script, err, strings.TrimSpace(errOut.String()))
		}
		return LocomoBaseline{}, fmt.Errorf("bench: baseline %s: %w", script, err)
	}
	var b LocomoBaseline
	if err := json.Unmarshal(out.Bytes(), &b); err != nil {
		return LocomoBaseline{}, fmt.Errorf("bench: baseline %s printed no figures: %w", script, err)
	}
	return b, nil
}
