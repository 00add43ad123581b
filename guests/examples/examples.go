// Package examples holds the JavaScript and Python tools a new user can run against the demo API.
package examples

import "embed"

// FS holds every example tool, by file name.
//
//go:embed *.js *.py
var FS embed.FS
