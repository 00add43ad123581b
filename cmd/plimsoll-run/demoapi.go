package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// demoToken is the demo API's credential. The guest never sees it; the broker injects it.
const demoToken = "demo-token-4d1c"

// The demo API's overload, relative to the first call it receives (seed 000's chart).
const (
	demoOverloadFrom = 500 * time.Millisecond
	demoHealAt       = 2200 * time.Millisecond
)

// demoAPI is a small inventory and pet store API with a readiness route. When overload is on, it
// answers its other routes with status (503 or 429) from 0.5 s to 2.2 s after the first call.
type demoAPI struct {
	overload   bool
	status     int
	retryAfter string // "" sends no Retry-After

	mu     sync.Mutex
	start  time.Time
	items  map[int]demoItem
	nextID int
	pets   map[int]demoPet
}

type demoItem struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Stock int    `json:"stock"`
}

// demoPet is one pet of the example pet store (examples/profiles/petstore.yaml).
type demoPet struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag"`
}

func newDemoAPI(overload bool, status int, retryAfter string) *demoAPI {
	api := &demoAPI{overload: overload, status: status, retryAfter: retryAfter, items: map[int]demoItem{}}
	for i, name := range []string{"anchor", "buoy", "chart", "davit", "ensign", "fender", "gimbal", "hawser"} {
		api.items[i+1] = demoItem{ID: i + 1, Name: name, Stock: 3 + i*2}
	}
	api.nextID = len(api.items) + 1
	api.pets = map[int]demoPet{7: {7, "Mia", "cat"}, 12: {12, "Bo", "dog"}, 42: {42, "Rex", "dog"}}
	return api
}

func (a *demoAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+demoToken {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong credential"})
		return
	}
	overloaded := a.overloadedNow()
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case path == "/status" && r.Method == http.MethodGet:
		a.readiness(w, overloaded)
	case overloaded:
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		writeJSON(w, a.status, map[string]string{"error": "overloaded"})
	case path == "/items" && r.Method == http.MethodGet:
		a.list(w, r)
	case path == "/items" && r.Method == http.MethodPost:
		a.create(w, r)
	case strings.HasPrefix(path, "/items/") && r.Method == http.MethodGet:
		a.get(w, strings.TrimPrefix(path, "/items/"))
	case path == "/pets" && r.Method == http.MethodGet:
		a.listPets(w, r.URL.Query().Get("tag"))
	case strings.HasPrefix(path, "/pets/") && r.Method == http.MethodGet:
		a.getPet(w, strings.TrimPrefix(path, "/pets/"))
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such route"})
	}
}

// overloadedNow starts the demo's clock at the first call, so guest start-up time doesn't shift
// the chart.
func (a *demoAPI) overloadedNow() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.start.IsZero() {
		a.start = time.Now()
	}
	since := time.Since(a.start)
	return a.overload && since >= demoOverloadFrom && since < demoHealAt
}

// readiness is the readiness route: 2xx only when the API can take traffic, with its headroom.
func (a *demoAPI) readiness(w http.ResponseWriter, overloaded bool) {
	if overloaded {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "headroom": 0})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ready": true, "headroom": 100})
}

func (a *demoAPI) list(w http.ResponseWriter, r *http.Request) {
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit <= 0 {
		limit = 100
	}
	a.mu.Lock()
	ids := make([]int, 0, len(a.items))
	for id := 1; id < a.nextID && len(ids) < limit; id++ {
		if _, ok := a.items[id]; ok {
			ids = append(ids, id)
		}
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"items": ids})
}

func (a *demoAPI) get(w http.ResponseWriter, idText string) {
	id, _ := strconv.Atoi(idText)
	a.mu.Lock()
	item, ok := a.items[id]
	a.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no item %q", idText)})
		return
	}
	writeJSON(w, http.StatusOK, item)
}

func (a *demoAPI) listPets(w http.ResponseWriter, tag string) {
	pets := []demoPet{}
	for _, id := range slices.Sorted(maps.Keys(a.pets)) {
		if p := a.pets[id]; tag == "" || p.Tag == tag {
			pets = append(pets, p)
		}
	}
	writeJSON(w, http.StatusOK, pets)
}

func (a *demoAPI) getPet(w http.ResponseWriter, idText string) {
	id, _ := strconv.Atoi(idText)
	pet, ok := a.pets[id]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no pet %q", idText)})
		return
	}
	writeJSON(w, http.StatusOK, pet)
}

func (a *demoAPI) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name  string `json:"name"`
		Stock int    `json:"stock"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil || in.Name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"name\": string, \"stock\": number}"})
		return
	}
	a.mu.Lock()
	item := demoItem{ID: a.nextID, Name: in.Name, Stock: in.Stock}
	a.items[item.ID] = item
	a.nextID++
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, item)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
