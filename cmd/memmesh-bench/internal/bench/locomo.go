package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/embed/embedconf"
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
	// Embed, when it names a provider, runs the protocol a second time
	// with search by meaning, on a node of its own; both are reported.
	// A builtin model is read from the folder EmbedModels/Embed.Model.
	Embed       embedconf.Config
	EmbedModels string
	Common
}

// Validate checks the options.
func (o LocomoOptions) Validate() error {
	if o.Data == "" {
		return errors.New("--data is required: the folder holding the conv-*.json files")
	}
	return o.Embed.Check()
}

// LocomoReport holds the retrieval figures of the LoCoMo protocol.
type LocomoReport struct {
	Conversations int     `json:"conversations"`
	Memories      int     `json:"memories"`
	Questions     int     `json:"questions"`
	RecallAt5     float64 `json:"r@5"`
	RecallAt10    float64 `json:"r@10"`
	MRR           float64 `json:"mrr"`
	Latency       Summary `json:"latency"`
	// Meaning holds the figures with search by meaning.
	Meaning  *LocomoMeaning  `json:"meaning,omitempty"`
	Baseline *LocomoBaseline `json:"baseline,omitempty"`
}

// LocomoMeaning holds the figures of the run with search by meaning.
type LocomoMeaning struct {
	Embedder   string  `json:"embedder"` // its tag: provider/model/dims
	RecallAt5  float64 `json:"r@5"`
	RecallAt10 float64 `json:"r@10"`
	MRR        float64 `json:"mrr"`
	Latency    Summary `json:"latency"`
	// Embedding is the time spent waiting, after each conversation's
	// capture, until every memory had its vector.
	Embedding time.Duration `json:"embedding_ns"`
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
	if m := r.Meaning; m != nil {
		rows = append(rows,
			Row{"memmesh + meaning R@5", fmt.Sprintf("%.3f", m.RecallAt5)},
			Row{"memmesh + meaning R@10", fmt.Sprintf("%.3f", m.RecallAt10)},
			Row{"memmesh + meaning MRR", fmt.Sprintf("%.3f", m.MRR)},
			Row{"memmesh + meaning query latency", m.Latency.String()},
			Row{"embedder", m.Embedder},
			Row{"embedding, waited after the captures", m.Embedding.Round(time.Millisecond).String()},
		)
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

	words, err := locomoRun(ctx, opts, "words", convs, nil)
	if err != nil {
		return LocomoReport{}, err
	}
	r := LocomoReport{Conversations: len(convs), Memories: words.memories, Questions: words.questions,
		RecallAt5: words.recall5, RecallAt10: words.recall10, MRR: words.mrr, Latency: words.latency}
	emb, err := opts.Embed.New(opts.EmbedModels)
	if err != nil {
		return LocomoReport{}, fmt.Errorf("bench: %w", err)
	}
	if emb != nil {
		m, err := locomoRun(ctx, opts, "meaning", convs, emb)
		if err != nil {
			return LocomoReport{}, err
		}
		r.Meaning = &LocomoMeaning{Embedder: emb.Info().Tag(), RecallAt5: m.recall5, RecallAt10: m.recall10, MRR: m.mrr, Latency: m.latency, Embedding: m.embedding}
	}

	if opts.Baseline != "" {
		b, err := runBaseline(ctx, opts.Baseline, paths)
		if err != nil {
			return LocomoReport{}, err
		}
		r.Baseline = &b
	}
	return r, nil
}

// locomoFigures are the figures of one run of the protocol.
type locomoFigures struct {
	memories, questions    int
	recall5, recall10, mrr float64
	latency                Summary
	embedding              time.Duration
}

// locomoRun runs the protocol on a fresh node (in the folder name of
// opts.Dir, when set), with emb as its embedder when set; the questions
// wait until every memory has its vector.
func locomoRun(ctx context.Context, opts LocomoOptions, name string, convs []conversation, emb embed.Embedder) (locomoFigures, error) {
	log := logger(opts.Log)
	home := opts.Dir
	if home != "" {
		home = filepath.Join(home, name)
	}
	dir, cleanup, err := workDir(home)
	if err != nil {
		return locomoFigures{}, err
	}
	defer cleanup()
	n, err := node.New(node.Config{Home: dir, Logger: nodeLogger(log), Embedder: emb})
	if err != nil {
		return locomoFigures{}, err
	}
	defer n.Close()
	if err := n.Start(ctx); err != nil {
		return locomoFigures{}, err
	}
	var f locomoFigures
	var recall5, recall10, rr float64
	var lat Latencies
	for _, c := range convs {
		// Each conversation's questions are asked once it is captured,
		// before the next: the index holds what it held in earlier runs.
		turnsOf, err := capture(ctx, n, c)
		if err != nil {
			return locomoFigures{}, err
		}
		f.memories += len(turnsOf)
		log.Info("captured", "conversation", c.name, "memories", len(turnsOf), "questions", len(c.questions))
		if emb != nil {
			start := time.Now()
			if err := waitEmbedded(ctx, n, log); err != nil {
				return locomoFigures{}, err
			}
			f.embedding += time.Since(start)
		}
		for _, q := range c.questions {
			start := time.Now()
			res, err := n.Search(ctx, api.SearchRequest{Query: q.Question, Namespace: c.name, Limit: 10, NoGraph: opts.NoGraph})
			lat = append(lat, time.Since(start))
			if err != nil {
				return locomoFigures{}, fmt.Errorf("bench: %s: %q: %w", c.name, q.Question, err)
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
			f.questions++
		}
	}
	if f.questions > 0 {
		q := float64(f.questions)
		f.recall5, f.recall10, f.mrr = recall5/q, recall10/q, rr/q
	}
	f.latency = lat.Summary()
	return f, nil
}

// waitEmbedded waits until every memory of n has its vector. It fails
// when the embedder reports an error, or makes no progress for
// embedStall.
func waitEmbedded(ctx context.Context, n *node.Node, log *slog.Logger) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	logged, moved, done := time.Now(), time.Now(), -1
	for {
		st, err := n.EmbedStatus(ctx)
		if err != nil {
			return err
		}
		switch {
		case st.Error != "":
			return fmt.Errorf("bench: embed: %s", st.Error)
		case st.Embedded == st.Total && !st.Scanning:
			return nil
		case st.Embedded != done:
			done, moved = st.Embedded, time.Now()
		case time.Since(moved) > embedStall:
			return fmt.Errorf("bench: embed: no progress for %s at %d of %d memories", embedStall, st.Embedded, st.Total)
		}
		if time.Since(logged) > 5*time.Second {
			log.Info("embedding", "embedded", st.Embedded, "total", st.Total)
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// embedStall is how long the embedding may make no progress.
const embedStall = 5 * time.Minute

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
