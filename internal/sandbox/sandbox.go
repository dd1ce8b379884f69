// Package sandbox turns an extension's declared permissions into kernel
// enforcement for one tool process.
//
// On Linux a tool is started through a re-executed copy of the gemkit
// binary (the "child"). The parent creates the child in fresh user, network,
// PID and IPC namespaces where the kernel allows it; the child then, before
// it execs the tool, brings up loopback and hands a listening socket back to
// the parent when the tool may reach allowed hosts through the parent's
// allowlisting proxy, drops every capability, lowers resource limits,
// applies a Landlock ruleset built from the filesystem scopes and installs a
// seccomp filter. What the kernel cannot enforce is refused unless the
// caller explicitly allows running with less confinement, and even then it
// is reported, never silently skipped.
//
// On macOS the same permissions become a sandbox-exec (SBPL) profile; see
// SeatbeltProfile.
package sandbox

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
)

// Policy is everything one sandboxed run may reach. All paths must be
// absolute; Check cleans and validates them.
type Policy struct {
	// Read and Write are the filesystem scopes from the manifest. An empty
	// scope is permission.AccessNone.
	Read, Write permission.Access
	// AllowedHosts is the manifest's network.allowedHosts. Empty means no
	// network at all.
	AllowedHosts []string
	// Upstream, when set, says through which proxy of the person's the
	// sandbox's proxy reaches an allowed host (netproxy.Proxy.Upstream),
	// nil for none: an install's registry reachable only through the
	// person's proxy (internal/pkgrun). The tool never learns it.
	Upstream func(host string, port int) *url.URL

	// Workspace is the directory the user runs the tool from.
	Workspace string
	// Home is the user's home directory.
	Home string
	// ExtensionDir is the extension's own folder: always readable, never
	// writable.
	ExtensionDir string
	// TempDir is the private temporary directory of this run: readable and
	// writable.
	TempDir string
	// RuntimePaths are the runtime's own installation (interpreter prefix),
	// readable and executable wherever they live.
	RuntimePaths []string
	// Caches are private folders that outlive the run, readable and
	// writable: a long-lived server's own cache (gopls's build cache,
	// its index). Each must exist, and none may hold or lie in a
	// Protected folder or the extension folder.
	Caches []string
	// Protected are folders no tool may read or write whatever its scope:
	// gemkit's and Gemini CLI's configuration (~/.gemini), which holds
	// credentials, the consent records and every other extension with its
	// settings. A tool's own extension folder inside one stays readable.
	Protected []string
	// ReadOnly are folders no tool may write whatever its scope: every
	// installed extension's folder and every linked extension's source,
	// whose code other tools run with their own permissions.
	ReadOnly []string
	// Handed are files of the person's given to the tool on purpose (an
	// MCP server's credentials by kind), each Source shown read-only at
	// Target and nowhere else. A Target lies in one of Caches (a
	// server's HOME), in a folder that must exist there: the sandbox
	// covers that folder with a small tmpfs of the run's own, so that
	// the file is all it holds at first and nothing is left in the
	// cache. Only with the tool's own mount namespace: elsewhere the
	// run is refused.
	Handed []Handed
	// Replaced are folders shown read-only at their Target in place of
	// what lies there, each with what its Source holds: an extension's
	// folder, shown as gemkit's own copy of it as the person agreed to
	// it (extension.Store.AgreedCopy). Only with the tool's own mount
	// namespace: elsewhere the run is refused (ErrNoMountNamespace).
	Replaced []Handed

	// Guarded are paths inside the write scope that stay read-only
	// (permission.ProtectedPaths: .git, hooks, .env, agents' and editors'
	// files...). An absent one is given a placeholder for the run, so
	// the tool cannot create it either; for a server (ReportRefusals)
	// the folder that holds it is sealed instead where the kernel
	// allows it (Launcher.Start, sealedRules), and nothing is made.
	Guarded []permission.Guarded
	// OwnServer reports whether a loopback port is one of gemkit's own
	// servers (permission.OwnServerPort): the proxy refuses it even when
	// "localhost" is allowed. It is asked per connection, so a server
	// started during the run counts. nil: none.
	OwnServer func(port int) bool
	// ReportRefusals gives the tool the proxy even when no host is
	// allowed (it then refuses every connection), the sandbox's
	// resolver (ServeResolver) and, where seccomp has user
	// notifications, the watch of its connect calls (connect_linux.go):
	// every connection the tool tries through the proxy, every host
	// name it looks up and every address it connects to without the
	// proxy is refused unless allowed, and reported (Launcher.OnDeny,
	// Command.OnDeny). Without it a tool with no allowed host has no
	// interface up, and what it tried is not known.
	ReportRefusals bool
	// UnixSockets lets the tool create Unix-domain sockets, as a
	// program that talks to its own helper processes over them does
	// (Chromium). It is given only with the tool's own network and
	// mount namespaces, which confine them: an abstract socket reaches
	// only the namespace's own (Landlock ABI 6 on also scopes them to
	// the tool's processes), a pathname socket only one its root shows;
	// elsewhere they stay refused. Check refuses it with a read scope
	// wider than the workspace, which would show the sockets of the
	// person's services (~/.docker/run/docker.sock, /run/user's bus).
	UnixSockets bool
	// OwnProcesses lets each of the tool's processes read /proc of its
	// own PID namespace, not only the first one's entry: where the
	// sandbox mounts a procfs of that namespace, which holds no process
	// but the tool's. Elsewhere only the first process's entry stays
	// readable.
	OwnProcesses bool
	// NoPreallocate refuses fallocate(2) (EOPNOTSUPP, as a file system
	// without it answers: the C library's posix_fallocate then writes
	// the blocks), where seccomp can: one call would otherwise take any
	// amount of disk at once, faster than a watch of a bounded folder
	// (an extension's server's data folder, internal/extmcp) could stop
	// the process. Elsewhere it changes nothing.
	NoPreallocate bool
	// MaxConnections bounds the proxy connections the tool holds open at
	// once (each is two descriptors of gemkit's own); more wait to be
	// accepted. 0 means DefaultMaxConnections.
	MaxConnections int

	// MaxFileBytes, when set, bounds the size of every file each of the
	// tool's processes writes (RLIMIT_FSIZE, never above gemkit's own):
	// a write past it fails (EFBIG; node and most runtimes ignore the
	// SIGXFSZ that comes with it), so that a file is never larger than
	// the bound, whatever the tool meant to write. It bounds each file,
	// not their sum: a caller that bounds a folder watches it too
	// (internal/pkgrun).
	MaxFileBytes uint64

	// MemoryBytes bounds the memory of the tool's whole process tree (a
	// cgroup where one can be made, else what each process writes of its
	// own, RLIMIT_DATA, set only then: see child.limits and childSpec);
	// 0 means DefaultMemoryBytes.
	MemoryBytes uint64
	// TempBytes bounds the private temp dir, a tmpfs inside the tool's
	// mount namespace; 0 means DefaultTempBytes.
	TempBytes uint64
}

// Handed is one file handed to a tool (Policy.Handed).
type Handed struct {
	Source, Target string
}

// DefaultMemoryBytes is the memory cap of a tool when the caller sets none.
const DefaultMemoryBytes = 2 << 30

// DefaultTempBytes bounds the private temp dir when the caller sets none.
const DefaultTempBytes = 1 << 30

// DefaultTempInodes bounds the number of files in the private temp dir
// (the tmpfs's nr_inodes): each costs kernel memory that no memory bound
// counts where there is no cgroup.
const DefaultTempInodes = 16384

// DefaultMaxConnections bounds a tool's open proxy connections when the
// caller sets none: generous for a client with a connection pool, far
// below what would exhaust gemkit's own descriptors when it serves many
// runs at once.
const DefaultMaxConnections = 128

// Check validates the policy: known scopes, a write scope no wider than the
// read scope, absolute paths for what the scopes need.
func (p *Policy) Check() error {
	if err := p.Permissions().Check(); err != nil {
		return err
	}
	r, w := p.Read.Rank(), p.Write.Rank()
	if p.UnixSockets && r >= 2 {
		return fmt.Errorf("sandbox: Unix sockets cannot be allowed with filesystem.read=%s: the sockets of your services there (~/.docker/run/docker.sock, /run/user's session bus) would be in reach", p.Read)
	}
	// In a fixed order, so that of several bad paths the same one is
	// reported every time.
	type folder struct {
		name string
		path *string
	}
	need := []folder{{"extension folder", &p.ExtensionDir}, {"temp dir", &p.TempDir}}
	if r >= 1 || w >= 1 {
		need = append(need, folder{"workspace", &p.Workspace})
	}
	if r >= 2 {
		need = append(need, folder{"home", &p.Home})
	}
	for _, f := range need {
		if *f.path == "" || !filepath.IsAbs(*f.path) {
			return fmt.Errorf("sandbox %s %q must be an absolute path", f.name, *f.path)
		}
		*f.path = filepath.Clean(*f.path)
	}
	// Cleaned into new slices: copies of a policy share these, and runs
	// of the copies may start at once.
	var err error
	if p.Protected, err = cleanAbs(p.Protected, "protected"); err != nil {
		return err
	}
	if p.Caches, err = cleanAbs(p.Caches, "cache"); err != nil {
		return err
	}
	handed := make([]Handed, 0, len(p.Handed))
	for _, h := range p.Handed {
		if !filepath.IsAbs(h.Source) || !filepath.IsAbs(h.Target) {
			return fmt.Errorf("sandbox handed file %q at %q: both must be absolute paths", h.Source, h.Target)
		}
		h.Source, h.Target = filepath.Clean(h.Source), filepath.Clean(h.Target)
		in := false
		for _, c := range p.Caches {
			in = in || fsutil.StrictlyWithin(c, filepath.Dir(h.Target))
		}
		if !in {
			return fmt.Errorf("sandbox handed file %q goes to %q, which is not in a folder of the tool's own cache", h.Source, h.Target)
		}
		handed = append(handed, h)
	}
	p.Handed = handed
	replaced := make([]Handed, 0, len(p.Replaced))
	for _, r := range p.Replaced {
		if !filepath.IsAbs(r.Source) || !filepath.IsAbs(r.Target) {
			return fmt.Errorf("sandbox folder %q shown at %q: both must be absolute paths", r.Source, r.Target)
		}
		replaced = append(replaced, Handed{Source: filepath.Clean(r.Source), Target: filepath.Clean(r.Target)})
	}
	p.Replaced = replaced
	p.ReadOnly, err = cleanAbs(p.ReadOnly, "read-only")
	return err
}

func cleanAbs(paths []string, what string) ([]string, error) {
	if paths == nil {
		return nil, nil
	}
	out := make([]string, len(paths))
	for i, d := range paths {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("sandbox %s folder %q must be an absolute path", what, d)
		}
		out[i] = filepath.Clean(d)
	}
	return out, nil
}

// FromResolved is the sandbox policy of a resolved tool policy
// (permission.Resolve) for one run: the extension's folder, the run's
// private temp dir, the runtime's installation and the folders no tool may
// write (every extension's code).
func FromResolved(r permission.Resolved, extDir, tmp string, runtime, readOnly []string) Policy {
	return Policy{
		Read: r.Read, Write: r.Write, AllowedHosts: r.AllowedHosts,
		Workspace: r.Workspace, Home: r.Home, ExtensionDir: extDir, TempDir: tmp, RuntimePaths: runtime,
		Protected: r.Closed, ReadOnly: readOnly, Guarded: r.Guarded, OwnServer: r.OwnServer,
	}
}

// Permissions is the declared part of p.
func (p *Policy) Permissions() permission.Policy {
	return permission.Policy{Read: p.Read, Write: p.Write, AllowedHosts: p.AllowedHosts}
}

// NeedsNetwork reports whether the tool may reach any host (through the
// proxy).
func (p *Policy) NeedsNetwork() bool { return len(p.AllowedHosts) > 0 }

// needsProxy reports whether the tool gets the proxy: to reach its
// allowed hosts, or to have what it tries reported.
func (p *Policy) needsProxy() bool { return p.NeedsNetwork() || p.ReportRefusals }

// UnenforceableError says why the kernel cannot enforce a policy. The
// caller may choose to run with less confinement only by an explicit
// opt-in (Launcher.AllowUnconfined); how a person opts in (a flag, a
// setting) is the caller's to say.
type UnenforceableError struct {
	Reasons []string
}

func (e *UnenforceableError) Error() string {
	return "this machine cannot enforce the extension's permissions: " + strings.Join(e.Reasons, "; ") + "; refusing to run"
}

// ErrUnsupported is returned on platforms without a sandbox implementation.
var ErrUnsupported = errors.New("sandboxing tools is not supported on this platform")

// ErrNoMountNamespace is the error of a run whose policy shows a folder
// in place of another (Policy.Replaced) where the tool cannot have a
// mount namespace of its own.
var ErrNoMountNamespace = errors.New("sandbox: a folder is shown in place of another only in a mount namespace of the tool's own, which this machine does not give it")
