package web

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// ErrNoDaemon reports that no daemon is listening on the socket.
var ErrNoDaemon = errors.New("web: no memmesh daemon is running")

// Client talks to a daemon's API over its unix socket. No call hangs: each
// fails with an error matching ErrTimeout when the daemon shows no sign of
// life for the client's timeout (see ClientOptions).
type Client struct {
	http     *http.Client
	socket   string
	timeout  time.Duration
	describe func() string
}

var _ Service = (*Client)(nil)

// NewClient returns a client for the daemon listening on socket, which is
// in the daemon's home.
func NewClient(socket string, opts ClientOptions) *Client {
	return &Client{
		http: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			},
			MaxIdleConns:    4,
			IdleConnTimeout: 30 * time.Second,
		}},
		socket:   socket,
		timeout:  cmp.Or(opts.Timeout, DefaultTimeout),
		describe: opts.Describe,
	}
}

// Error is an error answered by the daemon. It matches node's sentinel
// errors with errors.Is.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is matches the node error that the code stands for, and the errors
// that one matches (a purged memory is also not found).
func (e *Error) Is(target error) bool {
	for _, c := range errorCodes {
		if c.code == e.Code {
			return errors.Is(c.err, target)
		}
	}
	return false
}

// do sends a request and decodes a JSON answer into out (when out != nil).
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, out any) error {
	w := c.watch(ctx, isLong(path))
	return w.stop(c.roundTrip(w, method, path, body, func(r io.Reader, _ http.Header) error {
		if out == nil {
			return nil
		}
		if err := json.NewDecoder(r).Decode(out); err != nil {
			return fmt.Errorf("read daemon answer: %w", err)
		}
		return nil
	}))
}

// roundTrip sends a request under w and hands a successful answer's body
// and headers to read; every byte sent or received is a sign of life.
func (c *Client) roundTrip(w *watchdog, method, path string, body io.Reader, read func(io.Reader, http.Header) error) error {
	if body != nil {
		body = watched{body, w}
	}
	req, err := http.NewRequestWithContext(w.ctx, method, "http://memmesh"+path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if isNoDaemon(err) {
			return fmt.Errorf("%w (%v)", ErrNoDaemon, err)
		}
		return fmt.Errorf("talk to daemon: %w", err)
	}
	defer resp.Body.Close()
	w.alive()
	if resp.StatusCode >= 300 {
		return decodeError(resp)
	}
	return read(watched{resp.Body, w}, resp.Header)
}

func decodeError(resp *http.Response) error {
	var e apiError
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		e = apiError{Error: fmt.Sprintf("daemon answered %s", resp.Status), Code: "internal"}
	}
	return &Error{Status: resp.StatusCode, Code: e.Code, Message: e.Error}
}

// isNoDaemon reports whether a dial error means nothing listens on the socket.
func isNoDaemon(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (c *Client) send(ctx context.Context, method, path string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, method, path, bytes.NewReader(data), out)
}

// Health asks the daemon who it is; it fails with ErrNoDaemon when none runs.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	return h, c.do(ctx, http.MethodGet, "/v1/health", nil, &h)
}

// DeviceID returns the daemon's device id, or "" when it cannot be asked.
func (c *Client) DeviceID() string {
	h, err := c.Health(context.Background())
	if err != nil {
		return ""
	}
	return h.DeviceID
}

func (c *Client) Remember(ctx context.Context, req api.RememberRequest) (api.RememberResult, error) {
	var res api.RememberResult
	return res, c.send(ctx, http.MethodPost, "/v1/memories", req, &res)
}

func (c *Client) Get(ctx context.Context, ref string) (api.Memory, error) {
	var m api.Memory
	path, err := memoryPath(ref, "")
	if err != nil {
		return m, err
	}
	return m, c.do(ctx, http.MethodGet, path, nil, &m)
}

func (c *Client) Update(ctx context.Context, ref string, req api.UpdateRequest) (api.Memory, error) {
	var m api.Memory
	path, err := memoryPath(ref, "")
	if err != nil {
		return m, err
	}
	return m, c.send(ctx, http.MethodPatch, path, req, &m)
}

func (c *Client) Forget(ctx context.Context, ref string) (api.Memory, error) {
	return c.byRef(ctx, http.MethodPost, ref, "/forget")
}

func (c *Client) Restore(ctx context.Context, ref string) (api.Memory, error) {
	return c.byRef(ctx, http.MethodPost, ref, "/restore")
}

func (c *Client) Delete(ctx context.Context, ref string) (api.Memory, error) {
	return c.byRef(ctx, http.MethodDelete, ref, "")
}

// Purge erases a memory on every machine, for good.
func (c *Client) Purge(ctx context.Context, ref string) (api.Purged, error) {
	var p api.Purged
	path, err := memoryPath(ref, "/purge")
	if err != nil {
		return p, err
	}
	return p, c.do(ctx, http.MethodPost, path, nil, &p)
}

// byRef calls method on the memory ref, or on its sub-resource suffix.
func (c *Client) byRef(ctx context.Context, method, ref, suffix string) (api.Memory, error) {
	var m api.Memory
	path, err := memoryPath(ref, suffix)
	if err != nil {
		return m, err
	}
	return m, c.do(ctx, method, path, nil, &m)
}

// memoryPath is the API path of the memory ref (and its sub-resource
// suffix). An empty ref would name another route, so it is refused here
// with the node's message.
func memoryPath(ref, suffix string) (string, error) {
	if strings.TrimSpace(ref) == "" {
		return "", fmt.Errorf("%w: no memory id given: ids look like m-k3j5x2ab", api.ErrInvalid)
	}
	return "/v1/memories/" + url.PathEscape(ref) + suffix, nil
}

func (c *Client) List(ctx context.Context, req api.ListRequest) ([]api.Memory, error) {
	page, err := c.ListPage(ctx, req)
	return page.Memories, err
}

// ListPage lists a page of memories and the cursor of the next (the
// answer's NextCursorHeader).
func (c *Client) ListPage(ctx context.Context, req api.ListRequest) (api.ListPage, error) {
	q := url.Values{}
	if req.Namespace != "" {
		q.Set("ns", req.Namespace)
	}
	if req.Kind != "" {
		q.Set("kind", req.Kind)
	}
	if req.Session != "" {
		q.Set("session", req.Session)
	}
	if req.Device != "" {
		q.Set("device", req.Device)
	}
	if req.Cursor != "" {
		q.Set("cursor", req.Cursor)
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if !req.Since.IsZero() {
		q.Set("since", req.Since.Format(time.RFC3339Nano))
	}
	if !req.Until.IsZero() {
		q.Set("until", req.Until.Format(time.RFC3339Nano))
	}
	q["tag"] = req.Tags
	for _, s := range req.Statuses {
		q.Add("status", string(s))
	}
	for _, t := range req.Tiers {
		q.Add("tier", string(t))
	}
	var page api.ListPage
	w := c.watch(ctx, false)
	err := w.stop(c.roundTrip(w, http.MethodGet, "/v1/memories?"+q.Encode(), nil, func(r io.Reader, h http.Header) error {
		page.Next = h.Get(NextCursorHeader)
		if err := json.NewDecoder(r).Decode(&page.Memories); err != nil {
			return fmt.Errorf("read daemon answer: %w", err)
		}
		return nil
	}))
	return page, err
}

func (c *Client) Search(ctx context.Context, req api.SearchRequest) (api.SearchResult, error) {
	var res api.SearchResult
	return res, c.send(ctx, http.MethodPost, "/v1/search", req, &res)
}

func (c *Client) Stats(ctx context.Context) (api.Stats, error) {
	var s api.Stats
	return s, c.do(ctx, http.MethodGet, "/v1/stats", nil, &s)
}

// Export copies the daemon's export to w and returns its header.
func (c *Client) Export(ctx context.Context, w io.Writer) (api.ExportHeader, error) {
	var h api.ExportHeader
	wd := c.watch(ctx, false)
	err := wd.stop(c.roundTrip(wd, http.MethodGet, "/v1/export", nil, func(r io.Reader, _ http.Header) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for first := true; sc.Scan(); first = false {
			line := sc.Bytes()
			var e apiError
			if json.Unmarshal(line, &e) == nil && e.Code != "" && e.Error != "" {
				return &Error{Status: http.StatusInternalServerError, Code: e.Code, Message: e.Error}
			}
			if first {
				if err := json.Unmarshal(line, &h); err != nil {
					return fmt.Errorf("read export: the first line is no header: %w", err)
				}
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read export: %w", err)
		}
		return nil
	}))
	return h, err
}

func (c *Client) Import(ctx context.Context, r io.Reader) (api.ImportResult, error) {
	var res api.ImportResult
	return res, c.do(ctx, http.MethodPost, "/v1/import", r, &res)
}

func (c *Client) Link(ctx context.Context, req api.LinkRequest) (api.Edge, error) {
	var e api.Edge
	return e, c.send(ctx, http.MethodPost, "/v1/edges", req, &e)
}

func (c *Client) Unlink(ctx context.Context, from, rel, to string) (api.Edge, error) {
	var e api.Edge
	return e, c.send(ctx, http.MethodPost, "/v1/edges/unlink", EdgeRef{From: from, Rel: rel, To: to}, &e)
}

func (c *Client) Invalidate(ctx context.Context, from, rel, to string) (api.Edge, error) {
	var e api.Edge
	return e, c.send(ctx, http.MethodPost, "/v1/edges/invalidate", EdgeRef{From: from, Rel: rel, To: to}, &e)
}

func (c *Client) Traverse(ctx context.Context, req api.TraverseRequest) (api.TraverseResult, error) {
	var res api.TraverseResult
	return res, c.send(ctx, http.MethodPost, "/v1/traverse", req, &res)
}

// Doctor reports cycles in acyclic relations and sync conflicts.
func (c *Client) Doctor(ctx context.Context) (api.DoctorReport, error) {
	var res api.DoctorReport
	return res, c.send(ctx, http.MethodGet, "/v1/doctor", nil, &res)
}

// EmbedStatus says how far the vectors of search by meaning are.
func (c *Client) EmbedStatus(ctx context.Context) (api.EmbedStatus, error) {
	var res api.EmbedStatus
	return res, c.send(ctx, http.MethodGet, "/v1/embed/status", nil, &res)
}

// EmbedReindex makes the vectors of search by meaning again.
func (c *Client) EmbedReindex(ctx context.Context) (api.EmbedStatus, error) {
	var res api.EmbedStatus
	return res, c.send(ctx, http.MethodPost, "/v1/embed/reindex", nil, &res)
}

// RunLifecycle runs a lifecycle pass now.
func (c *Client) RunLifecycle(ctx context.Context) (api.LifecycleReport, error) {
	var res api.LifecycleReport
	return res, c.send(ctx, http.MethodPost, "/v1/lifecycle", nil, &res)
}

// CompactCandidates finds clusters of stale memories to compact.
func (c *Client) CompactCandidates(ctx context.Context, req api.CompactRequest) (api.CompactPlan, error) {
	var res api.CompactPlan
	return res, c.send(ctx, http.MethodPost, "/v1/compact", req, &res)
}

// CompactApply replaces memories with a summary of them.
func (c *Client) CompactApply(ctx context.Context, req api.CompactApplyRequest) (api.CompactResult, error) {
	var res api.CompactResult
	return res, c.send(ctx, http.MethodPost, "/v1/compact/apply", req, &res)
}

// Sessions lists agent sessions of every machine, newest first.
func (c *Client) Sessions(ctx context.Context, req api.SessionsRequest) ([]api.Session, error) {
	var res []api.Session
	return res, c.send(ctx, http.MethodPost, "/v1/sessions", req, &res)
}

// Session returns one session by its id or a unique prefix of it.
func (c *Client) Session(ctx context.Context, ref string) (api.SessionDetail, error) {
	var res api.SessionDetail
	if strings.TrimSpace(ref) == "" {
		return res, fmt.Errorf("%w: no session id given: 'memmesh sessions' lists them", api.ErrInvalid)
	}
	return res, c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(ref), nil, &res)
}

// SearchSessions searches the turns of this machine's sessions.
func (c *Client) SearchSessions(ctx context.Context, req api.SessionSearchRequest) ([]api.SessionHit, error) {
	var res []api.SessionHit
	return res, c.send(ctx, http.MethodPost, "/v1/sessions/search", req, &res)
}

// Ingest asks the daemon to read transcripts.
func (c *Client) Ingest(ctx context.Context, req api.IngestRequest) ([]api.IngestReport, error) {
	var res []api.IngestReport
	return res, c.send(ctx, http.MethodPost, "/v1/sessions/ingest", req, &res)
}

// Reflect lists unlinked memories with candidate link targets.
func (c *Client) Reflect(ctx context.Context, req api.ReflectRequest) ([]api.Reflection, error) {
	var res []api.Reflection
	return res, c.send(ctx, http.MethodPost, "/v1/reflect", req, &res)
}

// Analyze measures a namespace's graph.
func (c *Client) Analyze(ctx context.Context, req api.AnalyzeRequest) (api.Analysis, error) {
	var res api.Analysis
	return res, c.send(ctx, http.MethodPost, "/v1/analyze", req, &res)
}

// Stale lists a namespace's memories that may no longer hold.
func (c *Client) Stale(ctx context.Context, req api.StaleRequest) ([]api.StaleMemory, error) {
	var res []api.StaleMemory
	return res, c.send(ctx, http.MethodPost, "/v1/stale", req, &res)
}

// CheckGit checks a namespace's git working trees against their
// repositories (or queues the checks, with req.Background).
func (c *Client) CheckGit(ctx context.Context, req api.GitCheckRequest) ([]api.GitCheck, error) {
	var res []api.GitCheck
	return res, c.send(ctx, http.MethodPost, "/v1/git/check", req, &res)
}

// Impact lists the memories a file affects.
func (c *Client) Impact(ctx context.Context, req api.ImpactRequest) ([]api.Impacted, error) {
	var res []api.Impacted
	return res, c.send(ctx, http.MethodPost, "/v1/impact", req, &res)
}

func (c *Client) Edges(ctx context.Context, req api.EdgesRequest) ([]api.Edge, error) {
	var out []api.Edge
	return out, c.send(ctx, http.MethodPost, "/v1/edges/list", req, &out)
}

func (c *Client) Changes(ctx context.Context, req api.ChangesRequest) (api.ChangesResult, error) {
	var out api.ChangesResult
	return out, c.send(ctx, http.MethodPost, "/v1/changes", req, &out)
}

func (c *Client) Context(ctx context.Context, req api.ContextRequest) (api.Brief, error) {
	var b api.Brief
	return b, c.send(ctx, http.MethodPost, "/v1/context", req, &b)
}

// Invite asks for a one-time invite token; ttl 0 means the node's default.
func (c *Client) Invite(ctx context.Context, ttl time.Duration) (api.Invitation, error) {
	var req InviteRequest
	if ttl != 0 {
		req.TTL = ttl.String()
	}
	var inv api.Invitation
	return inv, c.send(ctx, http.MethodPost, "/v1/mesh/invite", req, &inv)
}

func (c *Client) Join(ctx context.Context, token string) (api.JoinResult, error) {
	var res api.JoinResult
	return res, c.send(ctx, http.MethodPost, "/v1/mesh/join", JoinRequest{Token: token}, &res)
}

// JoinAddr contacts a member at addr and returns how many answered.
func (c *Client) JoinAddr(ctx context.Context, addr string) (int, error) {
	var res RejoinResult
	return res.Contacted, c.send(ctx, http.MethodPost, "/v1/mesh/rejoin", RejoinRequest{Addr: addr}, &res)
}

func (c *Client) Devices(ctx context.Context) ([]api.Device, error) {
	var out []api.Device
	return out, c.do(ctx, http.MethodGet, "/v1/mesh/devices", nil, &out)
}

func (c *Client) Revoke(ctx context.Context, ref string) (api.Device, error) {
	var d api.Device
	return d, c.send(ctx, http.MethodPost, "/v1/mesh/revoke", RevokeRequest{Device: ref}, &d)
}

func (c *Client) Peers(ctx context.Context) ([]api.Peer, error) {
	var out []api.Peer
	return out, c.do(ctx, http.MethodGet, "/v1/mesh/peers", nil, &out)
}

func (c *Client) MeshStatus(ctx context.Context) (api.MeshStatus, error) {
	var st api.MeshStatus
	return st, c.do(ctx, http.MethodGet, "/v1/mesh/status", nil, &st)
}

func (c *Client) SetNamespace(ctx context.Context, ns string, ch api.NamespaceChange) (model.MeshRecord, error) {
	var r model.MeshRecord
	return r, c.send(ctx, http.MethodPost, "/v1/ns/set", NamespaceRequest{Namespace: ns, NamespaceChange: ch}, &r)
}

// Shutdown asks the daemon to stop; it returns once the request is
// accepted. The request lapses unless the daemon reads it within half the
// client's timeout, so that a call that failed for want of an answer does
// not stop the daemon later (the other half is for the answer).
func (c *Client) Shutdown(ctx context.Context) error {
	return c.send(ctx, http.MethodPost, "/v1/shutdown", ShutdownRequest{Before: time.Now().Add(c.timeout / 2)}, nil)
}
