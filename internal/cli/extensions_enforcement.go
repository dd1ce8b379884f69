package cli

import (
	"context"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// newEnforcer returns what explains, in `extensions describe`, how each
// permission is enforced on this machine: the sandbox's own probe of
// Landlock, namespaces and seccomp.
func newEnforcer(s Streams) extension.Enforcer { return sandboxEnforcer{} }

type sandboxEnforcer struct{}

func (sandboxEnforcer) Enforcement(ctx context.Context, e *extension.Extension) ([]extension.EnforcementNote, error) {
	caps := (&sandbox.Launcher{}).Probe(ctx)
	return sandbox.Describe(e.Manifest.EffectivePermissions().Policy(), caps), nil
}
