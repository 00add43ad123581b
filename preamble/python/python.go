// Package python holds plimsoll's generic Python client: the api object every Python tool sees,
// and its Response. README.md in this directory documents them for tool authors.
//
// The Python guest (guests/python) mounts Source read-only at /lib/plimsoll/plimsoll.py and its
// engine gives each tool an instance of plimsoll.Api whose calls go through the plimsoll import
// (guest ABI v2, preamble/ABI.md).
package python

import _ "embed"

// Source is the client module, plimsoll.py.
//
//go:embed plimsoll.py
var Source string
