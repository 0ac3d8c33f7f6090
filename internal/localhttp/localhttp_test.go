package localhttp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCheck(t *testing.T) {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7421}
	for _, tc := range []struct {
		host, origin string
		ok           bool
	}{
		{"127.0.0.1:7421", "", true},
		{"localhost:7421", "http://localhost:7421", true},
		{"[::1]:7421", "http://127.0.0.1:3000", true}, // a page on this machine
		{"127.0.0.1:7422", "", false},                 // another port
		{"evil.example:7421", "", false},              // DNS rebinding
		{"127.0.0.1.nip.io:7421", "", false},
		{"127.0.0.1:7421", "http://evil.example", false},
		{"127.0.0.1:7421", "null", false},
		{"127.0.0.1:7421", "file:///tmp/x.html", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		if err := Check(r); (err == nil) != tc.ok {
			t.Errorf("Host %q Origin %q: %v, want ok=%v", tc.host, tc.origin, err, tc.ok)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:7421": true, "localhost:0": true, "[::1]:7421": true,
		"0.0.0.0:7421": false, "192.168.1.5:7421": false, ":7421": false, "127.0.0.1": false,
	} {
		if err := CheckAddr(addr); (err == nil) != ok {
			t.Errorf("CheckAddr(%q): %v, want ok=%v", addr, err, ok)
		}
	}
}
