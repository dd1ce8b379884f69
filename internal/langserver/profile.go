// The sandbox profile of a language server: what it may read, the one
// folder it may write, its environment and its network.

package langserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/lspclient"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/progsearch"
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
	// sp is the whole profile, as an extension's server's is built
	// (sandbox.NewServerProfile): its policy.
	sp *sandbox.ServerProfile
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
			out = append(out, fsutil.RealPath(v))
		}
	}
	return out
}

// Look is how the Pool of the workspace ws finds its servers' programs,
// in the environment environ: searchLook, and a rustup proxy whose
// component is missing is not found (RustupLook).
func Look(ws string, environ []string) LookPath {
	env := envmap.Of(environ)
	return RustupLook(searchLook(env["PATH"], untrusted(ws, env)), ws, environ)
}

// searchLook finds a program on the part of path a server may start
// programs from (progsearch.Look): never in the workspace or a
// virtualenv.
func searchLook(path string, distrusted []string) LookPath {
	return LookPath(progsearch.Look(path, distrusted))
}

// cacheRoot is the folder of the servers' private caches: the user's
// cache folder's gemkit/langserver.
func cacheRoot() (string, error) {
	d, err := gemkitdir.Cache()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the language servers: %w", err)
	}
	return filepath.Join(d, "langserver"), nil
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
	env := envmap.Of(environ)
	look := searchLook(env["PATH"], untrusted(ws, env))
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
// out, making no cache folder (ReadRoots). It is built as an extension's
// server's is (sandbox.NewServerProfile), with the toolchain's folders
// and environment.
func makeProfile(s Server, path, ws, cacheBase string, environ []string, mk bool) (profile, error) {
	env := envmap.Of(environ)
	home := env["HOME"]
	distrusted := untrusted(ws, env)
	real := fsutil.RealPath(path)
	own := ownInstall(real)
	if cacheBase == "" {
		var err error
		if cacheBase, err = cacheRoot(); err != nil && mk {
			return profile{}, err
		}
	}
	var folders []string
	if mk {
		folders, _ = extension.EnvFolders(env)
	}
	sp, err := sandbox.NewServerProfile(sandbox.ServerSetup{
		Workspace: ws, Env: env, Distrusted: distrusted, Path: path, Own: own,
		Private: filepath.Join(cacheBase, s.Name), What: "its private cache", Moved: "XDG_CACHE_HOME",
		ExtensionFolders: folders, Plan: !mk, Kind: "language server",
	})
	if err != nil {
		return profile{}, err
	}
	t := &toolchainEnv{s: s, sp: sp, env: env, out: map[string]string{}, look: searchLook(env["PATH"], distrusted), mk: mk}
	for k, v := range env {
		if serverEnv[k] || strings.HasPrefix(k, "GO") && !goSet[k] {
			t.out[k] = v
		}
	}
	// What a server writes under its home or the cache folders lands in
	// its private cache, never in the person's.
	t.out["HOME"] = t.sub("home")
	t.out["XDG_CACHE_HOME"] = t.sub("xdg-cache")
	t.out["XDG_CONFIG_HOME"] = t.sub("xdg-config")
	t.out["XDG_DATA_HOME"] = t.sub("xdg-data")
	switch s.toolchain() {
	case "go":
		t.goEnv()
	case "python":
		t.program("python3")
	case "rust":
		t.rustEnv(home)
	}
	out := t.out
	for k, v := range out {
		sp.Env = append(sp.Env, k+"="+v)
	}
	sp.Hosts = s.AllowedHosts
	// A read root that holds or lies in a closed folder is left out.
	sp.Finish()
	if own == "/" || home != "" && fsutil.Within(own, fsutil.RealPath(home)) {
		return profile{}, fmt.Errorf("its installation %s would open all of %s to it; install it in a folder of its own", own, home)
	}
	for _, c := range sp.Closed {
		if fsutil.Within(c, own) || fsutil.Within(own, c) {
			return profile{}, fmt.Errorf("its installation %s overlaps %s, which is closed to every sandboxed process", own, c)
		}
	}
	return profile{own: own, reads: sp.Runtime, cache: sp.Private, env: sp.Env, hosts: sp.Hosts, closed: sp.Closed, sp: sp}, nil
}

// toolchainEnv is the environment and the read roots of a server's
// toolchain as makeProfile works them out: the person's environment
// (env), the server's (out), and the profile its folders are added to.
type toolchainEnv struct {
	s    Server
	sp   *sandbox.ServerProfile
	env  map[string]string
	out  map[string]string
	look LookPath
	mk   bool
}

// program finds the program name as the server would, opens its
// installation to it read-only and returns its real path ("" when it is
// not found).
func (t *toolchainEnv) program(name string) string {
	p, err := t.look(name)
	if err != nil {
		return ""
	}
	r := fsutil.RealPath(p)
	t.sp.Read(progsearch.Prefix(r))
	return r
}

// sub is the folder name of the server's private cache, made unless the
// profile is only worked out.
func (t *toolchainEnv) sub(name string) string {
	d := filepath.Join(t.sp.Private, name)
	if t.mk {
		_ = os.MkdirAll(d, 0o700)
	}
	return d
}

// goEnv: the go command, its GOROOT, build cache and GOPATH of the
// server's own, and modules from the person's module cache (read-only)
// or, with the module proxy allowed, downloaded into a cache of the
// server's.
func (t *toolchainEnv) goEnv() {
	if gobin := t.program("go"); gobin != "" {
		goroot := progsearch.Prefix(gobin)
		if v := t.env["GOROOT"]; filepath.IsAbs(v) {
			goroot = fsutil.RealPath(v)
			t.sp.Read(goroot)
		}
		t.out["GOROOT"] = goroot
	}
	modcache := goModCache(t.env)
	t.out["GOCACHE"] = t.sub("go-build")
	t.out["GOPATH"] = t.sub("gopath")
	t.out["GOTOOLCHAIN"] = "local"
	t.out["GOENV"] = "off"
	if len(t.s.AllowedHosts) == 0 {
		// No network: modules come from the person's module cache,
		// read-only, and a missing one is an error at once rather
		// than a download that hangs. The server is given the
		// cache's real path: the sandbox opens only the folder a
		// link leads to, not the link (a ~/go that links to
		// another disk), so through the link gopls would find no
		// module and answer as if the workspace declared nothing.
		t.out["GOPROXY"] = "off"
		if modcache != "" {
			modcache = fsutil.RealPath(modcache)
			t.sp.Read(modcache)
		}
		t.out["GOMODCACHE"] = modcache
	} else {
		// With the module proxy allowed, downloads go to a module
		// cache of the server's own: the person's is never written
		// by a sandboxed process. Modules the person already has
		// come from their cache's download folder first.
		t.out["GOMODCACHE"] = t.sub("gomodcache")
		proxy := t.env["GOPROXY"]
		if proxy == "" || proxy == "off" {
			proxy = "https://proxy.golang.org,direct"
		}
		if modcache != "" {
			dl := filepath.Join(fsutil.RealPath(modcache), "cache", "download")
			t.sp.Read(dl)
			proxy = "file://" + dl + "," + proxy
		}
		t.out["GOPROXY"] = proxy
		t.out["GOFLAGS"] = strings.TrimSpace(t.env["GOFLAGS"] + " -modcacherw")
	}
}

// rustEnv: rustup's toolchains and cargo's registry, read-only; what
// cargo builds (build scripts, proc macros, which the server runs by
// design) goes to a target folder of its own.
func (t *toolchainEnv) rustEnv(home string) {
	for _, v := range []struct{ key, dflt string }{{"RUSTUP_HOME", ".rustup"}, {"CARGO_HOME", ".cargo"}} {
		dir := t.env[v.key]
		if !filepath.IsAbs(dir) && filepath.IsAbs(home) {
			dir = filepath.Join(home, v.dflt)
		}
		if filepath.IsAbs(dir) {
			t.out[v.key] = dir
			t.sp.Read(fsutil.RealPath(dir))
		}
	}
	t.out["CARGO_TARGET_DIR"] = t.sub("cargo-target")
	if len(t.s.AllowedHosts) == 0 {
		t.out["CARGO_NET_OFFLINE"] = "true"
	}
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
			Policy: pr.sp.Policy(p.ws, tmp),
			Path:   argv[0], Args: argv[1:], Dir: dir, Stderr: stderr,
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
