// Package localhttp holds what memmesh's loopback HTTP listener (MCP at
// /mcp and the dashboard beside it) needs to serve this machine only, and
// to keep serving it while another user of the machine tries to flood it:
// the loopback address checks, the Host and Origin checks that keep a web
// page from reaching the listener through DNS rebinding, and the server
// (NewServer), with its timeouts and its limits on connections.
//
// A connection is anonymous until one of its requests proves who sent it
// (the handler calls Authenticated: the bearer token, a dashboard
// session). An anonymous connection serves one request and is closed;
// its headers must arrive within HeaderTimeout, and a request that is
// refused (Refuse: 401, 403) is answered at once, after reading at most
// RefusedBody bytes of its body. Anonymous connections are capped per
// local user (the owner of the peer's socket, found with sock_diag on
// Linux) and in all (Limits): past a cap, the oldest anonymous
// connection of the user who holds the most is closed, so a flood from
// another user sheds its own connections, never the owner's.
package localhttp

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

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

// Only refuses with 403 (see Refuse), and logs (LogRefused), the
// requests that Check refuses.
func Only(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Check(r); err != nil {
			LogRefused(log, r, "refused http request", "err", err, "remote", r.RemoteAddr)
			Refuse(w, r)
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
