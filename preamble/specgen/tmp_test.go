package specgen

import (
	"testing"
	"time"
)

func TestTmpSearchCost(t *testing.T) {
	s := realParsed(t, "github")
	pre, _ := s.Preamble()
	t0 := time.Now()
	js := loadPreamble(t, pre)
	t1 := time.Now()
	js.eval(`api.search("create an issue").results.length`)
	t2 := time.Now()
	js.eval(`api.search("list pull requests").results.length`)
	t3 := time.Now()
	js.eval(`typeof api.issuesCreate`)
	t4 := time.Now()
	t.Logf("load %v first search %v second %v fn %v; preamble %d bytes", t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), len(pre))
}
