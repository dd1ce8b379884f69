package cli

import (
	"context"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// sandboxEnforcer explains, in `extensions describe`, how each permission
// is enforced on this machine: the sandbox's own probe of Landlock,
// namespaces and seccomp.
type sandboxEnforcer struct{}

func (sandboxEnforcer) Enforcement(ctx context.Context, e *extension.Extension) ([]extension.EnforcementNote, error) {
	caps := (&sandbox.Launcher{}).Probe(ctx)
	return withFlags(sandbox.Describe(e.Manifest.Terms().Policy, caps)), nil
}

// withFlags adds to the notes the flags of `gemkit extensions run` that
// change them: what --allow-unconfined lets run, what --memory bounds.
func withFlags(notes []extension.EnforcementNote) []extension.EnforcementNote {
	for i, n := range notes {
		switch {
		case n.Refuses:
			notes[i].How += " (--allow-unconfined)"
		case n.Permission == "memory":
			notes[i].How += "; --memory sets the memory bound"
		}
	}
	return notes
}
