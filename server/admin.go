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

	"github.com/plimsoll/plimsoll/broker"
)

// The admin plane: every route is a row of adminRoutes. Mutations are POST or DELETE only (the
// mux answers a GET to them 405); with --admin-token-env every /admin request needs the bearer
// token.

// adminRoute is one row of the admin plane's table.
type adminRoute struct {
	pattern string // method and path, as http.ServeMux reads it
	handle  http.HandlerFunc
}

// adminRoutes is the admin plane's API, every route in one table (the operator page's files,
// which hold no data, are served beside it by operatorRoutes).
func (s *Server) adminRoutes() []adminRoute {
	return []adminRoute{
		{"GET /admin/state", s.handleState},
		{"GET /admin/profiles", s.handleProfileState},
		{"POST /admin/profiles/{name}/force-open", s.handleForceOpen},
		{"DELETE /admin/profiles/{name}/force-open", s.handleClearForced},
		{"POST /admin/profiles/{name}/routes/force-open", s.handleForceRoute}, // forceroute.go
		{"DELETE /admin/profiles/{name}/routes/force-open", s.handleForceRoute},
		{"POST /admin/reload", s.handleReload},
		{"GET /admin/limits", s.handleLimits}, // limits.go
		{"POST /admin/limits/{profile}/retune", s.handleRetune},
		{"GET /admin/approvals", s.handleApprovals}, // approvals.go
		{"POST /admin/approvals/{id}/approve", s.handleApprovalAnswer(broker.ApprovalGranted)},
		{"POST /admin/approvals/{id}/decline", s.handleApprovalAnswer(broker.ApprovalDeclined)},
		{"GET /admin/runs/{id}/timeline", s.handleAdminTimeline}, // seeing.go
		{"GET /admin/openings", s.handleOpenings},
	}
}

// mountAdmin registers the table: every route needs the admin token (when there is one), and
// every one that is not a GET is a mutation, refused from another origin. The mux answers a
// method a path does not take with 405 and the methods it does.
func (s *Server) mountAdmin(mux *http.ServeMux) {
	for _, r := range s.adminRoutes() {
		h := http.Handler(r.handle)
		if !strings.HasPrefix(r.pattern, http.MethodGet+" ") {
			h = s.mutation(r.handle)
		}
		mux.Handle(r.pattern, s.adminAuth(h))
	}
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
