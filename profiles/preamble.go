package profiles

import (
	"fmt"
	"os"
)

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

// ReadPreamblePython returns the generated Python client the profile names, or "" when none.
func (p *Profile) ReadPreamblePython() (string, error) {
	if p.PreamblePython == "" {
		return "", nil
	}
	b, err := os.ReadFile(p.PreamblePython)
	if err != nil {
		return "", fmt.Errorf("profile %s: preamble_python: %w", p.Name, err)
	}
	return string(b), nil
}
