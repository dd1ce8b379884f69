// The profile of a long-lived sandboxed server: one builder for the
// language servers of code intelligence (internal/langserver) and the
// extensions' stdio MCP servers (internal/extmcp).

package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
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
	look := LookServer(env["PATH"], s.Distrusted)
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
		pr.Runtime = append(pr.Runtime, Prefix(pr.Real))
	}
	if in := Interpreter(read); in != "" {
		if filepath.IsAbs(in) {
			pr.Runtime = append(pr.Runtime, Prefix(fsutil.RealPath(in)))
		} else if p, err := look(in); err == nil {
			pr.Runtime = append(pr.Runtime, Prefix(fsutil.RealPath(p)))
		}
	}
	pr.ClosedIn = ClosedInputs(env)
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

// ClosedInputs are the inputs of permission.ClosedPaths (and
// permission.OwnServerPort) from the person's environment env.
func ClosedInputs(env map[string]string) permission.ClosedInputs {
	return permission.ClosedInputs{Home: env["HOME"], ConfigDir: env["XDG_CONFIG_HOME"],
		TempDirs: []string{env["TMPDIR"], env["TMP"], env["TEMP"], os.TempDir(), "/tmp"},
		Getenv:   func(k string) string { return env[k] }}
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
			return fmt.Errorf("%s is not a folder of its own (a symlink?); remove it, or point the variable that names the folder at its real place, and ask again", d)
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

// LookServer finds a server's program on the part of path a server may
// be started from (permission.SearchPath): never in a distrusted folder
// (the workspace, a virtualenv). A full path, which only the person's
// own config names (a language server's "command"), is taken as it is
// when a program lies there; NewServerProfile still refuses one in a
// distrusted folder, with words.
func LookServer(path string, distrusted []string) func(string) (string, error) {
	dirs, dropped := permission.SearchPath(path, distrusted)
	return func(file string) (string, error) {
		if filepath.IsAbs(file) {
			if runnable(file) {
				return file, nil
			}
			return "", &NotFoundError{Program: file}
		}
		if strings.ContainsRune(file, filepath.Separator) {
			return "", fmt.Errorf("%s: a server's command here is a name found on PATH, or a full path", file)
		}
		for _, d := range dirs {
			if p := filepath.Join(d, file); runnable(p) {
				return p, nil
			}
		}
		nf := &NotFoundError{Program: file}
		for _, d := range dropped {
			if p := filepath.Join(d, file); runnable(p) {
				nf.Skipped = p
				break
			}
		}
		return "", nf
	}
}

// runnable reports whether p is a file (not a folder) someone may run.
func runnable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// NotFoundError is a server's program LookServer did not find where a
// server may be started from: the person installs it, or puts it on
// PATH.
type NotFoundError struct {
	Program string // as the server's command names it
	// Skipped is where PATH has it in a folder a tool may write (the
	// workspace, a virtualenv), which no server is started from; "" when
	// PATH has it nowhere.
	Skipped string
}

func (e *NotFoundError) Error() string {
	if filepath.IsAbs(e.Program) {
		return e.Program + ": no program there"
	}
	if e.Skipped != "" {
		return e.Program + ": on PATH only as " + e.Skipped + ", in the workspace or a virtualenv, whose folders are not searched"
	}
	return e.Program + ": not found on PATH (the workspace's and a virtualenv's folders are not searched)"
}

// Interpreter is the program a script's "#!" line names ("node" of
// "#!/usr/bin/env node"), "" for a binary.
func Interpreter(path string) string {
	// Without blocking: a FIFO (or a link to one) at path, which a tool
	// that may write the workspace can make, would hold an open forever,
	// and only a regular file is a script.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				return f
			}
		}
		return ""
	}
	return fields[0]
}

// Prefix is the installation a program belongs to: the folder above its
// bin folder (/usr/local of /usr/local/bin/node), else its own folder.
func Prefix(real string) string {
	dir := filepath.Dir(real)
	// pyenv's and rbenv's shims run the version manager's own scripts,
	// which find the interpreter below the same root.
	if b := filepath.Base(dir); b == "bin" || b == "shims" {
		return filepath.Dir(dir)
	}
	return dir
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
