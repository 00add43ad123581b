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

// ReadPreamble returns the generated client library the profile names, or "" when none.
func (p *Profile) ReadPreamble() (string, error) {
	if p.Preamble == "" {
		return "", nil
	}
	b, err := os.ReadFile(p.Preamble)
	if err != nil {
		return "", fmt.Errorf("profile %s: preamble: %w", p.Name, err)
	}
	return string(b), nil
}

// Match returns the first granted route that method and path fall under. A route matches only
// paths with one '/' per segment of its pattern ("/" counts as one), so routes of another
// length are skipped without being walked.
func (p *Profile) Match(method, path string) (*Route, bool) {
	slashes := strings.Count(path, "/")
	for i := range p.Routes {
		r := &p.Routes[i]
		if max(len(r.segments), 1) == slashes && r.Match(method, path) {
			return r, true
		}
	}
	return nil, false
}
