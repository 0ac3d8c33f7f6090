// Package localhttp holds what memmesh's loopback HTTP listener (MCP at
// /mcp and the dashboard beside it) needs to serve this machine only: the
// loopback address checks, the Host and Origin checks that keep a web page
// from reaching the listener through DNS rebinding, and the server's
// timeouts.
package localhttp

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Timeouts of the listener. No server-wide read or write timeout: an event
// stream (MCP's or the dashboard's) stays open as long as its client.
const (
	HeaderTimeout = 10 * time.Second
	IdleTimeout   = 2 * time.Minute
)

// NewServer returns an http.Server for h with the listener's timeouts,
// logging its errors to log.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: HeaderTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// IsLoopback reports whether host (without port or brackets) names this
// machine: localhost or a loopback IP address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// CheckAddr checks that addr is host:port with a loopback host or
// localhost.
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("http address %q: %w (use host:port, e.g. 127.0.0.1:7421)", addr, err)
	}
	if !IsLoopback(host) {
		return fmt.Errorf("http address %q is not a loopback address: memmesh's HTTP listener serves this machine only; use 127.0.0.1:PORT, localhost:PORT or [::1]:PORT", addr)
	}
	return nil
}

// Check accepts a request whose Host is a loopback name with the port it
// arrived on, and whose Origin, when set, is a page on this machine.
func Check(r *http.Request) error {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = strings.Trim(r.Host, "[]"), "80"
	}
	if !IsLoopback(host) {
		return fmt.Errorf("host %q is not this machine; use localhost, 127.0.0.1 or [::1]", r.Host)
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, want, err := net.SplitHostPort(local.String()); err == nil && port != want {
			return fmt.Errorf("host %q does not name this server's port %s", r.Host, want)
		}
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !IsLoopback(u.Hostname()) {
			return fmt.Errorf("origin %q is not a page on this machine", origin)
		}
	}
	return nil
}

// Only refuses with 403, and logs, the requests that Check refuses.
func Only(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Check(r); err != nil {
			log.Warn("refused http request", "err", err, "remote", r.RemoteAddr)
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
