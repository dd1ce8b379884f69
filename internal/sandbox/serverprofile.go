// The profile of a long-lived sandboxed server: one builder for the
// language servers of code intelligence (internal/langserver) and the
// extensions' stdio MCP servers (internal/extmcp).

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/progsearch"
)

// ServerSetup is what a server's profile is built from.
type ServerSetup struct {
	// Workspace is the folder the server reads and runs in.
	Workspace string
	// Env is the person's environment: PATH finds the program, HOME and
	// the temp and agents' variables say which folders are closed.
	// Nothing of it reaches the server but what the caller puts in
	// ServerProfile.Env.
	Env map[string]string
	// Distrusted are the folders no program is taken from
	// (permission.Untrusted: the workspace, and more per caller).
	Distrusted []string
	// Program is the server's command: a name found on the part of
	// Env's PATH outside Distrusted, or, when AbsoluteIn is set, an
	// absolute path. Path is where a caller already found it (a
	// language server's LookPath): then Program is not looked up.
	Program, Path string
	// AbsoluteIn, when set, lets Program be an absolute path, and lets a
	// program inside AbsoluteIn (an extension's own folder) run although
	// that folder lies in a distrusted one (an extension linked from the
	// workspace).
	AbsoluteIn string
	// Own is the folder of the server's own code, read-only to it: an
	// extension's folder, a language server's installation.
	Own string
	// Shown, when set, is the folder the server is shown at Own in its
	// place (Policy.Replaced: gemkit's copy of an extension as agreed
	// to): a program inside Own is resolved, and its interpreter line
	// read, in Shown, whose files are those that run, never in Own,
	// whose files may have changed since (a link put there would lead
	// the profile's runtime folders anywhere).
	Shown string
	// Private is the one folder the server writes besides its temp dir
	// (a language server's cache, an extension's data folder), made by
	// PrivateDir unless Plan; What names it in errors ("its private
	// cache") and Moved names the variable that moves it ("XDG_CACHE_HOME").
	Private, What, Moved string
	// ExtensionFolders are every extension's folders (the extensions
	// folder, each entry, each linked source): read-only to the server
	// wherever they lie, whatever else it may write.
	ExtensionFolders []string
	// Plan works the profile out without making any folder.
	Plan bool
	// Kind names the server in errors ("language server"); "" is
	// "server".
	Kind string
}

// ServerProfile is what one long-lived server may reach in its sandbox:
// it reads the workspace, its own code, its runtime's installation and
// the toolchain folders its caller adds; it writes its private folder
// and a temp dir (and, when allowed, the workspace but its guarded
// paths); every extension's code stays read-only to it; no closed folder.
type ServerProfile struct {
	// Path is the program found; Real its resolved path.
	Path, Real string
	// Own is the folder of its own code, read-only (Policy.ExtensionDir).
	Own string
	// Runtime are the folders it reads and runs besides Own: its
	// program's installation, its interpreter's, the toolchain's.
	Runtime []string
	// Private is the folder it writes (Policy.Caches).
	Private string
	// Closed are the folders no sandboxed process may read
	// (permission.ClosedPaths), with what the caller adds.
	Closed []string
	// ReadOnly are every extension's folders.
	ReadOnly []string
	// Env is the server's whole environment: PATH (the searched part of
	// the person's) and what the caller adds.
	Env []string
	// Write is the scope it may write besides Private; Guarded are then
	// the paths in it that stay read-only.
	Write   permission.Access
	Guarded []permission.Guarded
	// Hosts are the hosts it may reach through the proxy.
	Hosts []string
	// UnixSockets, ReportRefusals, OwnProcesses, NoPreallocate are
	// Policy's.
	UnixSockets, ReportRefusals, OwnProcesses, NoPreallocate bool
	// ClosedIn says where gemkit's own servers keep their secrets
	// (OwnServer) and what Closed was made from.
	ClosedIn permission.ClosedInputs

	home string
}

// NewServerProfile finds the program of s and starts its profile: the
// program's and interpreter's installations to read, the closed
// folders, the private folder (made 0700 and checked by PrivateDir), the
// extension folders read-only, and PATH. The caller adds its own reads,
// environment and widenings, then calls Policy.
func NewServerProfile(s ServerSetup) (*ServerProfile, error) {
	env := s.Env
	home := env["HOME"]
	kind := s.Kind
	if kind == "" {
		kind = "server"
	}
	pr := &ServerProfile{Own: s.Own, Write: permission.AccessNone, home: home}
	look := progsearch.Look(env["PATH"], s.Distrusted)
	path := s.Path
	switch {
	case path != "":
	case strings.ContainsRune(s.Program, filepath.Separator):
		if s.AbsoluteIn == "" || !filepath.IsAbs(s.Program) {
			return nil, fmt.Errorf("its command %s is a path; gemkit starts a server by a name found on PATH%s", s.Program, map[bool]string{true: " or by its full path"}[s.AbsoluteIn != ""])
		}
		path = s.Program
	default:
		p, err := look(s.Program)
		if err != nil {
			return nil, fmt.Errorf("its command: %w", err)
		}
		path = p
	}
	pr.Path, pr.Real = path, fsutil.RealPath(path)
	// read is where the program's bytes are read: Real, or its place in
	// Shown.
	read := pr.Real
	if s.Shown != "" && s.Own != "" && fsutil.Within(s.Own, path) {
		pr.Real, read = shownPath(s.Own, s.Shown, path)
	}
	inOwn := s.AbsoluteIn != "" && fsutil.Within(fsutil.RealPath(s.AbsoluteIn), pr.Real)
	if r, in := permission.WithinAny(s.Distrusted, pr.Real); in && !inOwn {
		return nil, fmt.Errorf("its command %s is %s, inside %s, which a tool may write; gemkit does not start a %s from there: install it outside the workspace and any virtualenv", path, pr.Real, r, kind)
	}
	if pr.Own == "" || !fsutil.Within(fsutil.RealPath(pr.Own), pr.Real) {
		pr.Runtime = append(pr.Runtime, progsearch.Prefix(pr.Real))
	}
	if in := progsearch.InterpreterAt(read, look); in != "" {
		pr.Runtime = append(pr.Runtime, progsearch.Prefix(in))
	}
	pr.ClosedIn = permission.ClosedOf(envmap.Map(env).Get)
	pr.Closed = permission.ClosedPaths(pr.ClosedIn)

	pr.Private = s.Private
	if s.Private != "" && !s.Plan {
		if err := PrivateDir(home, s.Private); err != nil {
			return nil, fmt.Errorf("%s: %w", s.What, err)
		}
		d := fsutil.RealPath(s.Private)
		if fsutil.Within(fsutil.RealPath(s.Workspace), d) {
			return nil, fmt.Errorf("%s %s is inside the workspace; set %s to a folder outside it", s.What, d, s.Moved)
		}
		for _, x := range s.ExtensionFolders {
			if x := fsutil.RealPath(x); filepath.IsAbs(x) && (fsutil.Within(x, d) || fsutil.Within(d, x)) {
				return nil, fmt.Errorf("%s %s overlaps %s, an extension's folder, which every sandboxed process finds read-only; set %s to a folder apart from it", s.What, d, x, s.Moved)
			}
		}
	}
	for _, x := range s.ExtensionFolders {
		if filepath.IsAbs(x) {
			pr.ReadOnly = append(pr.ReadOnly, filepath.Clean(x))
		}
	}
	kept, _ := permission.SearchPath(env["PATH"], s.Distrusted)
	pr.Env = append(pr.Env, "PATH="+strings.Join(kept, string(filepath.ListSeparator)))
	return pr, nil
}

// Read adds folders the server reads and runs (a toolchain's).
func (p *ServerProfile) Read(dirs ...string) { p.Runtime = append(p.Runtime, dirs...) }

// Finish drops the runtime folders that would open too much (/, the home
// folder or a folder in it, a folder holding or inside a closed one),
// sorts them, and the environment by name.
func (p *ServerProfile) Finish() {
	home := ""
	if p.home != "" {
		home = fsutil.RealPath(p.home)
	}
	p.Runtime = slices.DeleteFunc(p.Runtime, func(r string) bool {
		if r == "" || r == "/" || home != "" && fsutil.Within(r, home) {
			return true
		}
		for _, c := range p.Closed {
			if fsutil.Within(c, r) || fsutil.Within(r, c) {
				return true
			}
		}
		return false
	})
	slices.Sort(p.Runtime)
	p.Runtime = slices.Compact(p.Runtime)
	slices.SortFunc(p.Env, func(a, b string) int {
		ka, _, _ := strings.Cut(a, "=")
		kb, _, _ := strings.Cut(b, "=")
		return strings.Compare(ka, kb)
	})
}

// OwnServer reports whether a loopback port is one of gemkit's own
// servers, which the proxy refuses even with localhost allowed.
func (p *ServerProfile) OwnServer(port int) bool { return permission.OwnServerPort(p.ClosedIn, port) }

// Policy is the sandbox policy of the profile for a run in ws with the
// private temp folder tmp: the workspace read, Own read-only, Private
// writable, every extension's folder read-only.
func (p *ServerProfile) Policy(ws, tmp string) Policy {
	pol := Policy{
		Read: permission.AccessWorkspace, Write: p.Write,
		Workspace: ws, Home: p.home, ExtensionDir: p.Own, TempDir: tmp,
		RuntimePaths: p.Runtime, Protected: p.Closed, ReadOnly: p.ReadOnly,
		Guarded: p.Guarded, AllowedHosts: p.Hosts,
		ReportRefusals: p.ReportRefusals, UnixSockets: p.UnixSockets, OwnProcesses: p.OwnProcesses,
		NoPreallocate: p.NoPreallocate,
	}
	if p.Private != "" {
		pol.Caches = []string{p.Private}
	}
	if len(p.Hosts) > 0 || p.ReportRefusals {
		pol.OwnServer = p.OwnServer
	}
	return pol
}

// PrivateDir makes dir (0700) and checks it is a folder of this user's
// own, the one folder a sandboxed server (or the placeholder locks) may
// write: no folder on the way from home (or from /, when dir is not in
// home) to it is a symlink, since a link planted there by a tool allowed
// to write the home folder would point the writes elsewhere; and dir
// itself belongs to this user, who alone may enter it (a folder made
// beforehand by another user, in /tmp say, would let them read or
// plant what is written there).
func PrivateDir(home, dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	top := "/"
	if filepath.IsAbs(home) && fsutil.Within(filepath.Clean(home), dir) {
		top = filepath.Clean(home)
	}
	for d := dir; d != top && d != filepath.Dir(d); d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
			return fmt.Errorf("%s is not a folder of its own (a symlink?); remove it and try again, or point the variable that names the folder at its real place", d)
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fsutil.OwnedByMe(fi) || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s must be a folder of this user's that only it may enter (chmod 700 %s)", dir, dir)
	}
	return nil
}

// shownPath resolves path, inside own, as the server sees it where shown
// is shown at own: real is its resolved path in the server's view (in
// own, or where a link of shown leads out), read the same file in
// shown, where it can be read.
func shownPath(own, shown, path string) (real, read string) {
	rel, err := filepath.Rel(own, path)
	if err != nil {
		return fsutil.RealPath(path), fsutil.RealPath(path)
	}
	read = fsutil.RealPath(filepath.Join(shown, rel))
	base := fsutil.RealPath(shown)
	if r, err := filepath.Rel(base, read); err == nil && fsutil.Within(base, read) {
		return filepath.Join(own, r), read
	}
	return read, read
}
