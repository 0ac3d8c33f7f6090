package model2vec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// modelServer serves the files of the tiny model with range requests; the
// first request for model.safetensors is cut after half of it when cut
// is set.
type modelServer struct {
	files  map[string][]byte
	cut    atomic.Bool
	ranges atomic.Int64 // requests that asked for a range
}

func newModelServer(t *testing.T) *modelServer {
	f := tinyFiles(t)
	return &modelServer{files: map[string][]byte{configFile: f.Config, tokenizerFile: f.Tokenizer, tensorFile: f.Tensors}}
}

func (s *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/m/")
	data, ok := s.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Range") != "" {
		s.ranges.Add(1)
	}
	if name == tensorFile && s.cut.CompareAndSwap(true, false) {
		w.WriteHeader(http.StatusOK)
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-file
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

func sumOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestFetchResumesAndChecks(t *testing.T) {
	ms := newModelServer(t)
	ms.cut.Store(true)
	srv := httptest.NewServer(ms)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "tiny")
	sums := map[string]string{tensorFile: sumOf(ms.files[tensorFile])}
	var seen atomic.Int64
	progress := func(file string, done, total int64) { seen.Store(done) }
	err := Fetch(context.Background(), srv.Client(), srv.URL+"/m", dir, sums, progress)
	if err == nil || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("a download cut mid-file: %v, want an error saying to run again", err)
	}
	if err := Fetch(context.Background(), srv.Client(), srv.URL+"/m/", dir, sums, progress); err != nil {
		t.Fatal(err)
	}
	if ms.ranges.Load() != 1 {
		t.Errorf("%d range requests, want the one that resumed", ms.ranges.Load())
	}
	if seen.Load() != int64(len(ms.files[tensorFile])) {
		t.Errorf("progress ended at %d bytes, want %d", seen.Load(), len(ms.files[tensorFile]))
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Info().Dims != 4 {
		t.Errorf("info %+v", m.Info())
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*.part"))
	if len(leftovers) != 0 {
		t.Errorf("partial files left: %v", leftovers)
	}
}

func TestFetchRefusesWhatDoesNotMatch(t *testing.T) {
	ms := newModelServer(t)
	srv := httptest.NewServer(ms)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "tiny")
	err := Fetch(context.Background(), srv.Client(), srv.URL+"/m", dir, map[string]string{tensorFile: strings.Repeat("ab", 32)}, nil)
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("a wrong checksum: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, tensorFile)); err == nil {
		t.Error("the file that did not match was kept")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, tensorFile+"*")); len(files) != 0 {
		t.Errorf("left: %v", files)
	}

	ms.files[configFile] = bytes.Repeat([]byte(" "), maxConfigBytes+10)
	big := filepath.Join(t.TempDir(), "big")
	if err := Fetch(context.Background(), srv.Client(), srv.URL+"/m", big, nil, nil); !errors.Is(err, ErrModel) {
		t.Errorf("a config.json past its bound: %v", err)
	}
	for _, bad := range []string{"ftp://host/m", "not a url", "http://"} {
		if err := Fetch(context.Background(), srv.Client(), bad, t.TempDir(), nil, nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if err := Fetch(context.Background(), srv.Client(), srv.URL+"/m", t.TempDir(), map[string]string{"weights.bin": "00"}, nil); err == nil {
		t.Error("a checksum of a file no model has: no error")
	}
}
