package crdt

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/automerge/automerge-go"
)

// reader reads typed values out of Automerge maps, keeping the first
// error so that a run of reads needs one check at the end. A missing
// value reads as the zero value.
type reader struct {
	err   error
	reads int // maps read
}

// all reads every value of m.
func (r *reader) all(m *automerge.Map) values {
	if r.err != nil {
		return nil
	}
	r.reads++
	vals, err := m.Values()
	if err != nil {
		r.err = fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return vals
}

// done reports the C memory the reads left behind as garbage and returns
// the first error.
func (r *reader) done() error {
	noteGarbage(int64(r.reads) * readCost)
	return r.err
}

type values = map[string]*automerge.Value

func (r *reader) get(m values, key string, want automerge.Kind) *automerge.Value {
	v, ok := m[key]
	if !ok || v.IsVoid() || r.err != nil {
		return nil
	}
	if v.Kind() != want {
		r.err = fmt.Errorf("%w: %s is %v, want %v", ErrMalformed, key, v.Kind(), want)
		return nil
	}
	return v
}

func (r *reader) str(m values, key string) string {
	if v := r.get(m, key, automerge.KindStr); v != nil {
		return v.Str()
	}
	return ""
}

func (r *reader) int(m values, key string) int64 {
	if v := r.get(m, key, automerge.KindInt64); v != nil {
		return v.Int64()
	}
	return 0
}

func (r *reader) float(m values, key string) float64 {
	if v := r.get(m, key, automerge.KindFloat64); v != nil {
		return v.Float64()
	}
	return 0
}

func (r *reader) bool(m values, key string) bool {
	if v := r.get(m, key, automerge.KindBool); v != nil {
		return v.Bool()
	}
	return false
}

func (r *reader) time(m values, key string) time.Time {
	return fromMillis(r.int(m, key))
}

// list reads a comma-separated list of ids.
func (r *reader) list(m values, key string) []string {
	if s := r.str(m, key); s != "" {
		return strings.Split(s, ",")
	}
	return nil
}

// mapValues reads the values of the map under key.
func (r *reader) mapValues(m values, key string) values {
	if v := r.get(m, key, automerge.KindMap); v != nil {
		return r.all(v.Map())
	}
	return nil
}

// set reads the keys of the map under key, sorted.
func (r *reader) set(m values, key string) []string {
	vals := r.mapValues(m, key)
	if len(vals) == 0 {
		return nil
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// millis converts t for storage: Unix milliseconds, 0 for the zero time.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMillis is the inverse of millis, in UTC.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
