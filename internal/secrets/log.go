package secrets

import (
	"context"
	"fmt"
	"log/slog"
)

// ScrubLogs returns a handler that passes every record to h with the
// secrets of its message and of its attributes (strings, errors, and
// anything else that prints as text) redacted. Logs quote what peers,
// agents and people sent, in refused documents and failed requests, and
// must carry no secret. Wrapping a handler twice scrubs once.
func ScrubLogs(h slog.Handler) slog.Handler {
	if _, ok := h.(scrubHandler); ok {
		return h
	}
	return scrubHandler{h}
}

type scrubHandler struct{ next slog.Handler }

func (h scrubHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	msg, _ := Scrub(r.Message)
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(scrubAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h scrubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	scrubbed := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		scrubbed[i] = scrubAttr(a)
	}
	return scrubHandler{h.next.WithAttrs(scrubbed)}
}

func (h scrubHandler) WithGroup(name string) slog.Handler {
	return scrubHandler{h.next.WithGroup(name)}
}

// scrubAttr redacts the secrets of an attribute's value. Values that print
// as text (errors, stringers, slices) are replaced by their scrubbed text
// when it differs; numbers, times and the like are kept as they are.
func scrubAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		s, _ := Scrub(v.String())
		return slog.String(a.Key, s)
	case slog.KindGroup:
		group := v.Group()
		scrubbed := make([]any, len(group))
		for i, g := range group {
			scrubbed[i] = scrubAttr(g)
		}
		return slog.Group(a.Key, scrubbed...)
	case slog.KindAny:
		text := fmt.Sprint(v.Any())
		if s, kinds := Scrub(text); kinds != nil {
			return slog.String(a.Key, s)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
