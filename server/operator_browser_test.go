package server_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/server"
)

// chromiumPath finds Debian's chromium (installed by .ci/run). Without it the browser tests skip,
// except under CI, where they must run.
func chromiumPath(t testing.TB) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH: .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// browser starts a headless Chromium for one test.
func browser(t testing.TB) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// A failure bound for the whole test, not a timing assertion.
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}

// textOf reads an element's text.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	require.NoError(t, err, sel)
	return s
}

// TestOperatorPageInBrowser drives the operator page in headless Chromium against a real daemon:
// a run appears, its breaker opens when the API does, the operator forces the profile open from
// the page (with the token, from the page's own origin) and the run's calls are shed, then clears
// it. With PLIMSOLL_SCREENSHOT=FILE.png it writes the README's screenshot.
func TestOperatorPageInBrowser(t *testing.T) {
	ctx := browser(t)
	up := newSwitchable(t, "2")
	d := start(t, up.upstream, withAdminToken)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(d.admin+"/admin/"),
		chromedp.WaitVisible(chromedp.CSS("#status.error")), // no token yet: the API says 401
		chromedp.SendKeys(chromedp.CSS("#token"), operatorToken),
		chromedp.Click(chromedp.CSS("#token-form button")),
		chromedp.WaitVisible(chromedp.CSS(`section.profile[data-profile="petstore"]`)),
	))
	assert.Contains(t, textOf(t, ctx, "#status"), "updated")
	alone, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#fleet").hidden`))
	require.NoError(t, err)
	assert.True(t, alone, "a daemon without --fleet shows no fleet section")

	done := d.runAsync(tokenB, run("petstore", loopTool))
	row := `section.profile[data-profile="petstore"] tr.run`
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(row+".breaker-closed"))), "the run appears")

	up.mode.Store(1) // the API is overloaded: 503, Retry-After 2
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(row+".breaker-open")),
		chromedp.WaitVisible(chromedp.CSS("#openings tbody tr.w503")),
	), "the breaker opens, and the opening is listed")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(row)),
		chromedp.WaitVisible(chromedp.CSS("#run-view")),
		chromedp.Poll[chromedp.Void](`document.querySelector("#run-chart").naturalWidth > 0`),
	), "the run's chart is drawn")

	up.mode.Store(0) // the API heals: the window runs out and calls are forwarded again
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(row+".breaker-closed"))), "the breaker closes")

	// From here every shed call is the operator's doing: the breaker is closed, the API healthy.
	form := `form.force[data-profile="petstore"]`
	shedBefore := atoi(t, textOf(t, ctx, row+" td.shed"))
	// A redraw in the middle of typing keeps the field's focus: the rest of the reason is not lost.
	reasonField := form + ` input[name="reason"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(reasonField), "incident 42: "),
		chromedp.Poll[chromedp.Void](`window.redrawsSeen = document.body.dataset.at, true`),
		chromedp.Poll[chromedp.Void](`document.body.dataset.at !== window.redrawsSeen`),
	), "a redraw while typing")
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, reasonField)))
	require.NoError(t, err)
	assert.True(t, focused, "the reason field keeps its focus across a redraw")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.KeyEvent("upstream melting"), // to the focused element, as a person's next keys go
		chromedp.Click(chromedp.CSS(form+" button.force-open")),
		chromedp.WaitVisible(chromedp.CSS(`section.profile.forced[data-profile="petstore"]`)),
	), "force-open from the page")
	assert.Contains(t, textOf(t, ctx, `section.profile[data-profile="petstore"] .badge.forced`), "incident 42: upstream melting")
	require.NoError(t, chromedp.Do(ctx, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`Number(document.querySelector(%q).textContent) > %d`, row+" td.shed", shedBefore+10))), "calls are shed")

	if path := os.Getenv("PLIMSOLL_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, png, 0o644))
	}

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(form+" button.clear")),
		chromedp.WaitNotPresent(chromedp.CSS(`section.profile.forced[data-profile="petstore"]`)),
	), "clear from the page")
	up.mode.Store(2) // the tool stops at the next forwarded call
	a := <-done
	require.Equal(t, "ok", a.Status, a.Error)
	assert.Equal(t, "incident 42: upstream melting", a.Audit["forced_open"])
	forced := 0
	for _, e := range a.Trace {
		if strings.Contains(string(e), `"reason":"forced open by the operator: incident 42: upstream melting"`) {
			forced++
		}
	}
	assert.Greater(t, forced, 10, "calls shed as forced open while the flag was up")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	require.NoError(t, err, "%q", s)
	return n
}

// TestOperatorPageFigures is the figure "operator page with 200 live runs", a bounded load
// program run on demand (PLIMSOLL_FIGURES=1): 200 real runs held at a loopback API, the page
// loaded afresh in headless Chromium 5 times. first paint is from navigation start to the first
// drawing of the daemon's state (the page's own performance clock); update is from an operator
// action over the admin API to the page showing it (the 500 ms poll plus the redraw). It logs
// the medians; it asserts only that the page shows what it should.
func TestOperatorPageFigures(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("a figure, not a test: PLIMSOLL_FIGURES=1 go test -run TestOperatorPageFigures -v ./server/")
	}
	const runs, rounds = 200, 5
	ctx := browser(t)
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.MaxRuns, c.Queue = runs, runs })
	for range runs {
		d.runAsync(tokenB, run("petstore", blockTool))
	}
	up.waitArrived(t, runs)

	var paints, updates []float64
	for i := range rounds {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(d.admin+"/admin/"),
			chromedp.Poll[chromedp.Void](`window.plimsollFirstPaint !== undefined`)))
		paint, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.plimsollFirstPaint`))
		require.NoError(t, err)
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("tr.run").length`))
		require.NoError(t, err)
		require.Equal(t, runs, rows, "every live run is on the page")
		paints = append(paints, paint)
		if os.Getenv("PLIMSOLL_FIGURES") == "debug" {
			res, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(performance.getEntries().map(e => [e.name, Math.round(e.startTime), Math.round(e.duration)]))`))
			t.Log(res)
		}

		reason := fmt.Sprintf("figure round %d", i)
		t0 := time.Now()
		resp, _ := d.adm("POST", "/admin/profiles/petstore/force-open", "", map[string]string{"reason": reason})
		require.Equal(t, 200, resp.StatusCode)
		require.NoError(t, chromedp.Do(ctx, chromedp.Poll[chromedp.Void](
			fmt.Sprintf(`(document.querySelector("section.profile.forced .badge.forced") || {}).textContent === %q`, "forced open: "+reason),
			chromedp.WithPollingInterval(2*time.Millisecond))))
		updates = append(updates, float64(time.Since(t0).Microseconds())/1000)
		d.adm("DELETE", "/admin/profiles/petstore/force-open", "", nil)
	}
	up.open()
	t.Logf("operator page, %d live runs: first paint median %.0f ms %v; update median %.0f ms %v",
		runs, median(paints), paints, median(updates), updates)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
