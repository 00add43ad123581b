// Package js holds plimsoll's generic JavaScript preamble: the api, sleep and console globals
// that every JavaScript tool sees. README.md in this directory documents them for tool authors.
//
// The preamble talks to the JavaScript guest runtime (guests/quickjs) through a native
// bridge object, __plimsoll, that the runtime installs before evaluating Source and that Source
// removes from the global object.
package js

import _ "embed"

// Source is the generic preamble, evaluated once per guest instance before any per-API preamble
// and before the tool.
//
//go:embed preamble.js
var Source string
