package extswitch

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/pkgrun"
	"github.com/gemkit/gemkit/internal/runnerline"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// Ecosystem is one registry's packages as a package runner fetches them
// (runnerline.Invocation.Ecosystem): the switch pins a server's package
// through it, once, at an exact version, in a tree of its own, and
// gemkit mcp runs the server from that tree. npm's is the one today
// (NPM); PyPI's (uvx, pipx run) would be another, its lines refused
// until then (runnerline.PyPIError).
type Ecosystem interface {
	// Install installs req's package in a tree of its own.
	Install(ctx context.Context, req PinRequest) (Installed, error)
	// Unchanged reports whether the registry would install for req now
	// what the tree pinned as was holds, asking it without installing.
	Unchanged(ctx context.Context, req PinRequest, was extension.Pin) (bool, error)
	// Changes says what changed from the tree pinned as was to now's;
	// ok is false when it cannot be told.
	Changes(was, now extension.Pin) (words string, ok bool)
}

// PinRequest is one server's package to pin.
type PinRequest struct {
	// Extension and Server name the server the tree is for.
	Extension, Server string
	Invocation        runnerline.Invocation
	// Scripts runs the packages' install scripts: the person allowed it.
	Scripts bool
	// Update is the command that pins it again, for the words of a
	// warning.
	Update string
}

// Installed is what Install installed: the pin, but for what the switch
// adds itself (the request, the runner, the tree's digest), the words of
// the person's settings it reached (none of which the server gets), and
// a warning ("" when none).
type Installed struct {
	Pin     extension.Pin
	Network []string
	Warning string
}

// NPM is npm's registry as an Ecosystem (internal/pkgrun), for the
// extensions of st and the person whose home is home: installs run in
// gemkit's sandbox, told on progress (terminal: one line rewritten).
func NPM(st *extension.Store, home string, progress io.Writer, terminal bool) Ecosystem {
	return &npm{st: st, home: home, progress: progress, terminal: terminal}
}

type npm struct {
	st       *extension.Store
	home     string
	progress io.Writer
	terminal bool
	once     sync.Once
	in       *pkgrun.Installer
}

func (n *npm) installer() *pkgrun.Installer {
	n.once.Do(func() {
		n.in = &pkgrun.Installer{
			Launcher:  &sandbox.Launcher{},
			Untrusted: permission.Untrusted(n.st.Workspace(), n.home, nil),
			Root:      pkgrun.Root(n.st.Home()),
			Progress:  n.progress,
			Terminal:  n.terminal,
		}
	})
	return n.in
}

func request(r PinRequest) pkgrun.Request {
	return pkgrun.Request{Extension: r.Extension, Server: r.Server, Invocation: r.Invocation, Scripts: r.Scripts}
}

func (n *npm) Install(ctx context.Context, r PinRequest) (Installed, error) {
	t, err := n.installer().Install(ctx, request(r))
	if err != nil {
		return Installed{}, err
	}
	p := extension.Pin{Package: t.Package, Version: t.Version, Newest: t.Newest, Choice: t.Engine.Choice(),
		Integrity: t.Integrity, Tree: t.Dir, Program: t.Program, Lock: t.Lock, Registry: t.Registry,
		Packages: t.Packages, Files: t.Files, Bytes: t.Bytes, ScriptsRun: t.ScriptsRun, ScriptsNotRun: t.ScriptsNotRun}
	return Installed{Pin: p, Network: t.Network, Warning: t.Engine.Warning(t.Package, t.Version, r.Update)}, nil
}

// Unchanged resolves what npm would install now from the packages'
// metadata (pkgrun.Installer.Resolve), fetching no package, and
// compares it with the pinned tree.
func (n *npm) Unchanged(ctx context.Context, r PinRequest, was extension.Pin) (bool, error) {
	res, err := n.installer().Resolve(ctx, request(r))
	if err != nil {
		return false, err
	}
	same, err := res.Same(was.Tree)
	return err == nil && same && res.Registry == was.Registry, nil
}

func (n *npm) Changes(was, now extension.Pin) (string, bool) {
	c, err := pkgrun.Diff(was.Tree, now.Tree)
	if err != nil {
		return "", false
	}
	return c.Words(6), true
}

// pinsFrom reports whether the switch pins packages of ecosystem.
func (s *Switch) pinsFrom(ecosystem string) (Ecosystem, bool) {
	e, ok := s.Ecosystems[ecosystem]
	return e, ok && e != nil
}

// noEcosystem is why a package-runner line whose registry the switch
// pins nothing of is never started by gemkit mcp.
func noEcosystem(inv runnerline.Invocation) error {
	if inv.Ecosystem == runnerline.PyPI {
		return &runnerline.PyPIError{Invocation: inv}
	}
	return fmt.Errorf("%s fetches %s from %s at each start, whose packages this gemkit does not pin, so it does not start this server", inv.Runner, inv.Request(), inv.Ecosystem)
}
