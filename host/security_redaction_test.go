package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/host"
)

// TestSecurityCredentialInAHeaderNameAnyCase: the transport canonicalises header names, so a
// credential echoed in a name comes back in another case. It is redacted all the same.
func TestSecurityCredentialInAHeaderNameAnyCase(t *testing.T) {
	const mixed = "sk-Live-Mixed7Q"
	rt, err := host.New(context.Background(), host.Options{CacheDir: secCacheDir(), Getenv: func(string) string { return mixed }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	up := newRecorder(t)
	defer up.Close()
	p := secProfile(t, up.URL(), nil)

	res := runJS(context.Background(), rt, p, `return JSON.stringify(await api.get("/fault/echo"));`)

	require.NoError(t, res.Err)
	require.Equal(t, []string{"Token " + mixed}, up.requests()[0].Header.Values(secCredHeader))
	trace, err := json.Marshal(res.Trace)
	require.NoError(t, err)
	for where, text := range map[string]string{"output": string(res.Output), "log": string(res.Log), "trace": string(trace)} {
		require.NotContains(t, strings.ToLower(text), strings.ToLower(mixed), where)
	}
	require.Contains(t, string(res.Output), `x-[redacted]`)
}
