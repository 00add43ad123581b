package host

import (
	"context"

	"github.com/plimsoll/plimsoll/profiles"
)

// PreparePreambles evaluates p's preambles (its JavaScript client and its Python client) once
// in their templates, as p's first run would, so that run starts from the snapshot instead of
// paying for it (GitHub's Python client: +100–300 ms). A preamble that cannot be evaluated
// outside a run is left to the runs, as a run finding it so would; the error is a preamble that
// cannot be read, an engine that does not start, ctx ending first or the runtime closed.
func (rt *Runtime) PreparePreambles(ctx context.Context, p *profiles.Profile) error {
	if !rt.enter() {
		return ErrClosed
	}
	defer rt.running.Done()
	js, err := p.ReadPreamble()
	if err != nil {
		return err
	}
	if js != "" {
		k := rt.kinds[KindJS].(*jsKind)
		if err := prepareWith(k.guest, func(base *guest) (*guest, error) { return k.withPreamble(ctx, base, js) }); err != nil {
			return err
		}
	}
	py, err := p.ReadPreamblePython()
	if err != nil || py == "" || !pythonPreload {
		return err
	}
	k := rt.kinds[KindPython].(*pythonKind)
	return prepareWith(k.guest, func(base *guest) (*guest, error) {
		g, _, err := k.withPreamble(ctx, base, py)
		return g, err
	})
}

// prepareWith makes a kind's preloaded guest from its base and gives the hold straight back:
// the image stays cached for the runs.
func prepareWith(base func() (*guest, error), preload func(*guest) (*guest, error)) error {
	b, err := base()
	if err != nil {
		return err
	}
	g, err := preload(b)
	if g != nil && g.release != nil {
		g.release()
	}
	return err
}
