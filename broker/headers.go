package broker

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/plimsoll/plimsoll/profiles"
)

// checkHeaders refuses header names that are not canonical tokens or that the broker owns, and
// values that are too long or hold control characters. Which names a tool may send at all is
// the grant's to say (checkAllowed).
func checkHeaders(h http.Header, credentialHeader string) error {
	for name, vals := range h {
		if !profiles.IsToken(name) {
			return invalidf(fmt.Sprintf("header name %s is not a valid HTTP token", quote(name)))
		}
		// DecodeRequest canonicalises names; a Request built in Go may not have. The transport
		// sends a key as spelled, so "authorization" would pass the checks below and go out
		// next to the broker's own headers.
		if canon := http.CanonicalHeaderKey(name); canon != name {
			return invalidf(fmt.Sprintf("header name %s is not in canonical form (%s)", quote(name), canon))
		}
		if why, reserved := profiles.ReservedHeader(name, credentialHeader); reserved {
			return invalidf(fmt.Sprintf("header %s may not be set by a tool: %s", name, why))
		}
		for _, v := range vals {
			if len(v) > maxHeaderBytes {
				return invalidf(fmt.Sprintf("header %s value is %d bytes, over the %d-byte cap", name, len(v), maxHeaderBytes))
			}
			if hasControl(v) {
				return invalidf(fmt.Sprintf("header %s value contains a control character (CR, LF, NUL or similar)", name))
			}
		}
	}
	return nil
}

// allowedHeaders is the run's request-header allow-list: the defaults and the profile's own.
func allowedHeaders(p *profiles.Profile) map[string]bool {
	m := make(map[string]bool, len(profiles.DefaultRequestHeaders)+len(p.RequestHeaders))
	for _, n := range profiles.DefaultRequestHeaders {
		m[n] = true
	}
	for _, n := range p.RequestHeaders {
		m[http.CanonicalHeaderKey(n)] = true
	}
	return m
}

// checkAllowed refuses a header the run's allow-list does not hold. Names are canonical here
// (Validate saw to it), and matched exactly: X_Request_Id is not X-Request-Id.
func (r *Broker) checkAllowed(h http.Header) error {
	for name := range h {
		if !r.allowed[name] {
			return invalidf(fmt.Sprintf("header %s is not one a tool may send: allowed are %s", name, r.allowedList()))
		}
	}
	return nil
}

// allowedList names the allowed headers for a refusal's reason, shortened past a dozen or so.
func (r *Broker) allowedList() string {
	names := make([]string, 0, len(r.allowed))
	for n := range r.allowed {
		names = append(names, n)
	}
	slices.Sort(names)
	const show = 16
	if len(names) > show {
		return strings.Join(names[:show], ", ") + fmt.Sprintf(" and %d more (the profile's request_headers)", len(names)-show)
	}
	return strings.Join(names, ", ") + " (add others to the profile's request_headers)"
}

// hasControl reports a control character other than tab. Bytes of multi-byte UTF-8 sequences
// are all ≥ 0x80, so a byte scan finds exactly the control runes.
func hasControl(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}
