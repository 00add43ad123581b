package kneeapi_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/kneeapi"
)

// Three calls are each recorded with the in-flight they found (1 to 3, by how they overlap), each
// is answered, and none is left in flight.
func TestKneeRecordsInFlight(t *testing.T) {
	api := kneeapi.New(2, 10*time.Millisecond)
	srv := httptest.NewServer(api)
	defer srv.Close()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/x")
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("%v %v", err, resp)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	st := api.Window(0, api.Since()+time.Second)
	if st.Calls != 3 || st.InFlightMax < 1 || st.InFlightMax > 3 {
		t.Fatalf("%+v", st)
	}
	if api.InFlight() != 0 {
		t.Fatalf("%d still in flight", api.InFlight())
	}
}
