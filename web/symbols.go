package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/memmesh/memmesh/api"
)

// symbolsLine is one line of the answer to POST /v1/symbols/index, a
// stream of JSON lines: progress while the tree is indexed, then the
// report or the error that ended it.
type symbolsLine struct {
	Progress *api.SymbolsProgress `json:"progress,omitempty"`
	Report   *api.SymbolsReport   `json:"report,omitempty"`
	Error    string               `json:"error,omitempty"`
	Code     string               `json:"code,omitempty"`
}

// progressEvery is how often the index's progress is sent.
const progressEvery = 250 * time.Millisecond

// indexSymbols serves POST /v1/symbols/index. An error before the first
// progress line is an ordinary error answer; after it, the last line.
func (a *API) indexSymbols(w http.ResponseWriter, r *http.Request) {
	var req api.SymbolsIndexRequest
	if !a.decode(w, r, &req) {
		return
	}
	var mu sync.Mutex
	started, last := false, time.Time{}
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	progress := func(p api.SymbolsProgress) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < progressEvery && p.Done < p.Total {
			return
		}
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		last = time.Now()
		enc.Encode(symbolsLine{Progress: &p})
		rc.Flush()
	}
	rep, err := a.svc.IndexSymbols(r.Context(), req, progress)
	mu.Lock()
	defer mu.Unlock()
	if !started {
		a.reply(w, http.StatusOK, symbolsLine{Report: &rep}, err)
		return
	}
	if err != nil {
		line := symbolsLine{Error: err.Error(), Code: "internal"}
		for _, c := range errorCodes {
			if errors.Is(err, c.err) {
				line.Code = c.code
				break
			}
		}
		enc.Encode(line)
		return
	}
	enc.Encode(symbolsLine{Report: &rep})
}

// IndexSymbols asks the daemon to index the working tree that holds
// req.Dir, telling progress (when set) how far it is.
func (c *Client) IndexSymbols(ctx context.Context, req api.SymbolsIndexRequest, progress func(api.SymbolsProgress)) (api.SymbolsReport, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return api.SymbolsReport{}, err
	}
	var rep api.SymbolsReport
	w := c.watch(ctx, true)
	err = w.stop(c.roundTrip(w, http.MethodPost, "/v1/symbols/index", bytes.NewReader(body), func(r io.Reader, _ http.Header) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			var line symbolsLine
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				return fmt.Errorf("read daemon answer: %w", err)
			}
			switch {
			case line.Error != "":
				return &Error{Status: http.StatusOK, Code: line.Code, Message: line.Error}
			case line.Report != nil:
				rep = *line.Report
				return nil
			case line.Progress != nil && progress != nil:
				progress(*line.Progress)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read daemon answer: %w", err)
		}
		return fmt.Errorf("read daemon answer: it ended before the report")
	}))
	return rep, err
}

// Symbols finds symbols by name or prefix.
func (c *Client) Symbols(ctx context.Context, req api.SymbolsRequest) ([]api.SymbolLocation, error) {
	var out []api.SymbolLocation
	return out, c.send(ctx, http.MethodPost, "/v1/symbols", req, &out)
}

// SymbolTrees lists the indexed trees.
func (c *Client) SymbolTrees(ctx context.Context) ([]api.SymbolTree, error) {
	var out []api.SymbolTree
	return out, c.do(ctx, http.MethodGet, "/v1/symbols/trees", nil, &out)
}
