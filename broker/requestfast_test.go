package broker

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzDecodePlain: whatever the one-pass decoder accepts, the strict decoder accepts too, with
// the very same request (nil and empty kept apart); what it declines is left to the strict one.
func FuzzDecodePlain(f *testing.F) {
	f.Add([]byte(`{"method":"GET","path":"/admin"}`))
	f.Add([]byte(` { "method" : "POST" , "path":"/pets","query":"a=1","headers":{"accept":"x","X-A":["1","2"],"x-b":[]},"body":"{\"n\":1}" } `))
	f.Add([]byte(`{"method":"PUT","path":"/p","body_base64":"AAE=","headers":{}}`))
	f.Add([]byte(`{"method":"GET","path":"/p","path":"/q"}`))
	f.Add([]byte(`{"method":"GET","path":"/p","headers":{"a":"1","A":"2"}}`))
	f.Add([]byte(`{"\u006dethod":"GET","path":"/\u00e9\"","body":"","body_base64":""}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !utf8.Valid(raw) || checkSurrogates(raw) != nil {
			return // refused before either decoder runs
		}
		fast, ok := decodePlain(raw)
		if !ok {
			return
		}
		strict, err := decodeStrict(raw)
		require.NoError(t, err, "the one-pass decoder accepted %q", raw)
		assert.Equal(t, strict, fast, "%q", raw)
	})
}

func TestDecodePlainDeclinesWhatTheStrictDecoderNames(t *testing.T) {
	for _, raw := range []string{
		`{"method":"GET","path":"/p","path":"/q"}`,                 // a duplicate
		`{"method":"GET","path":"/p","extra":1}`,                   // an unknown field
		`{"method":"GET","path":1}`,                                // a wrong type
		`{"method":"GET","path":"/p"} x`,                           // trailing data
		`{"method":"GET"}`,                                         // no path
		`{"method":"GET","path":"/p","body":"","body_base64":""}`,  // both bodies
		`{"method":"GET","path":"/p","headers":{"a":"1","A":"2"}}`, // a header twice
		`{"method":"GET","path":"/p","body_base64":"!"}`,           // bad base64
		"{\"method\":\"GET\",\"path\":\"/p\x01\"}",                 // a raw control character
	} {
		_, ok := decodePlain([]byte(raw))
		assert.False(t, ok, raw)
		_, err := DecodeRequest([]byte(raw))
		assert.ErrorIs(t, err, ErrInvalid, raw)
	}
}
