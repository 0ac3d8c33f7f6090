package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/inert"
)

// emit writes v in the chosen format: JSON as is, or through the human and
// brief printers. What it writes is inert, whatever memories hold: the
// printers' text shows control and bidi characters visibly (inert.Text),
// and JSON escapes them, keeping every value exact (inert.JSON).
func (a *app) emit(v any, human, brief func(w io.Writer)) error {
	if a.format == "json" {
		return writeJSON(a.stdout, v, "  ")
	}
	var b strings.Builder
	if a.format == "brief" {
		brief(&b)
	} else {
		human(&b)
	}
	_, err := io.WriteString(a.stdout, inert.Text(b.String()))
	return err
}

// writeJSON writes v as inert JSON, indented by indent ("" for one line).
func writeJSON(w io.Writer, v any, indent string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(inert.JSON(b.Bytes()))
	return err
}

// emitList writes a list as {key: [...]} in JSON, through human for
// people, and one line of brief per item.
func emitList[T any](a *app, key string, items []T, human func(w io.Writer), brief func(T) string) error {
	if items == nil {
		items = []T{}
	}
	return a.emit(map[string]any{key: items}, human, func(w io.Writer) {
		for _, it := range items {
			fmt.Fprintln(w, brief(it))
		}
	})
}

// printMemory shows one memory in full.
func printMemory(w io.Writer, m api.Memory) {
	fmt.Fprintf(w, "%s  %s\n", m.ShortID, m.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "  %s\t%s\n", k, v)
		}
	}
	row("id", m.ID)
	row("namespace", m.Namespace)
	row("kind", m.Kind)
	row("status", string(m.Status))
	row("tier", fmt.Sprintf("%s (confidence %.2f)", m.Tier, m.Confidence))
	row("tags", strings.Join(m.Tags, ", "))
	row("touches", strings.Join(m.Touches, ", "))
	row("created", fmt.Sprintf("%s by %s", when(m.Provenance.CreatedAt), source(m)))
	row("updated", when(m.Provenance.UpdatedAt))
	if m.Evergreen {
		row("evergreen", "yes")
	}
	if !m.ExpiresAt.IsZero() {
		row("expires", when(m.ExpiresAt))
	}
	row("revisions", fmt.Sprint(len(m.Revisions)))
	tw.Flush()
	fmt.Fprintf(w, "\n%s\n", indent(m.Content))
	if len(m.Revisions) > 1 {
		fmt.Fprintln(w, "\nRevisions, oldest first:")
		for i, r := range m.Revisions {
			fmt.Fprintf(w, "  %d. %s  %s  device %s", i+1, r.ID[:min(8, len(r.ID))], when(r.At), shortDevice(r.Device))
			if r.Agent != "" {
				fmt.Fprintf(w, ", %s", r.Agent)
			}
			fmt.Fprintln(w)
		}
	}
	if len(m.Conflict) > 0 {
		fmt.Fprintf(w, "\nSYNC CONFLICT: %d versions were written concurrently; 'memmesh update %s --content ...' resolves it.\n", len(m.Conflict), m.ShortID)
		for _, r := range m.Conflict {
			fmt.Fprintf(w, "\n  version %s (%s, %s):\n%s\n", r.ID[:8], shortDevice(r.Device), when(r.At), indent(r.Text))
		}
	}
}

func source(m api.Memory) string {
	s := "device " + shortDevice(m.Provenance.Device)
	if m.Provenance.Agent != "" {
		s += ", " + m.Provenance.Agent
	}
	return s
}

func shortDevice(d string) string {
	if len(d) > 7 {
		return d[:7]
	}
	return d
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// when shows a time in local time, with a relative hint.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	var rel string
	switch {
	case d < 0:
		rel = "in " + roughDuration(-d)
	case d < time.Minute:
		rel = "just now"
	default:
		rel = roughDuration(d) + " ago"
	}
	return t.Local().Format("2006-01-02 15:04") + " (" + rel + ")"
}

func roughDuration(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
}

// snippet is the start of s on one line, at most n runes.
func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// printList shows memories one per line.
func printList(w io.Writer, ms []api.Memory) {
	printTable(w, ms, "No memories.", "ID\tUPDATED\tNAMESPACE\tKIND\tTITLE", func(m api.Memory) []any {
		return []any{m.ShortID, stamp(m.Provenance.UpdatedAt), m.Namespace, m.Kind, snippet(m.Title, 60)}
	})
}

// printTable shows items one per row under a header of tab-separated
// column names, or the empty message when there are none.
func printTable[T any](w io.Writer, items []T, empty, header string, row func(T) []any) {
	if len(items) == 0 {
		fmt.Fprintln(w, empty)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		cells := row(it)
		for i, c := range cells {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// stamp is a time in local time, or "-".
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func printBriefList(w io.Writer, ms []api.Memory) {
	for _, m := range ms {
		fmt.Fprintf(w, "%s\t%s\n", m.ShortID, m.Title)
	}
}

// stderrTerminal returns standard error when a person reads it on a
// terminal.
func (a *app) stderrTerminal() (*os.File, bool) {
	f, ok := a.stderr.(*os.File)
	return f, ok && term.IsTerminal(int(f.Fd()))
}

// status tells a person at a terminal what a long command is doing, on
// standard error; it says nothing to scripts and agents.
func (a *app) status(format string, args ...any) {
	if f, ok := a.stderrTerminal(); ok {
		fmt.Fprintln(f, inert.Text(fmt.Sprintf(format, args...)))
	}
}
