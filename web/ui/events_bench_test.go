package ui

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/node"
)

// BenchmarkCaptureToEvent measures the time from a capture on a real node
// to its memory event on an open dashboard stream, with the default poll
// interval (200 ms). Captures start at offsets spread evenly over a poll
// interval after the previous event (which arrives just after a read), so
// that the mean is the average wait, not the worst.
func BenchmarkCaptureToEvent(b *testing.B) {
	n, err := node.New(node.Config{Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	h := newHub(n, slog.New(slog.DiscardHandler), 0, 0)
	l := h.subscribe()
	defer h.unsubscribe(l)
	time.Sleep(DefaultPollInterval) // the reader has found the log's end
	ctx := context.Background()
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		time.Sleep(time.Duration(i%10) * DefaultPollInterval / 10)
		b.StartTimer()
		start := time.Now()
		res, err := n.Remember(ctx, api.RememberRequest{Content: fmt.Sprintf("capture %d reaches the dashboard", i)})
		if err != nil {
			b.Fatal(err)
		}
		for ev := range l.ch {
			if ev.name == "memory" && strings.Contains(string(ev.data), res.ID) {
				break
			}
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/event")
}
