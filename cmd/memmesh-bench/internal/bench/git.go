package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/node"
)

// GitOptions configures Git.
type GitOptions struct {
	Commits  int    // commits of the generated history
	Files    int    // files the history keeps
	Memories int    // memories naming a file and a symbol of it
	New      int    // commits added and checked one at a time
	Seed     uint64 // drives the history and the memories
	Common
}

// Validate checks the options.
func (o GitOptions) Validate() error {
	return firstErr(atLeast("commits", o.Commits, 1), atLeast("files", o.Files, 1),
		atLeast("memories", o.Memories, 1), atLeast("new", o.New, 1))
}

// GitReport holds the figures of git staleness checks.
type GitReport struct {
	Commits  int    `json:"commits"`
	Files    int    `json:"files"`
	Memories int    `json:"memories"`
	Seed     uint64 `json:"seed"`
	// GenerateS is the time git fast-import took to write the history.
	GenerateS float64 `json:"generate_s"`
	// The first check: reading the whole history into the file index
	// (FirstReadS), then judging every memory (FirstJudgeS); CPU of this
	// process and of the git processes it ran.
	FirstReadS  float64 `json:"first_read_s"`
	FirstJudgeS float64 `json:"first_judge_s"`
	FirstCPU    float64 `json:"first_cpu_s"`
	FirstGitCPU float64 `json:"first_git_cpu_s"`
	Stale       int     `json:"stale"` // memories stale after the first check
	// StaleListMS is one `memmesh stale` of the namespace (its reasons
	// derived for up to 1,000 memories).
	StaleListMS float64 `json:"stale_list_ms"`
	// A check after each of New commits: the read of the one commit, and
	// the whole check with the judging of every memory.
	New      int     `json:"new"`
	NewRead  Summary `json:"new_read"`
	NewCheck Summary `json:"new_check"`
}

// Rows implements Report.
func (r GitReport) Rows() []Row {
	return []Row{
		{"history", fmt.Sprintf("%d commits over %d files (git fast-import %s s), seed %d", r.Commits, r.Files, num(r.GenerateS), r.Seed)},
		{"memories naming a file and a symbol", fmt.Sprint(r.Memories)},
		{"first check: read the history", fmt.Sprintf("%s s", num(r.FirstReadS))},
		{"first check: judge every memory", fmt.Sprintf("%s s (%d stale)", num(r.FirstJudgeS), r.Stale)},
		{"first check: CPU (memmesh, git)", fmt.Sprintf("%s s, %s s", num(r.FirstCPU), num(r.FirstGitCPU))},
		{"memmesh stale (reasons of 1,000 memories)", fmt.Sprintf("%s ms", num(r.StaleListMS))},
		{fmt.Sprintf("one new commit (%d): read", r.New), r.NewRead.String()},
		{"one new commit: whole check with judging", r.NewCheck.String()},
	}
}

// gitHistory generates a history for git fast-import: each commit
// changes one to three files (a third of the changes renames the file's
// function), every 100th renames a file and every 250th deletes one and
// adds another; memories are written along the way, each naming a file
// and its function as they are at a commit.
type gitHistory struct {
	rng      *rand.Rand
	paths    []string // the live files
	versions []int    // the version of each file's function
	next     int      // the next file number
	at       time.Time
	mark     int
	memories []api.RememberRequest
	credit   float64 // memories owed by the rate, written as they reach one
}

func newGitHistory(seed uint64, files int, at time.Time) *gitHistory {
	h := &gitHistory{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), at: at}
	for range files {
		h.paths = append(h.paths, h.newPath())
		h.versions = append(h.versions, 0)
	}
	return h
}

func (h *gitHistory) newPath() string {
	h.next++
	return fmt.Sprintf("pkg%03d/file%05d.go", h.next%200, h.next)
}

func (h *gitHistory) fn(i int) string {
	return fmt.Sprintf("Handle%d_%d", i, h.versions[i])
}

func (h *gitHistory) content(i, rev int) string {
	return fmt.Sprintf("package p\n\n// revision %d\nfunc %s() {}\n", rev, h.fn(i))
}

// write writes commits commits to w, the first one adding every file
// unless from names the commit to build on, and rate memories per commit.
func (h *gitHistory) write(w io.Writer, commits int, from string, rate float64) error {
	bw := bufio.NewWriter(w)
	for c := range commits {
		h.mark++
		h.at = h.at.Add(time.Minute)
		msg := fmt.Sprintf("change %d", h.mark)
		fmt.Fprintf(bw, "commit refs/heads/main\nmark :%d\ncommitter t <t@example.com> %d +0000\ndata %d\n%s\n", h.mark, h.at.Unix(), len(msg), msg)
		switch {
		case c == 0 && from != "":
			fmt.Fprintf(bw, "from %s\n", from)
		case c > 0:
			fmt.Fprintf(bw, "from :%d\n", h.mark-1)
		}
		if c == 0 && from == "" {
			for i := range h.paths {
				h.modify(bw, i)
			}
		} else {
			for range 1 + h.rng.IntN(3) {
				i := h.rng.IntN(len(h.paths))
				if h.rng.IntN(3) == 0 {
					h.versions[i]++
				}
				h.modify(bw, i)
			}
			if h.mark%100 == 0 {
				i, to := h.rng.IntN(len(h.paths)), h.newPath()
				fmt.Fprintf(bw, "R %s %s\n", h.paths[i], to)
				h.paths[i] = to
			}
			if h.mark%250 == 0 {
				i := h.rng.IntN(len(h.paths))
				fmt.Fprintf(bw, "D %s\n", h.paths[i])
				h.paths[i], h.versions[i] = h.newPath(), 0
				h.modify(bw, i)
			}
		}
		bw.WriteString("\n")
		for h.credit += rate; h.credit >= 1; h.credit-- {
			i := h.rng.IntN(len(h.paths))
			h.memories = append(h.memories, api.RememberRequest{
				Namespace: "bench", Tier: model.TierHuman, At: h.at.Add(30 * time.Second),
				Content: fmt.Sprintf("`%s` holds `%s()`, which the server calls on every request (note %d).", h.paths[i], h.fn(i), len(h.memories)),
			})
		}
	}
	return bw.Flush()
}

func (h *gitHistory) modify(w *bufio.Writer, i int) {
	text := h.content(i, h.mark)
	fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", h.paths[i], len(text), text)
}

// fastImport runs git fast-import in repo with the stream write writes.
func fastImport(ctx context.Context, repo string, write func(io.Writer) error) error {
	cmd := exec.CommandContext(ctx, "git", "fast-import", "--quiet", "--force")
	cmd.Dir = repo
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out := &capped{max: 4096}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: git fast-import: %w", err)
	}
	werr := write(in)
	in.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("bench: git fast-import: %w: %s", err, out.b)
	}
	return werr
}

// capped keeps the first max bytes written to it.
type capped struct {
	b   []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.b = append(c.b, p[:min(len(p), max(c.max-len(c.b), 0))]...)
	return len(p), nil
}

// childCPU is the CPU time of this process's children that ended.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Git measures the git staleness checks: a history of opts.Commits
// commits written with git fast-import, opts.Memories memories naming a
// file and its function as they were at some commit, the first check of
// the tree (the history read, then every memory judged), and a check after
// each of opts.New commits added one at a time.
func Git(ctx context.Context, opts GitOptions) (GitReport, error) {
	if err := opts.Validate(); err != nil {
		return GitReport{}, err
	}
	log := logger(opts.Log)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return GitReport{}, err
	}
	defer cleanup()
	r := GitReport{Commits: opts.Commits, Files: opts.Files, Seed: opts.Seed, New: opts.New}

	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return r, err
	}
	if out, err := exec.CommandContext(ctx, "git", "init", "-q", "-b", "main", repo).CombinedOutput(); err != nil {
		return r, fmt.Errorf("bench: git init: %w: %s", err, out)
	}
	start := time.Now().Add(-time.Duration(opts.Commits+opts.New+10) * time.Minute)
	h := newGitHistory(opts.Seed, opts.Files, start)
	log.Info("writing the history", "commits", opts.Commits, "files", opts.Files)
	t0 := time.Now()
	rate := float64(opts.Memories) / float64(opts.Commits)
	if err := fastImport(ctx, repo, func(w io.Writer) error { return h.write(w, opts.Commits, "", rate) }); err != nil {
		return r, err
	}
	r.GenerateS = time.Since(t0).Seconds()
	if len(h.memories) > opts.Memories {
		h.memories = h.memories[:opts.Memories]
	}
	r.Memories = len(h.memories)

	n, err := node.New(node.Config{Home: filepath.Join(dir, "node"), Logger: nodeLogger(log)})
	if err != nil {
		return r, err
	}
	defer n.Close()
	if err := n.Start(ctx); err != nil {
		return r, err
	}
	log.Info("remembering", "memories", r.Memories)
	for _, m := range h.memories {
		if _, err := remember(ctx, n, m); err != nil {
			return r, err
		}
	}

	log.Info("first check")
	err = inPhase(ctx, "first", func(ctx context.Context) error {
		cpu0, git0, t0 := cpuTime(), childCPU(), time.Now()
		res, err := n.CheckGit(ctx, api.GitCheckRequest{Namespace: "bench", Dir: repo})
		if err != nil {
			return err
		}
		if len(res) != 1 || res[0].Commits != opts.Commits {
			return fmt.Errorf("bench: the first check read %+v, want %d commits", res, opts.Commits)
		}
		total := time.Since(t0).Seconds()
		r.FirstReadS = res[0].TookMS / 1000
		r.FirstJudgeS = total - r.FirstReadS
		r.FirstCPU, r.FirstGitCPU = (cpuTime() - cpu0).Seconds(), (childCPU() - git0).Seconds()
		r.Stale = res[0].Stale
		return nil
	})
	if err != nil {
		return r, err
	}
	t0 = time.Now()
	if _, err := n.Stale(ctx, api.StaleRequest{Namespace: "bench"}); err != nil {
		return r, err
	}
	r.StaleListMS = ms(time.Since(t0))
	log.Info("first check done", "read_s", num(r.FirstReadS), "judge_s", num(r.FirstJudgeS), "stale", r.Stale)

	var read, check Latencies
	for range opts.New {
		if err := fastImport(ctx, repo, func(w io.Writer) error { return h.write(w, 1, "refs/heads/main^0", 0) }); err != nil {
			return r, err
		}
		t0 := time.Now()
		res, err := n.CheckGit(ctx, api.GitCheckRequest{Namespace: "bench", Dir: repo})
		if err != nil {
			return r, err
		}
		if len(res) != 1 || res[0].Commits != 1 {
			return r, fmt.Errorf("bench: a check after one commit read %+v", res)
		}
		check = append(check, time.Since(t0))
		read = append(read, time.Duration(res[0].TookMS*float64(time.Millisecond)))
	}
	r.NewRead, r.NewCheck = read.Summary(), check.Summary()
	log.Info("new commits", "read", r.NewRead.String(), "check", r.NewCheck.String())
	return r, nil
}
