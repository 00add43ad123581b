package profiles_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/profiles"
)

const secretValue = "s3cr3t-Value-42"

func loadWithCredential(t *testing.T, credential string) *profiles.Profile {
	t.Helper()
	dir := t.TempDir()
	path := write(t, dir, "svc.yaml", "base_url: http://127.0.0.1/\nroutes: [GET /a]\ncredential:\n"+credential)
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	return p
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestResolveSecretFromEnv(t *testing.T) {
	p := loadWithCredential(t, "  env: SVC_TOKEN\n  scheme: Bearer\n")
	s, err := p.ResolveSecret(env(map[string]string{"SVC_TOKEN": secretValue}))
	require.NoError(t, err)
	assert.Equal(t, secretValue, s.Value())
	assert.Equal(t, "Bearer "+secretValue, p.HeaderValue(s))

	_, err = p.ResolveSecret(env(nil))
	require.ErrorIs(t, err, profiles.ErrNoSecret)
	assert.Contains(t, err.Error(), "SVC_TOKEN")
	assert.Contains(t, err.Error(), "svc")

	for name, v := range map[string]string{
		"LF": secretValue + "\ninjected: 1", "CR": secretValue + "\r", "NUL": secretValue + "\x00", "CRLF": "\r\n" + secretValue,
	} {
		_, err := p.ResolveSecret(env(map[string]string{"SVC_TOKEN": v}))
		require.ErrorIs(t, err, profiles.ErrNoSecret, name)
		assert.NotContains(t, err.Error(), secretValue, name)
		assert.Contains(t, err.Error(), "line break or NUL", name)
	}
}

func TestResolveSecretFromFile(t *testing.T) {
	p := loadWithCredential(t, "  file: secrets/token\n")
	dir := filepath.Dir(p.File)

	_, err := p.ResolveSecret(env(nil))
	require.ErrorIs(t, err, profiles.ErrNoSecret, "missing file")
	assert.Contains(t, err.Error(), "no such file")

	write(t, dir, "secrets/token", "")
	_, err = p.ResolveSecret(env(nil))
	require.ErrorIs(t, err, profiles.ErrNoSecret, "empty file")
	assert.Contains(t, err.Error(), "is empty")

	write(t, dir, "secrets/token", "\r\n\n")
	_, err = p.ResolveSecret(env(nil))
	require.ErrorIs(t, err, profiles.ErrNoSecret, "only line breaks")

	write(t, dir, "secrets/token", secretValue+"\r\n")
	s, err := p.ResolveSecret(env(nil))
	require.NoError(t, err)
	assert.Equal(t, secretValue, s.Value(), "the trailing line break is trimmed")
	assert.Equal(t, secretValue, p.HeaderValue(s), "no scheme: the secret alone")

	write(t, dir, "secrets/token", secretValue+"\nsecond-line\n")
	_, err = p.ResolveSecret(env(nil))
	require.ErrorIs(t, err, profiles.ErrNoSecret, "an inner line break")
	assert.NotContains(t, err.Error(), secretValue)
	assert.NotContains(t, err.Error(), "second-line")
}

func TestResolveSecretWithoutCredential(t *testing.T) {
	dir := t.TempDir()
	p, err := profiles.LoadFile(write(t, dir, "open.yaml", "base_url: http://127.0.0.1/\nroutes: [GET /a]\n"))
	require.NoError(t, err)
	s, err := p.ResolveSecret(env(nil))
	require.NoError(t, err)
	assert.Empty(t, s.Value())
}

// TestSecretNeverPrints formats a secret every way fmt can, alone and inside structs.
func TestSecretNeverPrints(t *testing.T) {
	s := profiles.NewSecret(secretValue)
	type holder struct {
		hidden profiles.Secret
		Shown  profiles.Secret
	}
	values := []any{s, &s, holder{s, s}, &holder{s, s}, []profiles.Secret{s}, map[string]profiles.Secret{"k": s}}
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%t", "%x", "%X", "%p", "%T", "%08.3f"} {
			out := fmt.Sprintf(verb, v)
			assert.NotContains(t, out, secretValue, "%s of %T", verb, v)
			assert.NotContains(t, strings.ToLower(out), strings.ToLower(fmt.Sprintf("%x", secretValue)), "%s of %T", verb, v)
		}
	}
	assert.Equal(t, "[redacted]", fmt.Sprint(s))
	assert.Equal(t, "[redacted]", fmt.Sprintf("%v", s))
	assert.NotContains(t, fmt.Sprintf("%#v", s), secretValue)
	assert.Equal(t, secretValue, s.Value())
	assert.Empty(t, profiles.Secret{}.Value(), "the zero Secret is no credential")
}
