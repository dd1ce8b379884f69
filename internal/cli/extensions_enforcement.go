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
	return sandbox.Describe(e.Manifest.EffectivePermissions().Policy(), caps), nil
}
