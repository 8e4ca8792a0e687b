// Package localhost keeps web pages away from pikit's local servers (the
// proxy, pikit web): a request must name the server's own address in its
// Host header, so that no page can reach it by DNS rebinding, and a
// request a browser sends for a page must come from a page of this
// machine.
package localhost

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Check says why r may not be answered by the server name: its Host is
// not this machine's loopback (localhost, a loopback address) or the
// address r came in at, at the server's port, or one of hosts; or a web
// page sent it from an origin elsewhere.
func Check(r *http.Request, hosts []string, name string) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, "80"
	}
	ok := Own(host, local, hosts)
	if tcp, isTCP := local.(*net.TCPAddr); isTCP && fmt.Sprint(tcp.Port) != port {
		ok = false
	}
	if !ok {
		return fmt.Errorf("%s refuses a request for host %q: it answers only requests for its own address (127.0.0.1, localhost or [::1] at its port, or the --listen host), so that no web page can reach it by DNS rebinding", name, r.Host)
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !Own(u.Hostname(), nil, hosts) {
			return fmt.Errorf("%s refuses a request from the web page at %q: it answers agents on this machine only (an Origin of localhost or a loopback address)", name, o)
		}
	} else if o == "null" {
		return fmt.Errorf("%s refuses a request from a page without an origin (a sandboxed frame or a file): it answers agents on this machine only", name)
	} else if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return fmt.Errorf("%s refuses a cross-site request from a web page: it answers agents on this machine only", name)
	}
	return nil
}

// Own reports whether host names this machine's loopback, the address
// local a request came in at, or one of hosts.
func Own(host string, local net.Addr, hosts []string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() {
			return true
		}
		if tcp, ok := local.(*net.TCPAddr); ok && tcp.IP.Equal(ip) {
			return true
		}
	}
	for _, h := range hosts {
		if strings.EqualFold(strings.Trim(h, "[]"), host) {
			return true
		}
	}
	return false
}
