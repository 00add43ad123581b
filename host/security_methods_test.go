package host_test

import (
	"testing"

	"github.com/plimsoll/plimsoll/broker"
)

// Methods: an upper-case token from a fixed list, matched exactly against the grant.
var methodCases = []secCase{
	{class: methods, name: "lower case through the preamble", js: `return show(await api.call("get", "/pets/1"));`, want: `200 forwarded ok GET /v1/pets/1`, calls: fwd1},
	{class: methods, name: "lower case", js: rawJS(`{"method":"get","path":"/pets/1"}`), want: `400 invalid | method "get" is not one of`, calls: invalid},
	{class: methods, name: "trailing space", js: rawJS(`{"method":"GET ","path":"/pets/1"}`), want: `400 invalid | method "GET " is not one of`, calls: invalid},
	{class: methods, name: "empty", js: rawJS(`{"method":"","path":"/pets/1"}`), want: `400 invalid | method "" is not one of`, calls: invalid},
	{class: methods, name: "CONNECT", js: rawJS(`{"method":"CONNECT","path":"/pets/1"}`), want: `400 invalid | method "CONNECT" is not one of`, calls: invalid},
	{class: methods, name: "TRACE", js: rawJS(`{"method":"TRACE","path":"/pets/1"}`), want: `400 invalid | method "TRACE" is not one of`, calls: invalid},
	{class: methods, name: "PROPFIND", js: rawJS(`{"method":"PROPFIND","path":"/pets/1"}`), want: `400 invalid | method "PROPFIND" is not one of`, calls: invalid},
	{class: methods, name: "CR LF", js: rawJS(`{"method":"GET /admin HTTP/1.1\r\nX-A: 1\r\n","path":"/pets/1"}`), want: `400 invalid | method "GET /admin HTTP/1.1\r\nX-A: 1\r\n" is not one of`, calls: invalid},
	{class: methods, name: "NUL", js: rawJS(`{"method":"GET\u0000","path":"/pets/1"}`), want: `400 invalid | method "GET\x00" is not one of`, calls: invalid},
	{class: methods, name: "CONNECT through the preamble", js: `return show(await api.call("CONNECT", "evil.test:443"));`, status: broker.StatusError, err: `unsupported method "CONNECT"`, calls: none},
	{class: methods, name: "a valid method the grant lacks", js: rawJS(`{"method":"DELETE","path":"/pets/1"}`), want: `403 denied | no granted route matches DELETE /pets/1`, calls: denied},
	{class: methods, name: "HEAD on a GET route", js: rawJS(`{"method":"HEAD","path":"/pets/1"}`), want: `403 denied | no granted route matches HEAD /pets/1`, calls: denied},
}

func TestSecurityMethods(t *testing.T) { runSecCases(t, methodCases) }
