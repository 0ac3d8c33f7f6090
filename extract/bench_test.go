package extract

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/transcript"
)

// BenchmarkCandidates times extraction over the labelled set (per
// session) and over one long session of 10,000 tool calls with their
// output, the size of a day's work of an agent.
func BenchmarkCandidates(b *testing.B) {
	b.Run("labelled", func(b *testing.B) {
		files, err := filepath.Glob("testdata/sessions/*.json")
		if err != nil || len(files) == 0 {
			b.Fatalf("no sessions: %v", err)
		}
		var sessions []transcript.Session
		for _, f := range files {
			sessions = append(sessions, loadSession(b, f))
		}
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			Candidates(sessions[i%len(sessions)])
		}
	})
	b.Run("10k-tool-calls", func(b *testing.B) {
		s := longSession(10000)
		var bytes int64
		for _, t := range s.Turns {
			bytes += int64(len(t.Text) + len(t.Command))
		}
		b.SetBytes(bytes)
		for b.Loop() {
			Candidates(s)
		}
	})
}

// longSession is a session of n tool calls: tests failing and passing,
// edits, and prompts now and then.
func longSession(n int) transcript.Session {
	b := newBuilder()
	out := strings.Repeat("ok  \tgithub.com/dev/app/pkg\t0.012s\n", 40)
	fail := "--- FAIL: TestX\n    x_test.go:9: got 3, want 4\n" + out
	for i := range n / 2 {
		switch i % 10 {
		case 0:
			b.user(fmt.Sprintf("Now do step %d. Always keep the API stable, and let's go with option %d because it is simpler.", i, i))
		case 3:
			b.run("go test ./...", fail, 1)
		default:
			b.run("go test ./...", out, 0)
		}
		b.edit(fmt.Sprintf("pkg/f%d.go", i%50))
	}
	return b.s
}
