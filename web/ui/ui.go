package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/localhttp"
	"github.com/memmesh/memmesh/web"
)

//go:embed static
var staticFS embed.FS

// Service is what the dashboard serves: the node's service API, as
// package web serves it.
type Service = web.Service

// Options configure a Handler.
type Options struct {
	// Token is the HTTP bearer token; an API call that carries it needs no
	// session (for scripts).
	Token string
	// Logger receives the dashboard's logs; nil discards them.
	Logger *slog.Logger
	// Version is the memmesh version the shell shows; "" means api.Version().
	Version string
	// MaxSessions bounds the sessions kept (DefaultMaxSessions when 0): a
	// new one ends the oldest.
	MaxSessions int
	// Now is the clock of codes and sessions; nil means time.Now.
	Now func() time.Time
	// PeerUID finds the local user that a request comes from, to which a
	// session is bound; nil means localhttp.PeerUID.
	PeerUID func(*http.Request) (uint32, bool)
	// PollInterval is how often the event stream reads the change log
	// (DefaultPollInterval when 0); peers are read every PeerInterval.
	PollInterval time.Duration
	PeerInterval time.Duration
}

// Defaults of Options.
const (
	DefaultMaxSessions  = 32
	DefaultPollInterval = 200 * time.Millisecond
	DefaultPeerInterval = time.Second
)

// CSP is the Content-Security-Policy of every response.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the dashboard. Close it to end its event streams.
type Handler struct {
	svc     Service
	log     *slog.Logger
	version string
	auth    *auth
	events  *hub
	static  map[string]staticFile
	handler http.Handler
}

// staticFile is an embedded file with its ETag.
type staticFile struct {
	data []byte
	etag string
	ctyp string
}

// New returns the dashboard's handler for svc.
func New(svc Service, opts Options) (*Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = api.Version()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PeerUID == nil {
		opts.PeerUID = localhttp.PeerUID
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	static, err := loadStatic()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		svc:     svc,
		log:     opts.Logger,
		version: opts.Version,
		auth:    newAuth(opts.Token, opts.MaxSessions, opts.Now, opts.PeerUID, opts.Logger),
		events:  newHub(svc, opts.Logger, opts.PollInterval, opts.PeerInterval),
		static:  static,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /static/{path...}", h.serveStatic)
	mux.HandleFunc("GET /ui/login", h.login)
	mux.Handle("POST /ui/logout", h.auth.apiOnly(http.HandlerFunc(h.logout)))
	mux.Handle("GET /ui/api/session", h.auth.apiOnly(http.HandlerFunc(h.session)))
	mux.Handle("GET /ui/api/events", h.auth.apiOnly(http.HandlerFunc(h.events.serve)))
	api := web.NewAPI(svc, opts.Logger, func() {}).Handler(web.DefaultTimeouts)
	mux.Handle("/ui/api/", h.auth.apiOnly(http.StripPrefix("/ui/api", refuseShutdown(api))))
	mux.HandleFunc("/ui/", http.NotFound)
	mux.HandleFunc("/", h.page)
	h.handler = securityHeaders(localhttp.Only(opts.Logger, h.auth.identify(mux)))
	return h, nil
}

// ServeHTTP serves one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.handler.ServeHTTP(w, r)
}

// Close ends the event streams and stops reading the node's changes.
func (h *Handler) Close() { h.events.close() }

// LoginCode returns a new one-time login code and when it expires.
func (h *Handler) LoginCode() (string, time.Time) { return h.auth.newCode() }

// LoginPath is the path, with its query, that logs a browser in with code.
func LoginPath(code string) string { return "/ui/login?code=" + code }

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", CSP)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			hd.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// refuseShutdown refuses the API's shutdown call: a browser does not stop
// the daemon.
func refuseShutdown(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/shutdown" {
			http.Error(w, "Forbidden: stop the daemon with 'memmesh stop'", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loadStatic reads the embedded files and computes their ETags.
func loadStatic() (map[string]staticFile, error) {
	files := map[string]staticFile{}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctyp := mime.TypeByExtension(path.Ext(p))
		if ctyp == "" {
			ctyp = "application/octet-stream"
		}
		files[strings.TrimPrefix(p, "static/")] = staticFile{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctyp: ctyp}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ui: read embedded files: %w", err)
	}
	if _, ok := files["index.html"]; !ok {
		return nil, fmt.Errorf("ui: index.html is not embedded")
	}
	return files, nil
}

// serveStatic serves an embedded file, revalidated by its ETag.
func (h *Handler) serveStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := h.static[r.PathValue("path")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.ctyp)
	hd.Set("ETag", f.etag)
	hd.Set("Cache-Control", "no-cache")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Write(f.data)
}

// page serves the shell for every page path, or sends a browser without a
// session to /ui/login.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if _, ok := h.auth.session(r); !ok {
		http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
		return
	}
	f := h.static["index.html"]
	w.Header().Set("Content-Type", f.ctyp)
	w.Write(f.data)
}

// sessionInfo is the answer to GET /ui/api/session.
type sessionInfo struct {
	CSRF       string   `json:"csrf"`
	Device     string   `json:"device"`
	Version    string   `json:"version"`
	Namespaces []string `json:"namespaces"`
}

func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	info := sessionInfo{Device: h.svc.DeviceID(), Version: h.version, Namespaces: []string{}}
	if s, ok := h.auth.session(r); ok {
		info.CSRF = s.csrf
	}
	st, err := h.svc.Stats(r.Context())
	if err != nil {
		h.log.Error("stats for the dashboard's session", "err", err)
		http.Error(w, "Internal Server Error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	for ns := range st.ByNamespace {
		info.Namespaces = append(info.Namespaces, ns)
	}
	slices.Sort(info.Namespaces)
	web.WriteJSON(w, http.StatusOK, info)
}
