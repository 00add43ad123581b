package timeline

import (
	"bufio"
	"fmt"
	"io"
)

// pageStyle is the HTML page's own CSS; the chart carries its own.
const pageStyle = `body{font:14px system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem;color:#222}h1{font-size:1.3rem}
svg{max-width:100%;height:auto}table{border-collapse:collapse;font-size:12px}
th,td{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left}td.n{text-align:right}
@media print{details{display:block}details>*{display:block}body{margin:0}}`

// WriteHTML writes the run as one standalone HTML page: the chart inline, then the breaker's
// windows and every call as tables, for reading without the picture. No script, nothing fetched.
func WriteHTML(w io.Writer, run Run) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	title := esc(Title(run))
	fmt.Fprintf(bw, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\n"+
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"/>\n"+
		"<title>%s</title><style>%s</style></head>\n<body><main>\n<h1>%s</h1>\n<figure>\n", title, pageStyle, title)
	newDrawing(bw, run).svg(false)
	fmt.Fprintf(bw, "<figcaption>%s</figcaption>\n</figure>\n", esc(Summary(run)))
	writeWindows(bw, run)
	writeCalls(bw, run)
	fmt.Fprintf(bw, "</main></body></html>\n")
	return bw.Flush()
}

func writeWindows(w *bufio.Writer, run Run) {
	wins := Windows(run.Events)
	if len(wins) == 0 {
		return
	}
	fmt.Fprintf(w, "<h2>Breaker windows</h2>\n<table><thead><tr><th>from</th><th>to</th><th>what</th></tr></thead><tbody>\n")
	for _, win := range wins {
		fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td><td>%s</td></tr>\n", seconds(win.FromMs), seconds(win.ToMs), esc(WindowLabel(win)))
	}
	fmt.Fprintf(w, "</tbody></table>\n")
}

func writeCalls(w *bufio.Writer, run Run) {
	fmt.Fprintf(w, "<details><summary>%d calls</summary>\n<table><thead><tr><th>#</th><th>t</th><th>route</th>"+
		"<th>outcome</th><th>status</th><th>upstream</th><th>latency ms</th><th>probe</th></tr></thead><tbody>\n", len(run.Trace))
	for _, e := range run.Trace {
		route := e.Route
		if route == "" {
			route = e.Method + " (no granted route)"
		}
		fmt.Fprintf(w, "<tr class=\"%s\"><td class=\"n\">%d</td><td class=\"n\">%s</td><td>%s</td><td>%s</td><td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n\">%.1f</td><td>%s</td></tr>\n",
			Class(e), e.Seq, seconds(e.TMs), esc(route), esc(meaning[Class(e)]), e.Status, e.UpstreamStatus, e.LatencyMs, esc(e.Probe))
	}
	fmt.Fprintf(w, "</tbody></table></details>\n")
}
