package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Watch records what a tab's pages report that a correct page never
// does: console errors and warnings, uncaught exceptions, the browser's
// own log entries of errors (among them Content-Security-Policy
// violations) and JavaScript dialogs (alert, confirm, prompt), which it
// dismisses. It also counts the bytes each response took on the wire.
type Watch struct {
	mu       sync.Mutex
	problems []string
	dialogs  []string
	bytes    map[network.RequestID]float64
}

// NewWatch starts watching the tab ctx.
func NewWatch(ctx context.Context) (*Watch, error) {
	w := &Watch{bytes: make(map[network.RequestID]float64)}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				w.add(fmt.Sprintf("console.%s: %s", ev.Type, args(ev.Args)))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			w.add(fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, text))
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning || ev.Entry.Source == log.EntrySourceSecurity || ev.Entry.Source == log.EntrySourceViolation {
				w.add(fmt.Sprintf("%s %s: %s (%s)", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
			}
		case *page.EventJavascriptDialogOpening:
			w.mu.Lock()
			w.dialogs = append(w.dialogs, fmt.Sprintf("%s: %q", ev.Type, ev.Message))
			w.mu.Unlock()
			// A listener must not block the tab's event loop: the dialog
			// is dismissed from another goroutine.
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		case *network.EventLoadingFinished:
			w.mu.Lock()
			w.bytes[ev.RequestID] = ev.EncodedDataLength
			w.mu.Unlock()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("browser: watch a tab: %w", err)
	}
	return w, nil
}

func (w *Watch) add(p string) {
	w.mu.Lock()
	w.problems = append(w.problems, p)
	w.mu.Unlock()
}

func args(as []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range as {
		var text string
		switch {
		case a.Type == runtime.RemoteObjectTypeString && json.Unmarshal(a.Value, &text) == nil:
			parts = append(parts, text)
		case a.Description != "":
			parts = append(parts, a.Description)
		case len(a.Value) > 0:
			parts = append(parts, string(a.Value))
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

// Problems returns what went wrong since the last Reset.
func (w *Watch) Problems() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.problems...)
}

// Dialogs returns the dialogs opened since the last Reset.
func (w *Watch) Dialogs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.dialogs...)
}

// Transferred returns the bytes received on the wire for the responses
// finished since the last Reset, and their count.
func (w *Watch) Transferred() (bytes float64, responses int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bytes {
		bytes += b
	}
	return bytes, len(w.bytes)
}

// Reset forgets what was recorded.
func (w *Watch) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems, w.dialogs = nil, nil
	w.bytes = make(map[network.RequestID]float64)
}
