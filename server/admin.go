package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
)

// The admin plane: GET /admin/state, POST|DELETE /admin/profiles/{name}/force-open,
// POST /admin/reload, GET /admin/profiles. Mutations are POST or DELETE only (the mux answers
// a GET to them 405); with --admin-token-env every /admin request needs the bearer token.

// newControlPlaneFor resolves the admin token, if the config names one.
func newControlPlaneFor(cfg Config) (*controlPlane, error) {
	cp := newControlPlane()
	if cfg.AdminTokenEnv == "" {
		return cp, nil
	}
	tok := strings.TrimSpace(cfg.Getenv(cfg.AdminTokenEnv))
	if len(tok) < MinTokenLength {
		return nil, &ConfigError{Flag: "admin-token-env", Reason: fmt.Sprintf("$%s must hold a token of at least %d characters", cfg.AdminTokenEnv, MinTokenLength)}
	}
	d := sha256.Sum256([]byte(tok))
	cp.adminToken = &d
	return cp, nil
}

// adminRoutes is the admin plane, every route in one table; each requires the admin token.
func (s *Server) adminRoutes(mux *http.ServeMux) {
	for _, r := range []struct {
		pattern string
		h       http.Handler
	}{
		{"GET /admin/state", http.HandlerFunc(s.handleState)},
		{"GET /admin/profiles", http.HandlerFunc(s.handleProfileState)},
		{"POST /admin/profiles/{name}/force-open", s.mutation(s.handleForceOpen)},
		{"DELETE /admin/profiles/{name}/force-open", s.mutation(s.handleClearForced)},
		{"POST /admin/reload", s.mutation(s.handleReload)},
	} {
		mux.Handle(r.pattern, s.adminAuth(r.h))
	}
	s.limitRoutes(mux) // limits.go: the API limit's routes, also admin-token only
	s.approvalRoutes(mux)
}

// adminAuth requires the admin token, when there is one. A token is compared in constant time
// and never echoed; /livez and /readyz stay open, as on the API listener (/metrics, which names
// profiles here, does not).
func (s *Server) adminAuth(next http.Handler) http.Handler {
	if s.plane.adminToken == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		d := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		if !ok || subtle.ConstantTimeCompare(d[:], s.plane.adminToken[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="plimsoll-admin"`)
			reason := "Authorization: Bearer <admin token> is required"
			if ok {
				reason = "the bearer token is not the admin token"
			}
			refuse(w, http.StatusUnauthorized, "Authorization", reason)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mutation refuses a request a browser sent from another origin: a page the operator visits
// must not be able to force a profile open or reload through a loopback admin plane.
func (s *Server) mutation(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				refuse(w, http.StatusForbidden, "Origin", "the admin plane takes no cross-origin request")
				return
			}
		}
		h(w, r)
	})
}

func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("profile")
	st := s.state(name)
	if name != "" && len(st.Profiles) == 0 {
		refuse(w, http.StatusNotFound, "profile", "no profile "+name)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// known says whether name is a profile the admin plane may act on: one the store knows (served
// or refused) or one forced open (its file may be gone).
func (s *Server) known(name string) bool {
	if s.plane.flags.get(name) != nil {
		return true
	}
	files, _ := s.store.State()
	for _, f := range files {
		if f.Name == name {
			return true
		}
	}
	return false
}

// ForceOpenAnswer is the answer to POST and DELETE /admin/profiles/{name}/force-open.
type ForceOpenAnswer struct {
	Profile    string      `json:"profile"`
	ForcedOpen *ForcedOpen `json:"forced_open"`       // null once cleared
	Was        *ForcedOpen `json:"cleared,omitempty"` // on DELETE: the flag lifted, if any
	LiveRuns   int         `json:"live_runs"`         // the profile's runs that now read the flag
	Note       string      `json:"note"`
}

const forcedNote = "an operator action, not configuration: it survives profile reloads and is lost when the daemon restarts"

func (s *Server) handleForceOpen(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var body struct {
		Reason *string `json:"reason"`
	}
	if err := decodeAdminBody(r, &body, `{"reason": "..."}`); err != nil {
		refuseErr(w, err)
		return
	}
	if body.Reason == nil {
		refuse(w, http.StatusBadRequest, "reason", "is required: say why, it is shown on every shed call and audit line")
		return
	}
	reason := strings.TrimSpace(*body.Reason)
	if msg := checkReason(reason); msg != "" {
		refuse(w, http.StatusBadRequest, "reason", msg)
		return
	}
	if !s.known(name) {
		refuse(w, http.StatusNotFound, "name", "no profile "+name)
		return
	}
	f := s.plane.flags.set(name, reason, time.Now().UTC())
	if err := s.shareFlag(r, name, "", reason, true, f.Since); err != nil {
		fleetRefused(w, err)
		return
	}
	live := s.liveRunsOf(name)
	s.log.Warn("profile forced open by the operator: its calls are shed until cleared", "profile", name, "reason", reason, "live_runs", live)
	writeJSON(w, http.StatusOK, ForceOpenAnswer{Profile: name, ForcedOpen: &f, LiveRuns: live, Note: forcedNote})
}

func checkReason(reason string) string {
	switch {
	case reason == "":
		return "is required: say why, it is shown on every shed call and audit line"
	case len(reason) > MaxForcedReason:
		return fmt.Sprintf("is %d bytes; at most %d", len(reason), MaxForcedReason)
	case strings.IndexFunc(reason, unicode.IsControl) >= 0:
		return "has a control character"
	}
	return ""
}

func (s *Server) handleClearForced(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !s.known(name) {
		refuse(w, http.StatusNotFound, "name", "no profile "+name)
		return
	}
	was := s.plane.flags.clear(name)
	if err := s.shareFlag(r, name, "", "", false, time.Time{}); err != nil {
		fleetRefused(w, err)
		return
	}
	if was != nil {
		s.log.Warn("forced open cleared by the operator: calls go to the breaker again", "profile", name,
			"reason", was.Reason, "forced_for_ms", time.Since(was.Since).Milliseconds())
	}
	writeJSON(w, http.StatusOK, ForceOpenAnswer{Profile: name, Was: was, LiveRuns: s.liveRunsOf(name), Note: forcedNote})
}

func (s *Server) liveRunsOf(name string) int {
	n := 0
	for _, r := range s.plane.liveRuns() {
		if r.Profile == name {
			n++
		}
	}
	return n
}

// ReloadAnswer is POST /admin/reload's answer: what changed and what was refused.
type ReloadAnswer struct {
	Profiles   ProfilesReload `json:"profiles"`
	Clients    ClientsReload  `json:"clients"`
	Generation int            `json:"generation"`
	Refused    bool           `json:"refused"`         // anything refused: a profile file or the clients file
	Fleet      *FleetReload   `json:"fleet,omitempty"` // with --fleet: the other replicas' answers (fleetlink.go)
}

func (s *Server) handleReload(w http.ResponseWriter, r *http.Request) {
	prof, err := s.store.ReloadAll()
	if err != nil {
		refuse(w, http.StatusInternalServerError, "", err.Error())
		return
	}
	a := ReloadAnswer{Profiles: prof, Clients: s.reloadClients()}
	_, a.Generation = s.store.State()
	a.Refused = len(prof.Refused) > 0 || a.Clients.Refused != nil
	a.Fleet = s.reloadFleet(r.Context())
	s.log.Info("reload by the operator", "added", len(prof.Added), "changed", len(prof.Changed),
		"removed", len(prof.Removed), "refused", len(prof.Refused), "clients_refused", a.Clients.Refused != nil)
	writeJSON(w, http.StatusOK, a)
}
