package secrets

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

const logToken = "ghp_QM72jLQ0dYgUM46mCNEFuodXmzxe4dcm0q5D"

func TestScrubLogs(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(ScrubLogs(slog.NewTextHandler(&out, nil)))
	log = slog.New(ScrubLogs(log.Handler())) // wrapping twice scrubs once
	log = log.With("remote", "https://x-access-token:"+logToken+"@github.com").WithGroup("req")
	log.Warn("pushing with "+logToken+" failed",
		"err", errors.New("refused "+logToken),
		"args", []string{"--token", logToken},
		"count", 3,
		slog.Group("inner", "value", "token="+logToken))
	got := out.String()
	if strings.Contains(got, logToken) {
		t.Fatalf("the log carries the token:\n%s", got)
	}
	for _, want := range []string{"pushing with [REDACTED:github-token] failed", "req.count=3", `req.inner.value="token=[REDACTED:github-token]"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "[REDACTED:github-token]") != 5 {
		t.Errorf("want 5 markers:\n%s", got)
	}
}
