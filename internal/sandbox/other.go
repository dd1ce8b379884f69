//go:build !linux

package sandbox

import (
	"context"
	"runtime"

	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// IsChild is always false where there is no sandbox child.
func IsChild() bool { return false }

// ChildMain is never called where IsChild is false.
func ChildMain() int { return 2 }

// LandlockABI is 0: Landlock is Linux only.
func LandlockABI() int { return 0 }

// Process is a running sandboxed tool; there are none on this platform.
type Process struct {
	Enforcement Enforcement
	Warnings    []string
	OOMKilled   bool
}

// Start refuses: this platform has no sandbox implementation yet (macOS
// profiles come from SeatbeltProfile).
func (l *Launcher) Start(ctx context.Context, c *Command) (*Process, error) {
	return nil, ErrUnsupported
}

// Wait is never reached.
func (p *Process) Wait() error { return ErrUnsupported }

// Kill is a no-op.
func (p *Process) Kill() {}

// Pid is 0.
func (p *Process) Pid() int { return 0 }

// DeniedDropped is 0.
func (p *Process) DeniedDropped() int { return 0 }

// Denied is empty.
func (p *Process) Denied() []netproxy.Denial { return nil }

// Probe reports this platform: nothing the Linux sandbox needs.
func (l *Launcher) Probe(ctx context.Context) Capabilities {
	return Capabilities{OS: runtime.GOOS}
}

// cgroupLayout is Linux only.
type cgroupLayout struct{}

// guardWatcher is Linux only.
type guardWatcher struct{}

// kept stands for the guarded paths a Linux launcher holds between runs.
type kept struct{}

// Close has nothing to give back where no tool runs.
func (l *Launcher) Close() {}
