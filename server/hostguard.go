package server

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/plimsoll/plimsoll/internal/clienttext"
)

// guardHost puts loopbackOnly in front of h when on says a listener has no token to check.
func guardHost(h http.Handler, on bool) http.Handler {
	if !on {
		return h
	}
	return loopbackOnly(h)
}

// loopbackOnly refuses, with 403 naming the Host, a request whose Host (or Origin, when one is
// sent) is not a loopback name. It guards a listener no token protects: a web page the operator
// visits can reach 127.0.0.1 through DNS rebinding, but its requests then carry the attacker's
// host name. Comparing Origin with Host is no defence: the attacker controls both. It also
// refuses a TCP peer off loopback: a Handler embedded on a process's own listener (server.New)
// keeps the loopback rule Run enforces on its listen address.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackPeer(r.RemoteAddr) {
			refuse(w, http.StatusForbidden, "", "the connection comes from "+quoteHost(r.RemoteAddr)+", not loopback: without tokens this daemon serves only this machine")
			return
		}
		if !isLoopbackHost(r.Host) {
			refuse(w, http.StatusForbidden, "Host", "Host "+quoteHost(r.Host)+" is not a loopback name: without tokens this daemon answers only requests addressed to localhost, 127.0.0.1 or [::1]")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !isLoopbackOrigin(o) {
			refuse(w, http.StatusForbidden, "Origin", "Origin "+quoteHost(o)+" is not a loopback origin: without tokens this daemon takes no request from a web page elsewhere")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackHost says whether a Host header value (host or host:port) names this machine's
// loopback: localhost or a loopback IP literal.
func isLoopbackHost(hostport string) bool {
	h := hostport
	if sh, _, err := net.SplitHostPort(hostport); err == nil {
		h = sh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// isLoopbackPeer says whether a request's RemoteAddr is on loopback; an address that is not an
// IP, with or without a port (a Unix socket's peer), is this machine's. A bare IP is what a
// real-IP middleware in front of an embedded Handler writes from X-Forwarded-For. netip reads a
// link-local peer's zone (fe80::1%eth0), which net.ParseIP does not.
func isLoopbackPeer(remote string) bool {
	h, _, err := net.SplitHostPort(remote)
	if err != nil {
		h = strings.TrimSuffix(strings.TrimPrefix(remote, "["), "]")
	}
	ip, err := netip.ParseAddr(h)
	return err != nil || ip.Unmap().IsLoopback()
}

// isLoopbackOrigin says whether an Origin header is an http(s) origin on a loopback host.
func isLoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && isLoopbackHost(u.Host)
}

// quoteHost quotes a client's host name for an error, capped like any client text.
func quoteHost(h string) string { return `"` + clienttext.Name(h) + `"` }
