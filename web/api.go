package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// Service is what the API serves: the node's service API.
type Service interface {
	Remember(ctx context.Context, req api.RememberRequest) (api.RememberResult, error)
	Get(ctx context.Context, ref string) (api.Memory, error)
	Update(ctx context.Context, ref string, req api.UpdateRequest) (api.Memory, error)
	Forget(ctx context.Context, ref string) (api.Memory, error)
	Restore(ctx context.Context, ref string) (api.Memory, error)
	Delete(ctx context.Context, ref string) (api.Memory, error)
	Purge(ctx context.Context, ref string) (api.Purged, error)
	ListPage(ctx context.Context, req api.ListRequest) (api.ListPage, error)
	Search(ctx context.Context, req api.SearchRequest) (api.SearchResult, error)
	Stats(ctx context.Context) (api.Stats, error)
	Export(ctx context.Context, w io.Writer) (api.ExportHeader, error)
	Import(ctx context.Context, r io.Reader) (api.ImportResult, error)
	Link(ctx context.Context, req api.LinkRequest) (api.Edge, error)
	Unlink(ctx context.Context, from, rel, to string) (api.Edge, error)
	Invalidate(ctx context.Context, from, rel, to string) (api.Edge, error)
	Traverse(ctx context.Context, req api.TraverseRequest) (api.TraverseResult, error)
	Impact(ctx context.Context, req api.ImpactRequest) ([]api.Impacted, error)
	Symbols(ctx context.Context, req api.SymbolsRequest) ([]api.SymbolLocation, error)
	SymbolTrees(ctx context.Context) ([]api.SymbolTree, error)
	IndexSymbols(ctx context.Context, req api.SymbolsIndexRequest, progress func(api.SymbolsProgress)) (api.SymbolsReport, error)
	Doctor(ctx context.Context) (api.DoctorReport, error)
	EmbedStatus(ctx context.Context) (api.EmbedStatus, error)
	EmbedReindex(ctx context.Context) (api.EmbedStatus, error)
	RunLifecycle(ctx context.Context) (api.LifecycleReport, error)
	CompactCandidates(ctx context.Context, req api.CompactRequest) (api.CompactPlan, error)
	CompactApply(ctx context.Context, req api.CompactApplyRequest) (api.CompactResult, error)
	Stale(ctx context.Context, req api.StaleRequest) ([]api.StaleMemory, error)
	CheckGit(ctx context.Context, req api.GitCheckRequest) ([]api.GitCheck, error)
	Analyze(ctx context.Context, req api.AnalyzeRequest) (api.Analysis, error)
	Reflect(ctx context.Context, req api.ReflectRequest) ([]api.Reflection, error)
	Edges(ctx context.Context, req api.EdgesRequest) ([]api.Edge, error)
	Changes(ctx context.Context, req api.ChangesRequest) (api.ChangesResult, error)
	Context(ctx context.Context, req api.ContextRequest) (api.Brief, error)
	Sessions(ctx context.Context, req api.SessionsRequest) ([]api.Session, error)
	Session(ctx context.Context, ref string) (api.SessionDetail, error)
	SearchSessions(ctx context.Context, req api.SessionSearchRequest) ([]api.SessionHit, error)
	Ingest(ctx context.Context, req api.IngestRequest) ([]api.IngestReport, error)
	DeviceID() string

	// The mesh. Invite, Join, JoinAddr and Peers fail with api.ErrNoMesh
	// on a node that runs without it.
	Invite(ctx context.Context, ttl time.Duration) (api.Invitation, error)
	Join(ctx context.Context, token string) (api.JoinResult, error)
	JoinAddr(ctx context.Context, addr string) (int, error)
	Devices(ctx context.Context) ([]api.Device, error)
	Revoke(ctx context.Context, ref string) (api.Device, error)
	Peers(ctx context.Context) ([]api.Peer, error)
	MeshStatus(ctx context.Context) (api.MeshStatus, error)
	SetNamespace(ctx context.Context, ns string, ch api.NamespaceChange) (model.MeshRecord, error)
}

// EdgeRef names an edge by its endpoints and relation.
type EdgeRef struct {
	From string `json:"from"`
	Rel  string `json:"rel"`
	To   string `json:"to"`
}

// InviteRequest asks for an invite token valid for TTL: a duration such as
// "30m", "2h" or "1d", from one minute to a week; "" means an hour.
type InviteRequest struct {
	TTL string `json:"ttl,omitempty"`
}

// JoinRequest joins a mesh with an invite token.
type JoinRequest struct {
	Token string `json:"token"`
}

// RejoinRequest contacts a member of the mesh at Addr (host:port).
type RejoinRequest struct {
	Addr string `json:"addr"`
}

// RejoinResult is the answer to a RejoinRequest.
type RejoinResult struct {
	Addr      string `json:"addr"`
	Contacted int    `json:"contacted"` // members that answered
}

// RevokeRequest names a device by id, unique id prefix or unique name.
type RevokeRequest struct {
	Device string `json:"device"`
}

// SyncRequest sets a namespace's replication policy: model.SyncAll or
// model.SyncLocal.
type NamespaceRequest struct {
	Namespace string `json:"namespace"`
	api.NamespaceChange
}

// ShutdownRequest asks the daemon to stop if the request reaches it by
// Before (zero: whenever it does). A client that stopped waiting for an
// answer reports that the daemon did not stop; the request lapses with
// it, and does not stop the daemon later behind the user's back.
type ShutdownRequest struct {
	Before time.Time `json:"before,omitzero"`
}

// Health is the daemon's answer to /v1/health.
type Health struct {
	Version  string `json:"version"`
	DeviceID string `json:"device_id"`
	PID      int    `json:"pid"`
}

// API serves Service over HTTP.
type API struct {
	svc         Service
	log         *slog.Logger
	shutdown    func()
	mux         *http.ServeMux
	bodyTimeout time.Duration // see Timeouts.Body; 0: none
}

// NewAPI returns the API handler. shutdown is called (once per request) when
// a client asks the daemon to stop.
func NewAPI(svc Service, log *slog.Logger, shutdown func()) *API {
	a := &API{svc: svc, log: log, shutdown: shutdown, mux: http.NewServeMux()}
	a.mux.HandleFunc("GET /v1/health", a.health)
	a.mux.HandleFunc("POST /v1/memories", jsonCall(a, http.StatusCreated, svc.Remember))
	a.mux.HandleFunc("GET /v1/memories", a.list)
	a.mux.HandleFunc("GET /v1/memories/{ref}", a.get)
	a.mux.HandleFunc("PATCH /v1/memories/{ref}", a.update)
	a.mux.HandleFunc("POST /v1/memories/{ref}/forget", byRef(a, svc.Forget))
	a.mux.HandleFunc("POST /v1/memories/{ref}/restore", byRef(a, svc.Restore))
	a.mux.HandleFunc("DELETE /v1/memories/{ref}", byRef(a, svc.Delete))
	a.mux.HandleFunc("POST /v1/memories/{ref}/purge", byRef(a, svc.Purge))
	a.mux.HandleFunc("POST /v1/search", jsonCall(a, http.StatusOK, svc.Search))
	a.mux.HandleFunc("GET /v1/stats", noBodyCall(a, svc.Stats))
	a.mux.HandleFunc("GET /v1/doctor", noBodyCall(a, svc.Doctor))
	a.mux.HandleFunc("GET /v1/embed/status", noBodyCall(a, svc.EmbedStatus))
	a.mux.HandleFunc("POST /v1/embed/reindex", noBodyCall(a, svc.EmbedReindex))
	a.mux.HandleFunc("POST /v1/lifecycle", noBodyCall(a, svc.RunLifecycle))
	a.mux.HandleFunc("POST /v1/compact", jsonCall(a, http.StatusOK, svc.CompactCandidates))
	a.mux.HandleFunc("POST /v1/compact/apply", jsonCall(a, http.StatusOK, svc.CompactApply))
	a.mux.HandleFunc("POST /v1/stale", jsonCall(a, http.StatusOK, svc.Stale))
	a.mux.HandleFunc("POST /v1/git/check", jsonCall(a, http.StatusOK, svc.CheckGit))
	a.mux.HandleFunc("POST /v1/analyze", jsonCall(a, http.StatusOK, svc.Analyze))
	a.mux.HandleFunc("POST /v1/reflect", jsonCall(a, http.StatusOK, svc.Reflect))
	a.mux.HandleFunc("GET /v1/export", a.export)
	a.mux.HandleFunc("POST /v1/import", a.importJSONL)
	a.mux.HandleFunc("POST /v1/edges", jsonCall(a, http.StatusOK, svc.Link))
	a.mux.HandleFunc("POST /v1/edges/unlink", jsonCall(a, http.StatusOK, edgeOp(svc.Unlink)))
	a.mux.HandleFunc("POST /v1/edges/invalidate", jsonCall(a, http.StatusOK, edgeOp(svc.Invalidate)))
	a.mux.HandleFunc("POST /v1/traverse", jsonCall(a, http.StatusOK, svc.Traverse))
	a.mux.HandleFunc("POST /v1/impact", jsonCall(a, http.StatusOK, svc.Impact))
	a.mux.HandleFunc("POST /v1/symbols", jsonCall(a, http.StatusOK, svc.Symbols))
	a.mux.HandleFunc("GET /v1/symbols/trees", noBodyCall(a, svc.SymbolTrees))
	a.mux.HandleFunc("POST /v1/symbols/index", a.indexSymbols)
	a.mux.HandleFunc("POST /v1/edges/list", jsonCall(a, http.StatusOK, svc.Edges))
	a.mux.HandleFunc("POST /v1/changes", jsonCall(a, http.StatusOK, svc.Changes))
	a.mux.HandleFunc("POST /v1/context", jsonCall(a, http.StatusOK, svc.Context))
	a.mux.HandleFunc("POST /v1/context/text", jsonCall(a, http.StatusOK, briefText(svc.Context)))
	a.mux.HandleFunc("POST /v1/sessions", jsonCall(a, http.StatusOK, svc.Sessions))
	a.mux.HandleFunc("GET /v1/sessions/{ref}", byRef(a, svc.Session))
	a.mux.HandleFunc("POST /v1/sessions/search", jsonCall(a, http.StatusOK, svc.SearchSessions))
	a.mux.HandleFunc("POST /v1/sessions/ingest", jsonCall(a, http.StatusOK, svc.Ingest))
	a.mux.HandleFunc("POST /v1/mesh/invite", jsonCall(a, http.StatusCreated, invite(svc.Invite)))
	a.mux.HandleFunc("POST /v1/mesh/join", jsonCall(a, http.StatusOK, func(ctx context.Context, req JoinRequest) (api.JoinResult, error) {
		return svc.Join(ctx, req.Token)
	}))
	a.mux.HandleFunc("POST /v1/mesh/rejoin", jsonCall(a, http.StatusOK, func(ctx context.Context, req RejoinRequest) (RejoinResult, error) {
		k, err := svc.JoinAddr(ctx, req.Addr)
		return RejoinResult{Addr: req.Addr, Contacted: k}, err
	}))
	a.mux.HandleFunc("GET /v1/mesh/devices", noBodyCall(a, svc.Devices))
	a.mux.HandleFunc("POST /v1/mesh/revoke", jsonCall(a, http.StatusOK, func(ctx context.Context, req RevokeRequest) (api.Device, error) {
		return svc.Revoke(ctx, req.Device)
	}))
	a.mux.HandleFunc("GET /v1/mesh/peers", noBodyCall(a, svc.Peers))
	a.mux.HandleFunc("GET /v1/mesh/status", noBodyCall(a, svc.MeshStatus))
	a.mux.HandleFunc("POST /v1/ns/set", jsonCall(a, http.StatusOK, func(ctx context.Context, req NamespaceRequest) (model.MeshRecord, error) {
		return svc.SetNamespace(ctx, req.Namespace, req.NamespaceChange)
	}))
	a.mux.HandleFunc("POST /v1/shutdown", a.stop)
	return a
}

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.limitBody(w, r) {
		a.mux.ServeHTTP(w, r)
	}
}

func (a *API) health(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, Health{Version: api.Version(), DeviceID: a.svc.DeviceID(), PID: os.Getpid()})
}

// NextCursorHeader carries, in the answer to a list (GET /v1/memories)
// whose page is full, the cursor of the next page: the list's query again
// with cursor set to it continues where this page ended. The body stays
// an array of memories.
const NextCursorHeader = "Next-Cursor"

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := api.ListRequest{Namespace: q.Get("ns"), Tags: q["tag"], Kind: q.Get("kind"), Session: q.Get("session"),
		Device: q.Get("device"), Cursor: q.Get("cursor")}
	for _, s := range q["status"] {
		req.Statuses = append(req.Statuses, model.Status(s))
	}
	for _, t := range q["tier"] {
		req.Tiers = append(req.Tiers, model.Tier(t))
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			a.fail(w, api.Invalidf("limit %q is not a number", l))
			return
		}
		req.Limit = n
	}
	for name, into := range map[string]*time.Time{"since": &req.Since, "until": &req.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				a.fail(w, api.Invalidf("%s %q is not an RFC 3339 time", name, v))
				return
			}
			*into = t
		}
	}
	page, err := a.svc.ListPage(r.Context(), req)
	if page.Next != "" {
		w.Header().Set(NextCursorHeader, page.Next)
	}
	a.reply(w, http.StatusOK, page.Memories, err)
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	res, err := a.svc.Get(r.Context(), r.PathValue("ref"))
	a.reply(w, http.StatusOK, res, err)
}

func (a *API) update(w http.ResponseWriter, r *http.Request) {
	var req api.UpdateRequest
	if !a.decode(w, r, &req) {
		return
	}
	res, err := a.svc.Update(r.Context(), r.PathValue("ref"), req)
	a.reply(w, http.StatusOK, res, err)
}

// byRef serves a change of the memory named in the path (forget, restore,
// delete, purge).
func byRef[Res any](a *API, op func(context.Context, string) (Res, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res, err := op(r.Context(), r.PathValue("ref"))
		a.reply(w, http.StatusOK, res, err)
	}
}

func (a *API) export(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	if _, err := a.svc.Export(r.Context(), w); err != nil {
		// Headers are gone; end the stream with an error line the client
		// recognises instead of a silently truncated file.
		a.log.Error("export", "err", err)
		json.NewEncoder(w).Encode(apiError{Error: err.Error(), Code: "internal"})
	}
}

func (a *API) importJSONL(w http.ResponseWriter, r *http.Request) {
	res, err := a.svc.Import(r.Context(), r.Body)
	a.reply(w, http.StatusOK, res, err)
}

// jsonCall serves a call that takes a JSON body and answers JSON.
func jsonCall[Req, Res any](a *API, status int, call func(context.Context, Req) (Res, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if !a.decode(w, r, &req) {
			return
		}
		res, err := call(r.Context(), req)
		a.reply(w, status, res, err)
	}
}

// noBodyCall serves a call that takes nothing and answers JSON.
func noBodyCall[Res any](a *API, call func(context.Context) (Res, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res, err := call(r.Context())
		a.reply(w, http.StatusOK, res, err)
	}
}

// invite adapts Invite to a call taking an InviteRequest.
func invite(call func(context.Context, time.Duration) (api.Invitation, error)) func(context.Context, InviteRequest) (api.Invitation, error) {
	return func(ctx context.Context, req InviteRequest) (api.Invitation, error) {
		var ttl time.Duration
		if req.TTL != "" {
			d, err := api.ParseTTL(req.TTL)
			if err != nil || d <= 0 {
				return api.Invitation{}, api.Invalidf("invite ttl %q: give a duration from 1m to 7d, e.g. 30m, 2h or 1d", req.TTL)
			}
			ttl = d
		}
		return call(ctx, ttl)
	}
}

// edgeOp adapts an operation on one edge to a call taking an EdgeRef.
func edgeOp(op func(ctx context.Context, from, rel, to string) (api.Edge, error)) func(context.Context, EdgeRef) (api.Edge, error) {
	return func(ctx context.Context, ref EdgeRef) (api.Edge, error) { return op(ctx, ref.From, ref.Rel, ref.To) }
}

func (a *API) stop(w http.ResponseWriter, r *http.Request) {
	var req ShutdownRequest
	if r.ContentLength != 0 && !a.decode(w, r, &req) {
		return
	}
	if late := time.Since(req.Before); !req.Before.IsZero() && late > 0 {
		a.log.Warn("a request to stop arrived after its deadline, when its client may have stopped waiting: the daemon keeps running", "late", late.Round(time.Millisecond))
		a.fail(w, api.Invalidf("the request to stop arrived %s after its deadline: the daemon keeps running", late.Round(time.Millisecond)))
		return
	}
	WriteJSON(w, http.StatusAccepted, map[string]string{"status": "stopping"})
	a.shutdown()
}

// decode reads a JSON request body into v, answering the error itself. A
// body that is no Unicode text is refused before it is decoded, since the
// decoder would store U+FFFD in its place (api.CheckJSONText).
func (a *API) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err == nil {
		if err = api.CheckJSONText(body); err != nil {
			err = fmt.Errorf("the request body is %w", err)
		}
	}
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
	}
	if err != nil {
		a.bodyError(w, err)
		return false
	}
	return true
}

func (a *API) reply(w http.ResponseWriter, status int, v any, err error) {
	if err != nil {
		a.fail(w, err)
		return
	}
	WriteJSON(w, status, v)
}

// apiError is the body of every error response.
type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// errorCodes maps node errors to API codes and HTTP statuses.
var errorCodes = []struct {
	err    error
	code   string
	status int
}{
	{api.ErrInvalid, "invalid", http.StatusBadRequest},
	{api.ErrPurged, "purged", http.StatusGone}, // before not_found, which it matches too
	{api.ErrNotFound, "not_found", http.StatusNotFound},
	{api.ErrAmbiguous, "ambiguous", http.StatusConflict},
	{api.ErrClosed, "unavailable", http.StatusServiceUnavailable},
	{api.ErrNoMesh, "no_mesh", http.StatusConflict},
	{api.ErrDiskFull, "disk_full", http.StatusInsufficientStorage},
}

func (a *API) fail(w http.ResponseWriter, err error) {
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			WriteJSON(w, c.status, apiError{Error: err.Error(), Code: c.code})
			return
		}
	}
	a.log.Error("request failed", "err", err)
	WriteJSON(w, http.StatusInternalServerError, apiError{Error: err.Error(), Code: "internal"})
}

// WriteJSON answers v as JSON with status, as every answer of the API
// (HTML left unescaped: the answers are data, not markup).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
