package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/memmesh/memmesh/extract/labelled"
	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/transcript"
)

// SessionsOptions configures Sessions.
type SessionsOptions struct {
	// MB is the size of the transcript read, in MB.
	MB int
	// Hooks is how many times the ingest hook is run.
	Hooks int
	// Binary is the memmesh executable the daemon and the hooks run; ""
	// means the one beside this executable, else on PATH.
	Binary string
	// Corpus is a labelled corpus of sessions (see extract/labelled) to
	// measure the lessons' extraction on; "" measures none.
	Corpus string
	Common
}

// Validate checks the options.
func (o SessionsOptions) Validate() error {
	return firstErr(atLeast("mb", o.MB, 1), atMost("mb", o.MB, 2000), atLeast("hooks", o.Hooks, 1), atMost("hooks", o.Hooks, 10_000))
}

// SessionsReport holds the figures of reading agents' sessions.
type SessionsReport struct {
	Bytes int64 `json:"bytes"`
	Turns int   `json:"turns"`
	// Seconds and CPU are the wall and CPU time of the first read of the
	// whole transcript into a node (turns stored, summary and lessons
	// written).
	Seconds   float64 `json:"seconds"`
	CPU       float64 `json:"cpu_s"`
	MBPerS    float64 `json:"mb_per_s"`
	TurnsPerS float64 `json:"turns_per_s"`
	// Learned and Repeats count the session's lessons: new memories, and
	// memories they repeated (strengthened).
	Learned int `json:"learned"`
	Repeats int `json:"repeats"`
	// RereadMS is the time to read the transcript again after one turn
	// was appended to it.
	RereadMS float64 `json:"reread_ms"`
	Hooks    int     `json:"hooks"`
	// Hook is the latency of `memmesh sessions ingest --hook`, process
	// start to exit, against a running daemon.
	Hook Summary `json:"hook"`
	// HooksUnanswered counts the hooks that returned in time without the
	// daemon's answer (the read was not queued).
	HooksUnanswered int `json:"hooks_unanswered"`
	// Extraction is the precision and recall of the lessons learned from
	// the labelled corpus, when one was given.
	Extraction *labelled.Report `json:"extraction,omitempty"`
}

// Rows implements Report.
func (r SessionsReport) Rows() []Row {
	rows := []Row{
		{"transcript (Claude Code)", fmt.Sprintf("%s MB, %d turns", num(float64(r.Bytes)/1e6), r.Turns)},
		{"first read into a node", fmt.Sprintf("%s s, CPU %s s", num(r.Seconds), num(r.CPU))},
		{"read throughput", fmt.Sprintf("%s MB/s, %s turns/s", num(r.MBPerS), num(r.TurnsPerS))},
		{"lessons learned (new memories, repeats)", fmt.Sprintf("%d, %d", r.Learned, r.Repeats)},
		{"read again after one more turn", fmt.Sprintf("%s ms", num(r.RereadMS))},
		{"ingest hook, process start to exit", fmt.Sprintf("%s (%d runs, %d without the daemon's answer in time)", r.Hook, r.Hooks, r.HooksUnanswered)},
	}
	if r.Extraction != nil {
		for _, e := range r.Extraction.Rows() {
			rows = append(rows, Row{"lessons from the labelled corpus, " + e.Name, e.Figures})
		}
	}
	return rows
}

// Sessions measures reading agents' sessions: a generated Claude Code
// transcript of opts.MB read whole by a node (node.IngestTranscript:
// adapter, scrubbing, storage, summary, lessons), the same transcript
// read again after one more turn, and the latency of the ingest hook
// against a daemon; with opts.Corpus, the precision and recall of the
// lessons extracted from the labelled corpus.
func Sessions(ctx context.Context, opts SessionsOptions) (SessionsReport, error) {
	if err := opts.Validate(); err != nil {
		return SessionsReport{}, err
	}
	extraction, err := measureCorpus(opts.Corpus)
	if err != nil {
		return SessionsReport{}, err
	}
	binary, err := memmeshExecutable(opts.Binary)
	if err != nil {
		return SessionsReport{}, err
	}
	opts.Binary = binary
	log := logger(opts.Log)
	if extraction != nil {
		log.Info("labelled corpus", "sessions", extraction.Sessions,
			"precision", num(extraction.Overall.Precision()), "recall", num(extraction.Overall.Recall()))
	}
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return SessionsReport{}, err
	}
	defer cleanup()

	userHome := filepath.Join(dir, "user")
	path := filepath.Join(userHome, ".claude", "projects", "-home-dev-src-fetchkit", corpus.ClaudeSessionID+".jsonl")
	r := SessionsReport{Hooks: opts.Hooks, Extraction: extraction}
	if r.Bytes, err = writeTranscript(path, int64(opts.MB)*1e6); err != nil {
		return SessionsReport{}, err
	}
	n, err := node.New(node.Config{Home: filepath.Join(dir, "node"), Logger: nodeLogger(log), Sessions: &node.SessionsConfig{
		Readers: []transcript.Adapter{transcript.ClaudeCode{}}, Home: userHome, Interval: -1,
	}})
	if err != nil {
		return SessionsReport{}, err
	}
	defer n.Close()
	if err := n.Start(ctx); err != nil {
		return SessionsReport{}, err
	}

	log.Info("reading a transcript", "mb", opts.MB)
	err = inPhase(ctx, "read", func(ctx context.Context) error {
		cpu0, start := cpuTime(), time.Now()
		for {
			rep, err := n.IngestTranscript(ctx, "claude-code", path)
			if err != nil {
				return err
			}
			r.Turns += rep.Turns
			if !rep.More {
				break
			}
		}
		r.Seconds, r.CPU = time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds()
		return nil
	})
	if err != nil {
		return SessionsReport{}, err
	}
	r.MBPerS, r.TurnsPerS = float64(r.Bytes)/1e6/r.Seconds, float64(r.Turns)/r.Seconds
	if d, err := n.Session(ctx, corpus.ClaudeSessionID); err == nil {
		r.Learned, r.Repeats = d.Learned, d.Strengthened
	}
	log.Info("read", "turns", r.Turns, "seconds", num(r.Seconds), "mb_per_s", num(r.MBPerS))

	if err := appendTurn(path); err != nil {
		return SessionsReport{}, err
	}
	start := time.Now()
	if _, err := n.IngestTranscript(ctx, "claude-code", path); err != nil {
		return SessionsReport{}, err
	}
	r.RereadMS = ms(time.Since(start))

	hook, missed, err := hookLatencies(ctx, opts.Binary, dir, path, opts.Hooks)
	if err != nil {
		return SessionsReport{}, err
	}
	r.HooksUnanswered = missed
	r.Hook = hook.Summary()
	log.Info("hooks", "runs", opts.Hooks, "latency", r.Hook.String())
	return r, nil
}

// measureCorpus reads the labelled corpus in dir, if any, and measures
// the extraction on it.
func measureCorpus(dir string) (*labelled.Report, error) {
	if dir == "" {
		return nil, nil
	}
	sessions, err := labelled.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := labelled.Measure(sessions)
	return &r, nil
}

func writeTranscript(path string, size int64) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	n, err := corpus.WriteClaudeSession(f, size, 15)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// appendTurn appends a prompt to the transcript at path.
func appendTurn(path string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	line, _ := json.Marshal(map[string]any{"type": "user", "sessionId": corpus.ClaudeSessionID, "cwd": "/home/dev/src/fetchkit",
		"uuid": "appended", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"role": "user", "content": "always run the race detector on the client package"}})
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// hookLatencies starts a daemon and runs the ingest hook runs times
// against it, as a client runs it: a new process given the hook's JSON,
// which names the transcript at path.
func hookLatencies(ctx context.Context, binary, dir, path string, runs int) (lat Latencies, missed int, err error) {
	home := filepath.Join(dir, "daemon")
	// The daemon's HOME holds no transcripts: it reads only what the
	// hooks queue.
	d, err := startDaemon(binary, home, filepath.Join(dir, "serve.log"), "HOME="+home)
	if err != nil {
		return nil, 0, err
	}
	defer d.stop()
	if err := d.ready(ctx); err != nil {
		return nil, 0, err
	}
	input, _ := json.Marshal(map[string]string{"session_id": corpus.ClaudeSessionID, "transcript_path": path, "hook_event_name": "SessionEnd"})
	for range runs {
		cmd := exec.CommandContext(ctx, binary, "--home", home, "sessions", "ingest", "--hook", "--client", "claude-code")
		cmd.Env = append(daemonEnv(), "HOME="+home)
		cmd.Stdin = bytes.NewReader(input)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, 0, fmt.Errorf("bench: the ingest hook: %w: %s", err, stderr.String())
		}
		lat = append(lat, time.Since(start))
		if stderr.Len() > 0 {
			missed++ // it answered in time, without the daemon's word
		}
	}
	return lat, missed, nil
}
