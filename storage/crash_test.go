package storage

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The crash tests re-run this test binary as a child process that uses a
// store until it is killed with SIGKILL.
const (
	childModeEnv = "MEMMESH_STORAGE_CHILD" // "commit" or "hold"
	childDirEnv  = "MEMMESH_STORAGE_DIR"
)

const (
	crashWorkers = 6 // committing goroutines in the child
	crashDocs    = 4 // documents per worker
)

// startChild runs the test named test in a child process and returns its
// stdout. The child is killed at the end of the test if still running.
func startChild(t *testing.T, test, mode, dir string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewReader(out)
}

// runChild is the child's side: it never returns normally.
func runChild(mode, dir string) {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	// A child the parent failed to kill must not run forever.
	time.AfterFunc(10*time.Second, func() { os.Exit(3) })
	if mode == "hold" {
		fmt.Println("ready")
		select {}
	}
	var out sync.Mutex
	for w := range crashWorkers {
		go commitUntilKilled(s, w, &out)
	}
	select {}
}

// commitUntilKilled updates worker w's documents, one or two per Commit,
// and prints "ack id version seq" for each record once Commit returned.
// A document's version continues from what the store holds.
func commitUntilKilled(s *Store, w int, out *sync.Mutex) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
	version := map[string]int{}
	for d := range crashDocs {
		id := fmt.Sprintf("w%dd%d", w, d)
		if rec, err := s.Get(KindMemory, id); err == nil {
			version[id], _ = strconv.Atoi(string(rec.Value))
		}
	}
	for {
		recs := make([]Record, 1+r.IntN(2))
		for i, d := range r.Perm(crashDocs)[:len(recs)] {
			id := fmt.Sprintf("w%dd%d", w, d)
			v := version[id] + 1
			docSize := 100 + r.IntN(16<<10)
			if r.IntN(100) == 0 {
				docSize = 3 << 20 // a batch too large for the memtable
			}
			recs[i] = Record{
				Kind:  KindMemory,
				ID:    id,
				Doc:   make([]byte, docSize),
				Heads: []string{fmt.Sprintf("%s-%d", id, v)},
				Value: []byte(strconv.Itoa(v)),
				Terms: []Term{{"v", fmt.Sprintf("%08d", v)}, {"worker", strconv.Itoa(w)}},
			}
		}
		seq, err := s.Commit(recs...)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		out.Lock()
		for _, rec := range recs {
			version[rec.ID]++
			fmt.Printf("ack %s %s %d\n", rec.ID, rec.Value, seq)
		}
		out.Unlock()
	}
}

// TestCrash kills a committing child process at random points and checks
// that every Commit acknowledged before the kill survived, with its terms,
// change-log entry and digest.
func TestCrash(t *testing.T) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		runChild(mode, os.Getenv(childDirEnv))
		return
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	acked := map[string]int{} // id -> highest acknowledged version
	var ackedSeq uint64
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	for round := range 4 {
		cmd, out := startChild(t, "TestCrash", "commit", dir)
		var kill *time.Timer
		lines := 0
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				break // EOF after the kill; a partial line is no acknowledgement
			}
			var id string
			var version int
			var seq uint64
			if _, err := fmt.Sscanf(line, "ack %s %d %d\n", &id, &version, &seq); err != nil {
				continue // not ours (test framework output)
			}
			acked[id] = max(acked[id], version)
			ackedSeq = max(ackedSeq, seq)
			if lines++; lines == 1 {
				delay := time.Duration(20+r.IntN(400)) * time.Millisecond
				kill = time.AfterFunc(delay, func() { cmd.Process.Kill() })
			}
		}
		if kill == nil {
			t.Fatalf("round %d: the child acknowledged nothing", round)
		}
		if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("round %d: child ended with %v, want killed", round, err)
		}
		t.Logf("round %d: %d acknowledgements, highest seq %d", round, lines, ackedSeq)
		verifyAfterCrash(t, dir, acked, ackedSeq)
	}
}

func verifyAfterCrash(t *testing.T, dir string, acked map[string]int, ackedSeq uint64) {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	if s.DurableSeq() < ackedSeq {
		t.Errorf("DurableSeq %d after the kill, but seq %d was acknowledged", s.DurableSeq(), ackedSeq)
	}
	for id, want := range acked {
		rec, err := s.Get(KindMemory, id)
		if err != nil {
			t.Errorf("acknowledged %s lost: %v", id, err)
			continue
		}
		got, _ := strconv.Atoi(string(rec.Value))
		if got < want {
			t.Errorf("%s at version %d, but version %d was acknowledged", id, got, want)
		}
		if ids := scanIDs(t, s, KindMemory, Term{"v", fmt.Sprintf("%08d", got)}); !slices.Contains(ids, id) {
			t.Errorf("term v=%d of %s missing", got, id)
		}
		if doc, err := s.GetDoc(KindMemory, id); err != nil || len(doc) == 0 {
			t.Errorf("document of %s: %d bytes, %v", id, len(doc), err)
		}
	}
	terms := 0
	if err := s.ScanPrefix(KindMemory, "v", "", func(Term, string) error { terms++; return nil }); err != nil {
		t.Fatal(err)
	}
	recs, _ := changes(t, s, 0, 0)
	if n, _ := s.Count(KindMemory); terms != n || len(recs) != n {
		t.Errorf("%d documents, %d version terms, %d change-log entries; want them equal", n, terms, len(recs))
	}
	if digest(t, s) != digestFromScratch(t, s) {
		t.Error("digest differs from the digest recomputed from scratch")
	}
}

// TestLockedByOtherProcess opens a store that a child process holds.
func TestLockedByOtherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd, out := startChild(t, "TestCrash", "hold", dir)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a directory held by another process: %v, want ErrLocked", err)
	}
	t.Log(err)

	cmd.Process.Kill()
	cmd.Wait()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after the holder died: %v", err)
	}
	s.Close()
}
