package profiles

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrNoSecret is returned (wrapped) when a credential cannot be resolved at run start.
var ErrNoSecret = errors.New("credential not available")

// ResolveSecret reads the credential named by the profile, at run start. getenv is usually
// os.Getenv. Errors name the source, never the value.
func (p *Profile) ResolveSecret(getenv func(string) string) (Secret, error) {
	c := p.Credential
	var v string
	switch {
	case c.Env != "":
		v = getenv(c.Env)
		if v == "" {
			return Secret{}, fmt.Errorf("%w: profile %s: environment variable %s is not set or empty", ErrNoSecret, p.Name, c.Env)
		}
	case c.File != "":
		b, err := os.ReadFile(c.File)
		if err != nil {
			return Secret{}, fmt.Errorf("%w: profile %s: credential file: %v", ErrNoSecret, p.Name, errors.Unwrap(err))
		}
		v = strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return Secret{}, fmt.Errorf("%w: profile %s: credential file %s is empty", ErrNoSecret, p.Name, c.File)
		}
	default:
		return Secret{}, nil // the profile sends no credential
	}
	// A line break would let the secret smuggle extra headers; the value is not echoed.
	if strings.ContainsAny(v, "\r\n\x00") {
		return Secret{}, fmt.Errorf("%w: profile %s: credential contains a line break or NUL", ErrNoSecret, p.Name)
	}
	return NewSecret(v), nil
}

// HeaderValue is the credential header's value: "Scheme secret", or the secret alone.
func (p *Profile) HeaderValue(s Secret) string {
	if p.Credential.Scheme == "" {
		return s.Value()
	}
	return p.Credential.Scheme + " " + s.Value()
}
