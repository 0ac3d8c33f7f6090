package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/syncbuf"
	"github.com/memmesh/memmesh/internal/testwait"
)

// provider is one HTTP provider as its tests drive it: its constructor,
// and how its server answers vectors.
type provider struct {
	name   string
	new    func(embed.HTTPConfig) (embed.Embedder, error)
	path   string
	answer func(vecs [][]float32) any
	// errorBody is how the server says msg.
	errorBody func(msg string) any
}

var providers = []provider{
	{
		name: "ollama",
		new:  embed.NewOllama,
		path: "/api/embed",
		answer: func(vecs [][]float32) any {
			return map[string]any{"model": "m", "embeddings": vecs, "total_duration": 14143917}
		},
		errorBody: func(msg string) any { return map[string]any{"error": msg} },
	},
	{
		name: "openai",
		new:  embed.NewOpenAI,
		path: "/v1/embeddings",
		answer: func(vecs [][]float32) any {
			data := make([]map[string]any, len(vecs))
			for i, v := range vecs {
				data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
			}
			return map[string]any{"object": "list", "data": data, "model": "m",
				"usage": map[string]int{"prompt_tokens": 8, "total_tokens": 8}}
		},
		errorBody: func(msg string) any {
			return map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nil}}
		},
	},
}

// server is a provider's server on loopback, answering each request with
// the next of its handlers (the last one repeats), and counting them.
type server struct {
	*httptest.Server
	requests atomic.Int32
}

func newServer(t *testing.T, handlers ...http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(s.requests.Add(1)) - 1
		handlers[min(i, len(handlers)-1)](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (p provider) ok(vecs ...[]float32) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, p.answer(vecs)) }
}

func (p provider) fail(status int, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status, p.errorBody(msg)) }
}

// hangUp closes the connection without an answer: a network error.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// config is a provider's configuration for s, waiting on fake.
func (p provider) config(s *server, fake *clock.Fake) embed.HTTPConfig {
	url := s.URL
	if p.name == "openai" {
		url += "/v1"
	}
	return embed.HTTPConfig{URL: url, Model: "nomic-embed-text", Clock: fake}
}

func (p provider) embedder(t *testing.T, cfg embed.HTTPConfig) embed.Embedder {
	t.Helper()
	e, err := p.new(cfg)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	return e
}

func newFake() *clock.Fake { return clock.NewFake(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)) }

// drive runs call, moving fake past every wait it makes, and returns its
// result.
func drive[T any](t *testing.T, fake *clock.Fake, call func() T) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	done := make(chan T, 1)
	go func() {
		done <- call()
		cancel()
	}()
	for fake.BlockUntilContext(ctx, 1) == nil {
		fake.Advance(time.Minute)
	}
	select {
	case r := <-done:
		return r
	default:
	}
	t.Fatalf("the call did not return in %v", testwait.Limit)
	var none T
	return none
}

// waiting tells whether something waits on fake now.
func waiting(fake *clock.Fake) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return fake.BlockUntilContext(ctx, 1) == nil
}

type result struct {
	vecs [][]float32
	err  error
}

func embedAll(e embed.Embedder, texts ...string) func() result {
	return func() result {
		v, err := e.Embed(context.Background(), texts)
		return result{v, err}
	}
}

func TestEmbedSpeaksEachAPI(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			var got struct {
				Model          string   `json:"model"`
				Input          []string `json:"input"`
				EncodingFormat *string  `json:"encoding_format"`
			}
			var header http.Header
			var path, method string
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				path, method, header = r.URL.Path, r.Method, r.Header
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					t.Errorf("request body: %v", err)
				}
				p.ok([]float32{3, 4}, []float32{0, -2})(w, r)
			})
			cfg := p.config(s, newFake())
			cfg.APIKey = "sk-test-0123456789"
			e := p.embedder(t, cfg)
			if info := e.Info(); info != (embed.Info{Provider: p.name, Model: "nomic-embed-text"}) {
				t.Errorf("Info before an answer = %+v", info)
			}
			vecs, err := e.Embed(context.Background(), []string{"why is the sky blue", "why is grass green"})
			if err != nil {
				t.Fatal(err)
			}
			if want := [][]float32{{0.6, 0.8}, {0, -1}}; fmt.Sprint(vecs) != fmt.Sprint(want) {
				t.Errorf("vectors = %v, want %v (normalised)", vecs, want)
			}
			if info := e.Info(); info.Dims != 2 {
				t.Errorf("Info after an answer = %+v, want Dims 2", info)
			}
			if method != http.MethodPost || path != p.path {
				t.Errorf("request %s %s, want POST %s", method, path, p.path)
			}
			if got.Model != "nomic-embed-text" || fmt.Sprint(got.Input) != "[why is the sky blue why is grass green]" {
				t.Errorf("request body %+v", got)
			}
			if ct := header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if a := header.Get("Authorization"); a != "Bearer sk-test-0123456789" {
				t.Errorf("Authorization %q", a)
			}
			switch p.name {
			case "openai":
				if got.EncodingFormat == nil || *got.EncodingFormat != "float" {
					t.Errorf("encoding_format %v, want float", got.EncodingFormat)
				}
			case "ollama":
				if got.EncodingFormat != nil {
					t.Errorf("encoding_format sent to ollama")
				}
			}
		})
	}
}

func TestNoAuthorizationWithoutKey(t *testing.T) {
	for _, p := range providers {
		var auth []string
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			auth = r.Header.Values("Authorization")
			p.ok([]float32{1})(w, r)
		})
		if _, err := p.embedder(t, p.config(s, newFake())).Embed(context.Background(), []string{"a"}); err != nil {
			t.Fatal(err)
		}
		if len(auth) != 0 {
			t.Errorf("%s: Authorization %q sent with no key", p.name, auth)
		}
	}
}

func TestOpenAIPlacesVectorsByIndex(t *testing.T) {
	p := providers[1]
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"data": []map[string]any{
			{"index": 2, "embedding": []float32{0, 0, 1}},
			{"index": 0, "embedding": []float32{1, 0, 0}},
			{"index": 1, "embedding": []float32{0, 1, 0}},
		}})
	})
	vecs, err := p.embedder(t, p.config(s, newFake())).Embed(context.Background(), []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(vecs); got != "[[1 0 0] [0 1 0] [0 0 1]]" {
		t.Errorf("vectors %s, want each at its index", got)
	}
}

func TestOpenAIRefusesBadIndexes(t *testing.T) {
	p := providers[1]
	for name, data := range map[string][]map[string]any{
		"repeated":     {{"index": 0, "embedding": []float32{1}}, {"index": 0, "embedding": []float32{1}}},
		"out of range": {{"index": 0, "embedding": []float32{1}}, {"index": 2, "embedding": []float32{1}}},
		"negative":     {{"index": -1, "embedding": []float32{1}}, {"index": 0, "embedding": []float32{1}}},
		"missing":      {{"index": 0, "embedding": []float32{1}}, {"index": 1}},
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, http.StatusOK, map[string]any{"data": data})
			})
			_, err := p.embedder(t, p.config(s, newFake())).Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, embed.ErrUnavailable) {
				t.Errorf("err = %v, want ErrUnavailable", err)
			}
		})
	}
}

func TestEmbedRetriesTransientFailures(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			s := newServer(t,
				p.fail(http.StatusServiceUnavailable, "loading the model"),
				hangUp,
				func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Retry-After", "1")
					p.fail(http.StatusTooManyRequests, "slow down")(w, r)
				},
				p.ok([]float32{1, 0}))
			fake := newFake()
			e := p.embedder(t, p.config(s, fake))
			r := drive(t, fake, embedAll(e, "a"))
			if r.err != nil {
				t.Fatalf("after 3 transient failures: %v", r.err)
			}
			if n := s.requests.Load(); n != 4 {
				t.Errorf("%d requests, want 4", n)
			}
		})
	}
}

func TestEmbedHonoursRetryAfter(t *testing.T) {
	p := providers[1]
	s := newServer(t,
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "20")
			p.fail(http.StatusTooManyRequests, "rate limited")(w, r)
		},
		p.ok([]float32{1}))
	fake := newFake()
	e := p.embedder(t, p.config(s, fake))
	done := make(chan result, 1)
	go func() { done <- embedAll(e, "a")() }()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	if err := fake.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("no wait after a 429")
	}
	fake.Advance(20*time.Second - time.Millisecond)
	if !waiting(fake) {
		t.Fatal("the wait after a 429 with Retry-After: 20 ended before 20 s")
	}
	fake.Advance(time.Millisecond)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-ctx.Done():
		t.Fatal("no answer after the Retry-After")
	}
}

// TestEmbedFailsAtOnceWhenTheWaitOutlastsTheCall: a Retry-After past the
// call's timeout fails the call now, not when the timeout ends.
func TestEmbedFailsAtOnceWhenTheWaitOutlastsTheCall(t *testing.T) {
	p := providers[1]
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "20")
		p.fail(http.StatusTooManyRequests, "rate limited")(w, r)
	}, p.ok([]float32{1}))
	cfg := p.config(s, newFake())
	cfg.Timeout = 10 * time.Second
	_, err := p.embedder(t, cfg).Embed(context.Background(), []string{"a"})
	if !errors.Is(err, embed.ErrUnavailable) || !strings.Contains(err.Error(), "past the call's timeout") {
		t.Errorf("err = %v, want ErrUnavailable: the wait is past the timeout", err)
	}
	if n := s.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestEmbedGivesUpAfterItsAttempts(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			s := newServer(t, p.fail(http.StatusInternalServerError, "out of memory"))
			fake := newFake()
			cfg := p.config(s, fake)
			cfg.Attempts = 3
			r := drive(t, fake, embedAll(p.embedder(t, cfg), "a"))
			if !errors.Is(r.err, embed.ErrUnavailable) || !strings.Contains(r.err.Error(), "out of memory") {
				t.Errorf("err = %v, want ErrUnavailable with the server's message", r.err)
			}
			if n := s.requests.Load(); n != 3 {
				t.Errorf("%d requests, want 3", n)
			}
		})
	}
}

func TestEmbedFailsAtOnceOnAClientError(t *testing.T) {
	for _, p := range providers {
		for _, tc := range []struct {
			status int
			msg    string
			want   error
		}{
			{http.StatusNotFound, `model "nomic-embed-text" not found, try pulling it first`, embed.ErrUnavailable},
			{http.StatusUnauthorized, "Incorrect API key provided", embed.ErrUnavailable},
			{http.StatusBadRequest, "input length exceeds the context length", embed.ErrBadInput},
		} {
			t.Run(fmt.Sprint(p.name, tc.status), func(t *testing.T) {
				s := newServer(t, p.fail(tc.status, tc.msg))
				fake := newFake()
				_, err := p.embedder(t, p.config(s, fake)).Embed(context.Background(), []string{"a"})
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("err = %v, want %v with the server's message", err, tc.want)
				}
				if n := s.requests.Load(); n != 1 {
					t.Errorf("%d requests, want 1 and no retry", n)
				}
			})
		}
	}
}

func TestServerMessagesAreBoundedAndInert(t *testing.T) {
	const key = "sk-secret-key-0123456789"
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			msg := "bad key " + key + " \x1b]0;owned\x07\x1b[31mred\u202e" + strings.Repeat("long ", 10000)
			s := newServer(t, p.fail(http.StatusUnauthorized, msg))
			cfg := p.config(s, newFake())
			cfg.APIKey = key
			_, err := p.embedder(t, cfg).Embed(context.Background(), []string{"a"})
			if err == nil {
				t.Fatal("no error")
			}
			text := err.Error()
			if strings.Contains(text, key) {
				t.Errorf("the key is in the error: %q", text)
			}
			if i := strings.IndexFunc(text, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }); i >= 0 {
				t.Errorf("a control character in the error at %d: %q", i, text)
			}
			if len(text) > 600 || !strings.Contains(text, "bad key") {
				t.Errorf("error of %d bytes, want the message's start within a few hundred: %.200q", len(text), text)
			}
		})
	}
}

func TestEmbedRefusesWrongDimensions(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			// Configured: 3 values, answered 2.
			s := newServer(t, p.ok([]float32{1, 2}))
			cfg := p.config(s, newFake())
			cfg.Dims = 3
			_, err := p.embedder(t, cfg).Embed(context.Background(), []string{"a"})
			if !errors.Is(err, embed.ErrDims) || !strings.Contains(err.Error(), "answered 2 values") || !strings.Contains(err.Error(), "has 3") {
				t.Errorf("configured 3, answered 2: err = %v, want ErrDims naming both", err)
			}

			// Learnt from the first answer: 2 values, then 3.
			s = newServer(t, p.ok([]float32{1, 2}), p.ok([]float32{1, 2, 3}))
			e := p.embedder(t, p.config(s, newFake()))
			if _, err := e.Embed(context.Background(), []string{"a"}); err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(context.Background(), []string{"a"})
			if !errors.Is(err, embed.ErrDims) || !strings.Contains(err.Error(), "answered 3 values") || !strings.Contains(err.Error(), "has 2") {
				t.Errorf("learnt 2, answered 3: err = %v, want ErrDims naming both", err)
			}
			if d := e.Info().Dims; d != 2 {
				t.Errorf("Dims = %d after a wrong answer, want 2 kept", d)
			}

			// Two sizes in one answer.
			s = newServer(t, p.ok([]float32{1, 2}, []float32{1, 2, 3}))
			_, err = p.embedder(t, p.config(s, newFake())).Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, embed.ErrDims) || !strings.Contains(err.Error(), "2 and of 3") {
				t.Errorf("sizes 2 and 3 in one answer: err = %v, want ErrDims naming both", err)
			}
		})
	}
}

func TestEmbedRefusesBadAnswers(t *testing.T) {
	for _, p := range providers {
		for name, h := range map[string]http.HandlerFunc{
			"fewer vectors":  p.ok([]float32{1}),
			"more vectors":   p.ok([]float32{1}, []float32{1}, []float32{1}),
			"no vectors":     p.ok(),
			"zero vector":    p.ok([]float32{0, 0}, []float32{1, 0}),
			"infinite value": func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, infinite(p)) },
			"not JSON":       func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<html>proxy</html>") },
			"too many dims":  p.ok(make([]float32, embed.MaxDims+1), make([]float32, embed.MaxDims+1)),
		} {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				s := newServer(t, h)
				fake := newFake()
				_, err := p.embedder(t, p.config(s, fake)).Embed(context.Background(), []string{"a", "b"})
				if !errors.Is(err, embed.ErrUnavailable) {
					t.Errorf("err = %v, want ErrUnavailable", err)
				}
				if n := s.requests.Load(); n != 1 {
					t.Errorf("%d requests, want 1 and no retry of a bad answer", n)
				}
			})
		}
	}
}

// infinite is an answer whose value overflows a float32.
func infinite(p provider) string {
	if p.name == "ollama" {
		return `{"embeddings":[[1e39,1],[1,0]]}`
	}
	return `{"data":[{"index":0,"embedding":[1e39,1]},{"index":1,"embedding":[1,0]}]}`
}

func TestEmbedReadsNoMoreThanAnAnswerCanHold(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			const endless = 1 << 30
			var written atomic.Int64
			s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", fmt.Sprint(endless))
				chunk := []byte(strings.Repeat("0.123456789,", 1<<10))
				for written.Load() < endless {
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
			cfg := p.config(s, newFake())
			cfg.Dims = 4
			_, err := p.embedder(t, cfg).Embed(context.Background(), []string{"a"})
			if !errors.Is(err, embed.ErrUnavailable) || !strings.Contains(err.Error(), "answer over") {
				t.Errorf("err = %v, want ErrUnavailable: answer over its cap", err)
			}
			if n := s.requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			s.Close() // waits for the handler
			if n := written.Load(); n >= endless {
				t.Errorf("the server wrote all %d bytes: the answer was read whole", n)
			}
		})
	}
}

func TestSlowServerTimesOut(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			release := make(chan struct{})
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
			t.Cleanup(func() { close(release) })
			fake := newFake()
			cfg := p.config(s, fake)
			cfg.Timeout = 50 * time.Millisecond
			// The server answers only once released, after the call:
			// the call ends by its own timeout, not by the server.
			r := drive(t, fake, embedAll(p.embedder(t, cfg), "a"))
			if !errors.Is(r.err, embed.ErrUnavailable) || !errors.Is(r.err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want ErrUnavailable after the deadline", r.err)
			}
		})
	}
}

func TestCancelEndsTheCall(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name+"/in a request", func(t *testing.T) {
			arrived := make(chan struct{})
			release := make(chan struct{})
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				close(arrived)
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
			t.Cleanup(func() { close(release) })
			e := p.embedder(t, p.config(s, newFake()))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := e.Embed(ctx, []string{"a"})
				done <- err
			}()
			<-arrived
			cancel()
			err := wait(t, done)
			if !errors.Is(err, context.Canceled) || errors.Is(err, embed.ErrUnavailable) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		})
		t.Run(p.name+"/between attempts", func(t *testing.T) {
			s := newServer(t, p.fail(http.StatusBadGateway, "down"))
			fake := newFake()
			e := p.embedder(t, p.config(s, fake))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := e.Embed(ctx, []string{"a"})
				done <- err
			}()
			waitCtx, stop := context.WithTimeout(context.Background(), testwait.Limit)
			defer stop()
			if err := fake.BlockUntilContext(waitCtx, 1); err != nil {
				t.Fatal("no wait after a 502")
			}
			cancel() // the fake clock never moves: only the cancel ends the wait
			err := wait(t, done)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if n := s.requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(testwait.Limit):
		t.Fatalf("the call did not end in %v", testwait.Limit)
		return nil
	}
}

func TestEmbedChecksTheBatchFirst(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			s := newServer(t, p.ok([]float32{1}))
			e := p.embedder(t, p.config(s, newFake()))
			for _, texts := range [][]string{
				make([]string, embed.MaxBatch+1),
				{"a", strings.Repeat("x", embed.MaxTextBytes+1)},
			} {
				if _, err := e.Embed(context.Background(), texts); !errors.Is(err, embed.ErrBadInput) {
					t.Errorf("%d texts: err = %v, want ErrBadInput", len(texts), err)
				}
			}
			if vecs, err := e.Embed(context.Background(), nil); err != nil || len(vecs) != 0 {
				t.Errorf("no texts: %v, %v", vecs, err)
			}
			if n := s.requests.Load(); n != 0 {
				t.Errorf("%d requests for calls out of bounds or empty", n)
			}
		})
	}
}

func TestConfigRefused(t *testing.T) {
	const key = "sk-secret\nkey"
	ok := embed.HTTPConfig{URL: "http://127.0.0.1:11434", Model: "m"}
	for name, change := range map[string]func(*embed.HTTPConfig){
		"not a url":    func(c *embed.HTTPConfig) { c.URL = "http://[::1" },
		"other scheme": func(c *embed.HTTPConfig) { c.URL = "file:///etc/passwd" },
		"no host":      func(c *embed.HTTPConfig) { c.URL = "http:///v1" },
		"a query":      func(c *embed.HTTPConfig) { c.URL = "http://h/v1?x=1" },
		"no model":     func(c *embed.HTTPConfig) { c.Model = "" },
		"model ctrl":   func(c *embed.HTTPConfig) { c.Model = "m\x1b[2J" },
		"model long":   func(c *embed.HTTPConfig) { c.Model = strings.Repeat("m", 1000) },
		"key ctrl":     func(c *embed.HTTPConfig) { c.APIKey = key },
		"dims":         func(c *embed.HTTPConfig) { c.Dims = embed.MaxDims + 1 },
		"negative":     func(c *embed.HTTPConfig) { c.Dims = -1 },
		"timeout":      func(c *embed.HTTPConfig) { c.Timeout = -time.Second },
	} {
		for _, p := range providers {
			cfg := ok
			change(&cfg)
			_, err := p.new(cfg)
			if err == nil {
				t.Errorf("%s/%s: accepted", p.name, name)
			} else if strings.Contains(err.Error(), "secret") {
				t.Errorf("%s/%s: the key is in the error %q", p.name, name, err)
			}
		}
	}
	for _, p := range providers {
		if _, err := p.new(ok); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
}

func TestInfoNeverShowsTheKey(t *testing.T) {
	for _, p := range providers {
		e := p.embedder(t, embed.HTTPConfig{URL: "http://user:pw@127.0.0.1:1/v1", Model: "m", APIKey: "sk-secret"})
		if s := fmt.Sprintf("%+v", e.Info()); strings.Contains(s, "secret") {
			t.Errorf("%s: Info %s", p.name, s)
		}
	}
}

func TestNormalisedVectorsHaveUnitLength(t *testing.T) {
	p := providers[0]
	s := newServer(t, p.ok([]float32{1e-20, 2e-20, 3e-20}, []float32{1e30, -1e30, 1e30}))
	vecs, err := p.embedder(t, p.config(s, newFake())).Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		var sum float64
		for _, x := range v {
			sum += float64(x) * float64(x)
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("vector %d: squared length %v", i, sum)
		}
	}
}

func TestRetriesAreLoggedWithoutTheKey(t *testing.T) {
	const key = "sk-secret-key-0123456789"
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			s := newServer(t, p.fail(http.StatusInternalServerError, "no such key "+key), p.ok([]float32{1}))
			var logs syncbuf.Buffer
			fake := newFake()
			cfg := p.config(s, fake)
			cfg.APIKey = key
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			if r := drive(t, fake, embedAll(p.embedder(t, cfg), "a")); r.err != nil {
				t.Fatal(r.err)
			}
			out := logs.String()
			if !strings.Contains(out, "retrying") || !strings.Contains(out, "no such key") {
				t.Errorf("the retry is not logged with its cause: %s", out)
			}
			if strings.Contains(out, key) {
				t.Errorf("the key is in the logs: %s", out)
			}
		})
	}
}

func TestConcurrentCallsLearnOneSize(t *testing.T) {
	p := providers[0]
	s := newServer(t, p.ok([]float32{1, 1}))
	e := p.embedder(t, p.config(s, newFake()))
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			_, err := e.Embed(context.Background(), []string{"a"})
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := wait(t, errs); err != nil {
			t.Error(err)
		}
	}
	if d := e.Info().Dims; d != 2 {
		t.Errorf("Dims = %d, want 2", d)
	}
}
