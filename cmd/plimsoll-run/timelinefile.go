package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/plimsoll/plimsoll/host"
	chart "github.com/plimsoll/plimsoll/timeline"
)

// timelineWriter picks the drawing for --timeline FILE by its extension: .svg or .html.
func timelineWriter(path string) (func(io.Writer, chart.Run) error, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		return chart.WriteSVG, nil
	case ".html", ".htm":
		return chart.WriteHTML, nil
	}
	return nil, fmt.Errorf("--timeline %s: want a .svg or .html file", path)
}

// writeTimelineFile draws the run's chart from its trace and breaker events into path.
func writeTimelineFile(path string, res host.Result) error {
	write, err := timelineWriter(path)
	if err != nil {
		return err
	}
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh, chart.Run{Trace: res.Trace, Events: res.BreakerEvents, Audit: res.Audit}); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
