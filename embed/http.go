package embed

// What the HTTP providers (Ollama, OpenAI-compatible) share: their
// configuration, the bounded call with its retries, and the checks of
// an answer's vectors. Each provider only says where it is asked and
// how its answer is shaped (a wire).
//
// An Embed call fails with
//   - ErrBadInput: out of CheckBatch's bounds (nothing is sent), or
//     refused by the server as a bad request (400, 413, 422);
//   - ErrUnavailable: the server unreachable, failing (5xx, 429) or
//     timing out after every attempt, refusing otherwise (401, 404:
//     its message says why, e.g. a model not pulled), or answering
//     what is not an answer (too large, malformed, the wrong count,
//     values that are not finite);
//   - ErrDims: vectors of another size than the model's;
//   - the context's error when the caller's context ends first.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memmesh/memmesh/internal/clock"
)

// Defaults and bounds of the HTTP providers.
const (
	// DefaultTimeout bounds one Embed call: every attempt and every wait
	// between attempts.
	DefaultTimeout = 30 * time.Second
	// DefaultAttempts is how many times a call is tried before it fails
	// with ErrUnavailable.
	DefaultAttempts = 4
	// MaxDims bounds the size of the vectors a provider may answer: the
	// largest common models make 4096 values.
	MaxDims = 8192

	// maxValueBytes is what one value may take in an answer's JSON
	// ("-0.0017594862104320526," and the space around it): with MaxDims
	// and the count of texts, it bounds the answer read.
	maxValueBytes = 32
	// answerSlack is an answer's envelope besides its values (model,
	// usage, per-item objects).
	answerSlack = 64 << 10
	// maxErrorBody bounds what is read of an error's answer, and
	// maxMessage what of its message reaches the caller.
	maxErrorBody = 64 << 10
	maxMessage   = 300
	// maxModel bounds a model's name.
	maxModel = 256

	// The backoff between attempts: base, doubled at each attempt up to
	// maxBackoff, drawn in its upper half (jitter); a server's
	// Retry-After is honoured up to maxRetryAfter.
	baseBackoff   = 500 * time.Millisecond
	maxBackoff    = 8 * time.Second
	maxRetryAfter = 30 * time.Second
)

// HTTPConfig configures an HTTP provider; its fields map onto the
// [embed] section of config.toml.
type HTTPConfig struct {
	// URL is the server's: Ollama's root, or an OpenAI-compatible API's
	// base, ending in /v1. Empty is the provider's default
	// (DefaultOllamaURL, DefaultOpenAIURL).
	URL string
	// Model is the server's name of the model.
	Model string
	// APIKey is the key itself (the caller reads the variable that
	// api_key_env names), sent as a bearer token; empty sends none. It
	// never appears in an error, a log or Info.
	APIKey string
	// Dims is the size of the model's vectors if known; 0 learns it from
	// the first answer. An answer of another size is ErrDims.
	Dims int
	// Timeout bounds one Embed call, retries included; 0 is
	// DefaultTimeout.
	Timeout time.Duration
	// Attempts bounds the tries of one call; 0 is DefaultAttempts.
	Attempts int
	// Client sends the requests; nil is a client of the provider's own.
	Client *http.Client
	// Logger says what is retried; nil logs nothing.
	Logger *slog.Logger
	// Clock times the waits between attempts; nil is the system's.
	Clock clock.Clock
}

// wire is how a provider's requests and answers are shaped.
type wire struct {
	provider string // Info.Provider
	url      string // the default URL
	path     string // appended to the URL
	encoding string // the request's encoding_format, where the API has one
	// vectors reads a successful answer of n texts: one vector per
	// text, in order.
	vectors func(body []byte, n int) ([][]float32, error)
}

// request is the body both APIs take.
type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format,omitempty"`
}

// httpEmbedder is an Embedder behind an HTTP API.
type httpEmbedder struct {
	wire     wire
	endpoint string // the request's URL
	shown    string // the server's URL as errors and logs show it
	model    string
	auth     string // the Authorization header, or ""
	key      string // redacted from what servers answer
	timeout  time.Duration
	attempts int
	client   *http.Client
	log      *slog.Logger
	clock    clock.Clock
	dims     atomic.Int64 // 0 until known
}

var _ Embedder = (*httpEmbedder)(nil)

func newHTTP(w wire, cfg HTTPConfig) (*httpEmbedder, error) {
	if cfg.URL == "" {
		cfg.URL = w.url
	}
	u, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", w.provider, err)
	}
	e := &httpEmbedder{
		wire:     w,
		endpoint: strings.TrimSuffix(u.String(), "/") + w.path,
		shown:    u.Redacted(),
		model:    cfg.Model,
		key:      cfg.APIKey,
		timeout:  orDefault(cfg.Timeout, DefaultTimeout),
		attempts: orDefault(cfg.Attempts, DefaultAttempts),
		client:   cfg.Client,
		log:      cfg.Logger,
		clock:    cfg.Clock,
	}
	if cfg.APIKey != "" {
		e.auth = "Bearer " + cfg.APIKey
	}
	if e.client == nil {
		e.client = &http.Client{}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.log = e.log.With("component", "embed", "provider", w.provider, "url", e.shown, "model", e.model)
	if e.clock == nil {
		e.clock = clock.System()
	}
	e.dims.Store(int64(cfg.Dims))
	return e, nil
}

// orDefault is v, or def when v is unset.
func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// validate checks cfg and returns its URL. Its errors never quote the key.
func (cfg HTTPConfig) validate() (*url.URL, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, errors.New("url: not a URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("url %q: want http(s)://host[:port][/path]", u.Redacted())
	}
	if cfg.Model == "" || len(cfg.Model) > maxModel || strings.IndexFunc(cfg.Model, unicode.IsControl) >= 0 || !utf8.ValidString(cfg.Model) {
		return nil, fmt.Errorf("model: want a name of 1 to %d printable bytes", maxModel)
	}
	for _, c := range []byte(cfg.APIKey) {
		if c <= ' ' || c >= 0x7f {
			return nil, errors.New("api key: not a token (spaces, controls or non-ASCII in it)")
		}
	}
	switch {
	case cfg.Dims < 0 || cfg.Dims > MaxDims:
		return nil, fmt.Errorf("dims %d: want 0 (learnt) to %d", cfg.Dims, MaxDims)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("timeout %v: negative", cfg.Timeout)
	case cfg.Attempts < 0:
		return nil, fmt.Errorf("attempts %d: negative", cfg.Attempts)
	}
	return u, nil
}

// Info implements Embedder.
func (e *httpEmbedder) Info() Info {
	return Info{Provider: e.wire.provider, Model: e.model, Dims: int(e.dims.Load())}
}

// Embed implements Embedder: it posts texts, retrying network errors,
// 5xx and 429 with backoff, within the configured timeout.
func (e *httpEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := CheckBatch(texts); err != nil {
		return nil, err
	}
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	// Strings alone: Marshal cannot fail.
	body, _ := json.Marshal(request{Model: e.model, Input: texts, EncodingFormat: e.wire.encoding})
	call, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		vecs, err := e.post(call, body, len(texts))
		if err == nil {
			return e.check(vecs, len(texts))
		}
		if err := e.backoff(ctx, call, attempt, err); err != nil {
			return nil, err
		}
	}
}

// backoff waits before the attempt after one that failed with err, or
// returns why there is none: the caller's context ended, a final error,
// or ErrUnavailable when the attempts or the call's time are spent.
func (e *httpEmbedder) backoff(ctx, call context.Context, attempt int, err error) error {
	var t *transient
	switch {
	case ctx.Err() != nil:
		return e.ended(ctx)
	case !errors.As(err, &t):
		return err
	case attempt == e.attempts || call.Err() != nil:
		return e.unavailable(attempt, t.err)
	}
	wait := retryDelay(attempt, t.retryAfter, rand.Float64())
	if deadline, _ := call.Deadline(); time.Until(deadline) < wait {
		// Waiting would outlast the call: fail now rather than late.
		return e.unavailable(attempt, fmt.Errorf("%w (the next attempt, in %v, would be past the call's timeout)", t.err, wait))
	}
	e.log.Debug("embed: retrying", "attempt", attempt, "wait", wait, "err", t.err)
	if clock.Sleep(call, e.clock, wait) != nil {
		if ctx.Err() != nil {
			return e.ended(ctx)
		}
		return e.unavailable(attempt, t.err)
	}
	return nil
}

// ended is the error of a call whose caller's context ended.
func (e *httpEmbedder) ended(ctx context.Context) error {
	return fmt.Errorf("embed: %s: %w", e.wire.provider, ctx.Err())
}

func (e *httpEmbedder) unavailable(attempts int, last error) error {
	return fmt.Errorf("%w: %s at %s (attempts: %d): %w", ErrUnavailable, e.wire.provider, e.shown, attempts, last)
}

// transient is a failure worth another attempt: a network error, a 5xx
// or a 429 (with the server's Retry-After, if any).
type transient struct {
	err        error
	retryAfter time.Duration
}

func (t *transient) Error() string { return t.err.Error() }
func (t *transient) Unwrap() error { return t.err }

// post makes one attempt. Its error is a *transient when another attempt
// may succeed.
func (e *httpEmbedder) post(ctx context.Context, body []byte, n int) ([][]float32, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", e.wire.provider, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.auth != "" {
		req.Header.Set("Authorization", e.auth)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, &transient{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, e.refused(resp)
	}
	data, err := readCapped(resp.Body, e.answerCap(n))
	if err != nil {
		var over *overError
		if errors.As(err, &over) {
			return nil, e.badAnswer(err)
		}
		return nil, &transient{err: fmt.Errorf("reading the answer: %w", err)}
	}
	vecs, err := e.wire.vectors(data, n)
	if err != nil {
		return nil, e.badAnswer(err)
	}
	return vecs, nil
}

// answerCap bounds the answer to n texts by what n vectors can take, so
// that a server cannot make us hold more than that.
func (e *httpEmbedder) answerCap(n int) int64 {
	dims := e.dims.Load()
	if dims == 0 {
		dims = MaxDims
	}
	return int64(n)*dims*maxValueBytes + answerSlack
}

// refused turns an answer other than 200 into an error: 429 and 5xx are
// transient, other statuses final, with the server's message.
func (e *httpEmbedder) refused(resp *http.Response) error {
	data, _ := readCapped(resp.Body, maxErrorBody)
	err := fmt.Errorf("status %s: %s", resp.Status, e.message(data))
	code := resp.StatusCode
	if code == http.StatusTooManyRequests || code >= 500 {
		return &transient{err: err, retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
	}
	sentinel := ErrUnavailable
	if code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge || code == http.StatusUnprocessableEntity {
		// The server refuses these texts (too long for the model, an
		// empty one): the same call fails again.
		sentinel = ErrBadInput
	}
	return fmt.Errorf("%w: %s at %s: %w", sentinel, e.wire.provider, e.shown, err)
}

func (e *httpEmbedder) badAnswer(err error) error {
	return fmt.Errorf("%w: %s at %s: bad answer: %w", ErrUnavailable, e.wire.provider, e.shown, err)
}

// message is what an error's body says, bounded and inert: the "error"
// of Ollama's ({"error": "..."}) and OpenAI's ({"error": {"message":
// "..."}}) answers, else the body's text. The API key, should a server
// echo it, is cut out.
func (e *httpEmbedder) message(body []byte) string {
	var answer struct {
		Error json.RawMessage `json:"error"`
	}
	msg := string(body)
	if json.Unmarshal(body, &answer) == nil && len(answer.Error) > 0 {
		var s string
		var obj struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(answer.Error, &s) == nil:
			msg = s
		case json.Unmarshal(answer.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		}
	}
	if e.key != "" {
		msg = strings.ReplaceAll(msg, e.key, "[key]")
	}
	msg = clean(msg)
	if msg == "" {
		return "(no message)"
	}
	return msg
}

// clean strips control and bidi characters and invalid UTF-8 from s
// (spaces stand for line breaks and tabs), and cuts it to maxMessage bytes.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// overError: an answer larger than its cap.
type overError struct{ limit int64 }

func (o *overError) Error() string { return fmt.Sprintf("answer over %d bytes", o.limit) }

// readCapped reads r whole, failing past limit bytes: what is held is
// bounded by what arrived, never by what the server announced.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &overError{limit}
	}
	return data, nil
}

// parseRetryAfter reads a Retry-After in seconds (its HTTP-date form is
// ignored), capped at maxRetryAfter; 0 when absent or unreadable.
func parseRetryAfter(v string) time.Duration {
	s, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0
	case err != nil || s >= uint64(maxRetryAfter/time.Second):
		return maxRetryAfter
	}
	return time.Duration(s) * time.Second
}

// retryDelay is the wait after the given (1-based) failed attempt: the
// server's Retry-After when it sent one, else the exponential backoff
// drawn in its upper half by jitter (in [0, 1)).
func retryDelay(attempt int, retryAfter time.Duration, jitter float64) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := maxBackoff
	if attempt <= 16 {
		d = min(baseBackoff<<(attempt-1), maxBackoff)
	}
	return d/2 + time.Duration(jitter*float64(d/2))
}

// check holds an answer to the contract: n vectors of one size, the
// model's once known, of finite values; it normalises them to unit
// length and learns the model's size from the first answer.
func (e *httpEmbedder) check(vecs [][]float32, n int) ([][]float32, error) {
	if len(vecs) != n {
		return nil, e.badAnswer(fmt.Errorf("%d vectors for %d texts", len(vecs), n))
	}
	size := len(vecs[0])
	if want := e.dims.Load(); want != 0 && int64(size) != want {
		return nil, e.wrongDims(size, want)
	}
	if size == 0 || size > MaxDims {
		return nil, e.badAnswer(fmt.Errorf("vectors of %d values, want 1 to %d", size, MaxDims))
	}
	for i, v := range vecs {
		if len(v) != size {
			return nil, fmt.Errorf("%w: %s answered vectors of %d and of %d values in one answer (text %d)", ErrDims, e.wire.provider, size, len(v), i)
		}
		if err := normalise(v); err != nil {
			return nil, e.badAnswer(fmt.Errorf("vector %d: %w", i, err))
		}
	}
	// The first answer sets the size; a concurrent first answer of
	// another size loses.
	if !e.dims.CompareAndSwap(0, int64(size)) {
		if want := e.dims.Load(); want != int64(size) {
			return nil, e.wrongDims(size, want)
		}
	}
	return vecs, nil
}

func (e *httpEmbedder) wrongDims(got int, want int64) error {
	return fmt.Errorf("%w: %s answered %d values, the model %s has %d", ErrDims, e.wire.provider, got, e.model, want)
}

// normalise scales v to unit length, refusing NaN, Inf and the zero
// vector (which has no direction).
func normalise(v []float32) error {
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("value %v", x)
		}
		sum += f * f
	}
	norm := math.Sqrt(sum)
	if norm == 0 || math.IsInf(norm, 0) {
		return errors.New("zero vector")
	}
	for i, x := range v {
		v[i] = float32(float64(x) / norm)
	}
	return nil
}
