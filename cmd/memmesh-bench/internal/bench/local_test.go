package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestCapture(t *testing.T) {
	r, err := Capture(context.Background(), CaptureOptions{Memories: 30, Import: 200, Common: Common{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Captures != 30 || r.Imported != 200 {
		t.Errorf("report = %+v", r)
	}
	if r.Capture.P50 <= 0 || r.Capture.P99 < r.Capture.P50 {
		t.Errorf("capture latency = %+v", r.Capture)
	}
	if r.ImportRate <= 0 || r.ImportSearchable <= 0 || r.ImportCPU <= 0 {
		t.Errorf("import: %v memories/s, searchable after %v s, %v s of CPU", r.ImportRate, r.ImportSearchable, r.ImportCPU)
	}
	if len(r.Rows()) == 0 {
		t.Error("no rows")
	}
}

func TestSearch(t *testing.T) {
	r, err := Search(context.Background(), SearchOptions{Memories: 300, Queries: 50, VectorDims: 32, Common: Common{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Memories != 300 || r.Queries != 50 || r.Empty >= r.Queries {
		t.Errorf("report = %+v: want most corpus queries to find corpus memories", r)
	}
	if r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 {
		t.Errorf("latency = %+v", r.Latency)
	}
	if v := r.Vectors; v == nil || v.Vectors != 300 || v.Dims != 32 || v.Latency.P50 <= 0 || v.Latency.P99 < v.Latency.P50 || v.Fill <= 0 {
		t.Errorf("vector stage = %+v", v)
	}
}

func TestBadOptions(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, want string
		run        func() error
	}{
		{"no memories", "--memories 0", func() error { _, err := Capture(ctx, CaptureOptions{Import: 1}); return err }},
		{"negative queries", "--queries -1", func() error { _, err := Search(ctx, SearchOptions{Memories: 1, Queries: -1}); return err }},
		{"vectors too long", "--vector-dims 5000", func() error {
			_, err := Search(ctx, SearchOptions{Memories: 1, Queries: 1, VectorDims: 5000})
			return err
		}},
		{"one node", "--nodes 1", func() error { _, err := Sync(ctx, SyncOptions{Nodes: 1, Memories: 1, Samples: 1}); return err }},
		{"more changes than memories", "--changes 5", func() error { _, err := Resync(ctx, ResyncOptions{Changes: 5, Memories: 2}); return err }},
		{"no runs", "--runs 0", func() error {
			_, err := Startup(ctx, StartupOptions{Binary: "memmesh", Memories: 1})
			return err
		}},
	} {
		if err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

// TestPollAfter: a wait checks every pollInterval at first, then every
// hundredth of the time it has waited.
func TestPollAfter(t *testing.T) {
	for _, tt := range []struct{ elapsed, want time.Duration }{
		{0, pollInterval},
		{500 * time.Millisecond, pollInterval},
		{2 * time.Second, 20 * time.Millisecond},
		{30 * time.Second, 300 * time.Millisecond},
	} {
		if got := pollAfter(tt.elapsed); got != tt.want {
			t.Errorf("pollAfter(%v) = %v, want %v", tt.elapsed, got, tt.want)
		}
	}
}
