package transcript

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// allocated runs f and returns the bytes it allocated on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestALineOf100MBIsSkippedWithoutHoldingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(claudeTurn)
	w.WriteString(`{"type":"user","message":{"role":"user","content":"`)
	chunk := strings.Repeat("x", 1<<20)
	for range 100 {
		w.WriteString(chunk)
	}
	w.WriteString("\"}}\n")
	w.WriteString(strings.Replace(claudeTurn, "thanks", "and", 1))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var b Batch
	alloc := allocated(func() {
		b, err = ClaudeCode{}.Read(path, Cursor{}, Limits{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Session.Turns) != 2 || b.Session.Turns[1].Text != "and, now commit it" || b.Session.Turns[1].Line != 3 {
		t.Errorf("turns around the long line: %+v", b.Session.Turns)
	}
	if len(b.Warnings) != 1 || b.Warnings[0].Line != 2 || b.Warnings[0].Path != path {
		t.Errorf("warnings %+v, want one at line 2", b.Warnings)
	}
	if alloc > 40<<20 {
		t.Errorf("reading a 100 MB line allocated %d MB", alloc>>20)
	}
}

func TestA2GBFileIsStreamedInBoundedReads(t *testing.T) {
	// A sparse file: a turn, 2 GB of NUL bytes (one line with no end, so
	// it is skipped), a turn.
	path := filepath.Join(t.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(claudeTurn)
	const hole = 2 << 30
	if _, err := f.WriteAt([]byte("\n"+claudeTurn), hole); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var turns []Turn
	var warnings []Warning
	reads := 0
	alloc := allocated(func() {
		cur := Cursor{}
		for {
			b, err := ClaudeCode{}.Read(path, cur, Limits{Bytes: 768 << 20})
			if err != nil {
				t.Fatal(err)
			}
			reads++
			turns, warnings = append(turns, b.Session.Turns...), append(warnings, b.Warnings...)
			cur = b.Cursor
			if !b.More || reads > 10 {
				break
			}
		}
	})
	if reads != 3 {
		t.Errorf("%d reads of 768 MB, want 3", reads)
	}
	if len(turns) != 2 || turns[1].Line != 3 || turns[1].Index != 1 {
		t.Errorf("turns %+v", turns)
	}
	if len(warnings) != 1 || warnings[0].Line != 2 {
		t.Errorf("warnings %+v", warnings)
	}
	if alloc > 40<<20 {
		t.Errorf("reading 2 GB allocated %d MB", alloc>>20)
	}
}

func TestTenThousandToolOutputsComeInBoundedReads(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	path := filepath.Join(t.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	const calls = 10000
	big := 0
	for i := range calls {
		fmt.Fprintf(w, `{"type":"assistant","sessionId":"s","timestamp":"2026-11-20T09:00:00Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"cat part%d.log"}}]}}`+"\n", i, i)
		n := 10 + rng.IntN(200)
		if rng.IntN(100) == 0 {
			n, big = 100<<10, big+1
		}
		fmt.Fprintf(w, `{"type":"user","sessionId":"s","timestamp":"2026-11-20T09:00:01Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]}}`+"\n", i, strings.Repeat("o", n))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	lim := DefaultLimits()
	cur := Cursor{}
	var turns []Turn
	reads, cut := 0, 0
	for {
		b, err := ClaudeCode{}.Read(path, cur, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if len(b.Session.Turns) > lim.Turns+1 {
			t.Errorf("one read returned %d turns", len(b.Session.Turns))
		}
		for _, turn := range b.Session.Turns {
			if len(turn.Text) > lim.TurnText {
				t.Errorf("turn %d holds %d bytes", turn.Index, len(turn.Text))
			}
			if turn.Cut > 0 {
				cut++
			}
		}
		turns = append(turns, b.Session.Turns...)
		cur = b.Cursor
		if !b.More {
			break
		}
	}
	if len(turns) != 2*calls || reads != 2*calls/lim.Turns {
		t.Fatalf("%d turns in %d reads, want %d in %d", len(turns), reads, 2*calls, 2*calls/lim.Turns)
	}
	for i, turn := range turns {
		if turn.Index != i {
			t.Fatalf("turn %d has index %d", i, turn.Index)
		}
	}
	if cut != big {
		t.Errorf("%d turns cut, want the %d large outputs", cut, big)
	}
	if last := turns[len(turns)-1]; last.Command != fmt.Sprintf("cat part%d.log", calls-1) {
		t.Errorf("the last output is of %q", last.Command)
	}
}

func TestJunkIsWarnedOfNeverFatal(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(rng.UintN(256))
	}
	for _, a := range Adapters(Config{}) {
		t.Run(a.Client(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "junk.json")
			if err := os.WriteFile(path, junk, 0o600); err != nil {
				t.Fatal(err)
			}
			b, err := a.Read(path, Cursor{}, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Warnings) == 0 && a.Client() != "aider" {
				t.Errorf("no warning for junk")
			}
			for _, w := range b.Warnings {
				if w.Path != path || w.Reason == "" {
					t.Errorf("warning %+v", w)
				}
			}
		})
	}
}

func TestADocumentOverTheLimitIsSkipped(t *testing.T) {
	for _, path := range []string{geminiFixture, clineFixture, continueFixture} {
		a := map[string]Adapter{geminiFixture: Gemini{}, clineFixture: Cline{}, continueFixture: Continue{}}[path]
		b, err := a.Read(path, Cursor{}, Limits{Document: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Session.Turns) != 0 || len(b.Warnings) != 1 || !strings.Contains(b.Warnings[0].Reason, "over the limit") {
			t.Errorf("%s: %d turns, warnings %v", a.Client(), len(b.Session.Turns), b.Warnings)
		}
	}
}
