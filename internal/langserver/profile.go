// The sandbox profile of a language server: what it may read, the one
// folder it may write, its environment and its network.

package langserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/lspclient"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// profile is what one server may reach in its sandbox.
type profile struct {
	// own is the server's installation: the folder its command lives
	// in, or the node_modules folder that holds its package (and its
	// dependencies: typescript beside typescript-language-server).
	own string
	// reads are the toolchain's folders: the interpreter's prefix, Go's
	// GOROOT and module cache.
	reads []string
	// cache is the server's private folder, the only one it writes.
	cache string
	// env is its whole environment.
	env []string
	// hosts are the hosts it may reach through the allowlisting proxy
	// (Server.AllowedHosts); none by default.
	hosts []string
	// closed are the folders no sandboxed process may read
	// (permission.ClosedPaths).
	closed []string
}

// serverEnv are the variables of the person's environment a server
// keeps: who and where the person is, the locale, and the settings of the
// languages' toolchains. Everything else (tokens, cloud credentials, SSH
// agents) stays behind.
var serverEnv = map[string]bool{
	"USER": true, "LOGNAME": true, "LANG": true, "LANGUAGE": true, "TZ": true,
	"LC_ALL": true, "LC_CTYPE": true, "LC_COLLATE": true, "LC_MESSAGES": true,
	"LC_MONETARY": true, "LC_NUMERIC": true, "LC_TIME": true,
	"VIRTUAL_ENV": true, "CONDA_PREFIX": true, "PYTHONPATH": true, "PYENV_ROOT": true, "PYENV_VERSION": true,
	"NODE_PATH": true, "CARGO_HOME": true, "RUSTUP_HOME": true, "RUSTUP_TOOLCHAIN": true,
}

// goSet are the Go variables the profile sets itself; the person's other
// GO* variables (GOFLAGS, GOPRIVATE, GOEXPERIMENT...) are kept.
var goSet = map[string]bool{"GOROOT": true, "GOPATH": true, "GOCACHE": true, "GOMODCACHE": true, "GOPROXY": true,
	"GOTOOLCHAIN": true, "GOENV": true, "GOTELEMETRY": true, "GOTELEMETRYDIR": true}

// untrusted are the folders no server command is taken from: the
// workspace, where a tool allowed to write it can plant a program, and
// an activated virtualenv's or conda environment's folder, which a
// person's PATH names first.
func untrusted(ws string, env map[string]string) []string {
	out := permission.Untrusted(ws, env["HOME"], nil)
	for _, k := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v := env[k]; filepath.IsAbs(v) {
			out = append(out, realPath(v))
		}
	}
	return out
}

// SearchLook finds a program on the part of path a server may start
// programs from (permission.SearchPath): never in the workspace or a
// virtualenv.
func SearchLook(path string, distrusted []string) LookPath {
	dirs, _ := permission.SearchPath(path, distrusted)
	return func(file string) (string, error) {
		if strings.ContainsRune(file, filepath.Separator) {
			return "", fmt.Errorf("%s: a language server's command is a name found on PATH", file)
		}
		for _, d := range dirs {
			p := filepath.Join(d, file)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: not found on PATH (the workspace's and a virtualenv's folders are not searched)", file)
	}
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// cacheRoot is the folder of the servers' private caches: the user's
// cache folder's gemkit/langserver.
func cacheRoot() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the language servers: %w", err)
	}
	return filepath.Join(d, "gemkit", "langserver"), nil
}

// privateDir makes dir (0700) and checks that neither it nor its parent
// is a symlink: a link planted there by a tool that may write the home
// folder would point the server's writes elsewhere.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
			return fmt.Errorf("%s is not a folder of its own (a symlink?); remove it and ask again", d)
		}
	}
	return nil
}

// ownInstall is the folder of a server's installation that it reads:
// the node_modules folder that holds its package, where it has one (its
// dependencies are its siblings), else the folder of its program.
func ownInstall(real string) string {
	dir := filepath.Dir(real)
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "package.json")); err != nil {
			continue
		}
		parent := filepath.Dir(d)
		if strings.HasPrefix(filepath.Base(parent), "@") {
			parent = filepath.Dir(parent)
		}
		if filepath.Base(parent) == "node_modules" {
			return parent
		}
		return d
	}
	return dir
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

// buildProfile is the profile of server s, whose command was found at
// path, for the workspace ws, from the person's environment environ.
func buildProfile(s Server, path, ws, cacheBase string, environ []string) (profile, error) {
	return makeProfile(s, path, ws, cacheBase, environ, true)
}

// ReadRoots are the folders outside the workspace ws that the servers of
// table read in their profiles (buildProfile): each one's installation and
// its toolchain's folders, for the servers found where the Pool finds
// them (never in the workspace or a virtualenv). They are what a
// code-intelligence answer may quote besides the workspace, so that the
// answers and the sandbox hold one list; working it out runs nothing and
// makes no folder.
func ReadRoots(table []Server, ws string, environ []string) []string {
	env := envMap(environ)
	look := SearchLook(env["PATH"], untrusted(ws, env))
	var roots []string
	for _, s := range table {
		if s.Disabled || len(s.Command) == 0 {
			continue
		}
		path, err := look(s.Command[0])
		if err != nil {
			continue
		}
		pr, err := makeProfile(s, path, ws, "", environ, false)
		if err != nil {
			continue
		}
		roots = append(append(roots, pr.own), pr.reads...)
	}
	slices.Sort(roots)
	return slices.Compact(roots)
}

// makeProfile is buildProfile; with mk false it only works the profile
// out, making no cache folder (ReadRoots).
func makeProfile(s Server, path, ws, cacheBase string, environ []string, mk bool) (profile, error) {
	env := envMap(environ)
	home := env["HOME"]
	distrusted := untrusted(ws, env)
	real := realPath(path)
	if r, in := permission.WithinAny(distrusted, real); in {
		return profile{}, fmt.Errorf("its command %s is %s, inside %s, which a tool may write; gemkit does not start a language server from there: install it outside the workspace and any virtualenv", path, real, r)
	}
	look := SearchLook(env["PATH"], distrusted)
	pr := profile{own: ownInstall(real), hosts: s.AllowedHosts}
	addProgram := func(name string) string {
		p, err := look(name)
		if err != nil {
			return ""
		}
		r := realPath(p)
		pr.reads = append(pr.reads, Prefix(r))
		return r
	}
	if in := Interpreter(real); in != "" {
		if filepath.IsAbs(in) {
			pr.reads = append(pr.reads, Prefix(realPath(in)))
		} else {
			addProgram(in)
		}
	}
	pr.closed = permission.ClosedPaths(permission.ClosedInputs{Home: home, ConfigDir: env["XDG_CONFIG_HOME"],
		TempDirs: []string{env["TMPDIR"], env["TMP"], env["TEMP"], os.TempDir(), "/tmp"},
		Getenv:   func(k string) string { return env[k] }})

	if cacheBase == "" {
		var err error
		if cacheBase, err = cacheRoot(); err != nil && mk {
			return profile{}, err
		}
	}
	pr.cache = filepath.Join(cacheBase, s.Name)
	if mk {
		if err := privateDir(pr.cache); err != nil {
			return profile{}, fmt.Errorf("its private cache: %w", err)
		}
		if c := realPath(pr.cache); fsutil.Within(realPath(ws), c) {
			return profile{}, fmt.Errorf("its private cache %s is inside the workspace; set XDG_CACHE_HOME to a folder outside it", c)
		}
	}
	sub := func(name string) string {
		d := filepath.Join(pr.cache, name)
		if mk {
			_ = os.MkdirAll(d, 0o700)
		}
		return d
	}
	out := map[string]string{}
	for k, v := range env {
		if serverEnv[k] || strings.HasPrefix(k, "GO") && !goSet[k] {
			out[k] = v
		}
	}
	kept, _ := permission.SearchPath(env["PATH"], distrusted)
	out["PATH"] = strings.Join(kept, string(filepath.ListSeparator))
	// What a server writes under its home or the cache folders lands in
	// its private cache, never in the person's.
	out["HOME"] = sub("home")
	out["XDG_CACHE_HOME"] = sub("xdg-cache")
	out["XDG_CONFIG_HOME"] = sub("xdg-config")
	out["XDG_DATA_HOME"] = sub("xdg-data")

	if lang := s.toolchain(); lang == "go" {
		if gobin := addProgram("go"); gobin != "" {
			goroot := Prefix(gobin)
			if v := env["GOROOT"]; filepath.IsAbs(v) {
				goroot = realPath(v)
				pr.reads = append(pr.reads, goroot)
			}
			out["GOROOT"] = goroot
		}
		modcache := goModCache(env)
		out["GOCACHE"] = sub("go-build")
		out["GOPATH"] = sub("gopath")
		out["GOTOOLCHAIN"] = "local"
		out["GOENV"] = "off"
		if len(pr.hosts) == 0 {
			// No network: modules come from the person's module cache,
			// read-only, and a missing one is an error at once rather
			// than a download that hangs. The server is given the
			// cache's real path: the sandbox opens only the folder a
			// link leads to, not the link (a ~/go that links to
			// another disk), so through the link gopls would find no
			// module and answer as if the workspace declared nothing.
			out["GOPROXY"] = "off"
			if modcache != "" {
				modcache = realPath(modcache)
				pr.reads = append(pr.reads, modcache)
			}
			out["GOMODCACHE"] = modcache
		} else {
			// With the module proxy allowed, downloads go to a module
			// cache of the server's own: the person's is never written
			// by a sandboxed process. Modules the person already has
			// come from their cache's download folder first.
			out["GOMODCACHE"] = sub("gomodcache")
			proxy := env["GOPROXY"]
			if proxy == "" || proxy == "off" {
				proxy = "https://proxy.golang.org,direct"
			}
			if modcache != "" {
				dl := filepath.Join(realPath(modcache), "cache", "download")
				pr.reads = append(pr.reads, dl)
				proxy = "file://" + dl + "," + proxy
			}
			out["GOPROXY"] = proxy
			out["GOFLAGS"] = strings.TrimSpace(env["GOFLAGS"] + " -modcacherw")
		}
	} else if lang == "python" {
		addProgram("python3")
	} else if lang == "rust" {
		// rustup's toolchains and cargo's registry, read-only; what
		// cargo builds (build scripts, proc macros, which the server
		// runs by design) goes to a target folder of its own.
		for _, v := range []struct{ key, dflt string }{{"RUSTUP_HOME", ".rustup"}, {"CARGO_HOME", ".cargo"}} {
			dir := env[v.key]
			if !filepath.IsAbs(dir) && filepath.IsAbs(home) {
				dir = filepath.Join(home, v.dflt)
			}
			if filepath.IsAbs(dir) {
				out[v.key] = dir
				pr.reads = append(pr.reads, realPath(dir))
			}
		}
		out["CARGO_TARGET_DIR"] = sub("cargo-target")
		if len(pr.hosts) == 0 {
			out["CARGO_NET_OFFLINE"] = "true"
		}
	}
	// A read root that holds or lies in a closed folder is left out.
	pr.reads = slices.DeleteFunc(pr.reads, func(r string) bool {
		if r == "" || r == "/" || home != "" && fsutil.Within(r, realPath(home)) {
			return true
		}
		for _, c := range pr.closed {
			if fsutil.Within(c, r) || fsutil.Within(r, c) {
				return true
			}
		}
		return false
	})
	slices.Sort(pr.reads)
	pr.reads = slices.Compact(pr.reads)
	if pr.own == "/" || home != "" && fsutil.Within(pr.own, realPath(home)) {
		return profile{}, fmt.Errorf("its installation %s would open all of %s to it; install it in a folder of its own", pr.own, home)
	}
	for _, c := range pr.closed {
		if fsutil.Within(c, pr.own) || fsutil.Within(pr.own, c) {
			return profile{}, fmt.Errorf("its installation %s overlaps %s, which is closed to every sandboxed process", pr.own, c)
		}
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		pr.env = append(pr.env, k+"="+out[k])
	}
	return pr, nil
}

// goModCache is the person's Go module cache, as the go command finds
// it: $GOMODCACHE, else the first $GOPATH's pkg/mod, else ~/go/pkg/mod.
func goModCache(env map[string]string) string {
	if v := env["GOMODCACHE"]; filepath.IsAbs(v) {
		return v
	}
	if gp := filepath.SplitList(env["GOPATH"]); len(gp) > 0 && filepath.IsAbs(gp[0]) {
		return filepath.Join(gp[0], "pkg", "mod")
	}
	if h := env["HOME"]; filepath.IsAbs(h) {
		return filepath.Join(h, "go", "pkg", "mod")
	}
	return ""
}

// toolchain names the language toolchain a server reads besides its own
// installation.
func (s Server) toolchain() string {
	for ext := range s.Extensions {
		switch ext {
		case ".go":
			return "go"
		case ".py", ".pyi":
			return "python"
		case ".rs":
			return "rust"
		}
	}
	return ""
}

// sandboxStarter starts a server of the Pool in gemkit's sandbox with the
// server's profile: it reads the workspace, its installation and its
// toolchain, writes only its private cache, reaches no network unless
// the person allowed hosts, and never a closed folder. A machine that
// cannot enforce that gets an error, never an unconfined server.
func (p *Pool) sandboxStarter(s Server, path string) lspclient.Starter {
	return func(ctx context.Context, argv []string, dir string, env []string, stderr io.Writer) (lspclient.Process, error) {
		if env == nil {
			env = os.Environ()
		}
		pr, err := buildProfile(s, path, p.ws, p.cacheDir, env)
		if err != nil {
			return nil, err
		}
		tmp, err := os.MkdirTemp("", "gemkit-langserver-")
		if err != nil {
			return nil, err
		}
		cmd := &sandbox.Command{
			Policy: sandbox.Policy{
				Read: permission.AccessWorkspace, Write: permission.AccessNone, AllowedHosts: pr.hosts,
				Workspace: p.ws, Home: envMap(env)["HOME"], ExtensionDir: pr.own, TempDir: tmp,
				RuntimePaths: pr.reads, Caches: []string{pr.cache}, Protected: pr.closed,
			},
			Path: argv[0], Args: argv[1:], Dir: dir, Stderr: stderr,
			Env: append(pr.env, "TMPDIR="+tmp),
		}
		srv, err := p.launcher.StartServer(ctx, cmd)
		if err != nil {
			os.RemoveAll(tmp)
			var ue *sandbox.UnenforceableError
			if errors.Is(err, sandbox.ErrUnsupported) {
				return nil, errors.New("gemkit runs language servers only inside its sandbox, which it has on Linux only so far; it is not started")
			}
			if errors.As(err, &ue) {
				return nil, fmt.Errorf("gemkit runs language servers only inside its sandbox, and this machine cannot provide it (%s); it is not started", strings.Join(ue.Reasons, "; "))
			}
			return nil, fmt.Errorf("starting it in gemkit's sandbox: %w", err)
		}
		return &sandboxed{srv: srv, tmp: tmp}, nil
	}
}

// sandboxed is a server running in the sandbox.
type sandboxed struct {
	srv *sandbox.Server
	tmp string
}

func (s *sandboxed) Stdin() io.WriteCloser { return s.srv.Stdin }
func (s *sandboxed) Stdout() io.ReadCloser { return s.srv.Stdout }
func (s *sandboxed) Kill()                 { s.srv.Kill() }
func (s *sandboxed) Pid() int              { return s.srv.Pid() }
func (s *sandboxed) Wait() error {
	err := s.srv.Wait()
	os.RemoveAll(s.tmp)
	return err
}
