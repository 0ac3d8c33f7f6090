package embed

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		attempt    int
		retryAfter time.Duration
		jitter     float64
		want       time.Duration
	}{
		{1, 0, 0, 250 * time.Millisecond},
		{1, 0, 0.999999, 500 * time.Millisecond},
		{2, 0, 0, 500 * time.Millisecond},
		{3, 0, 0.5, 1500 * time.Millisecond},
		{5, 0, 0, 4 * time.Second},
		{6, 0, 0, 4 * time.Second}, // capped at maxBackoff
		{70, 0, 0, 4 * time.Second},
		{1, 7 * time.Second, 0.9, 7 * time.Second}, // the server's word, no jitter
	} {
		if got := retryDelay(tc.attempt, tc.retryAfter, tc.jitter); got.Round(time.Millisecond) != tc.want {
			t.Errorf("retryDelay(%d, %v, %v) = %v, want %v", tc.attempt, tc.retryAfter, tc.jitter, got, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		" 12 ":                          12 * time.Second,
		"0":                             0,
		"-5":                            0,
		"1.5":                           0,
		"Wed, 21 Oct 2015 07:28:00 GMT": 0,
		"3600":                          maxRetryAfter,
		"99999999999999999999999":       maxRetryAfter,
	} {
		if got := parseRetryAfter(in); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"model not found":               "model not found",
		"a\x1b[31mb\x07c":               "a[31mbc",
		"line\r\nbreak\ttab":            "line break tab",
		"rtl\u202eevil\u2066x":          "rtlevilx",
		"bad \xff\xfe utf8":             "bad utf8",
		"\x00\x01":                      "",
		strings.Repeat("é", maxMessage): strings.Repeat("é", maxMessage/2) + "…",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNormaliseRefusesWhatHasNoDirection: the decoders refuse values
// beyond a float32, so this guard holds the contract for any wire.
func TestNormaliseRefusesWhatHasNoDirection(t *testing.T) {
	for _, v := range [][]float32{
		{0, 0, 0},
		{1, float32(math.NaN())},
		{float32(math.Inf(1)), 1},
		{float32(math.Inf(-1)), 1},
	} {
		if err := normalise(v); err == nil {
			t.Errorf("normalise(%v) accepted", v)
		}
	}
}

func TestEndpoints(t *testing.T) {
	for _, tc := range []struct {
		wire wire
		url  string
		want string
	}{
		{ollamaWire, "", "http://127.0.0.1:11434/api/embed"},
		{ollamaWire, "http://gpu-box.local:8080/", "http://gpu-box.local:8080/api/embed"},
		{openaiWire, "", "https://api.openai.com/v1/embeddings"},
		{openaiWire, "http://127.0.0.1:1234/v1/", "http://127.0.0.1:1234/v1/embeddings"},
		{openaiWire, "https://u:pw@h.example/v1", "https://u:pw@h.example/v1/embeddings"},
	} {
		e, err := newHTTP(tc.wire, HTTPConfig{URL: tc.url, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if e.endpoint != tc.want {
			t.Errorf("%s at %q: endpoint %q, want %q", tc.wire.provider, tc.url, e.endpoint, tc.want)
		}
		if strings.Contains(e.shown, "pw") {
			t.Errorf("%s at %q: shown as %q", tc.wire.provider, tc.url, e.shown)
		}
	}
}
