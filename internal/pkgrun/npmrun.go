package pkgrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/progsearch"
	"github.com/gemkit/gemkit/internal/runnerline"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// npm run in gemkit's sandbox for a request: to install it into a
// staged folder, or to resolve it and write the lock alone. An install
// is two runs when the person allowed install scripts (doc.go): npm
// fetches with the person's configuration and no script run, then runs
// the scripts (`npm rebuild`) with neither the configuration nor the
// network nor the cache.

// cacheName is npm's cache in an extension's folder of trees: each
// extension's installs have their own, which only npm writes, never a
// package's script (doc.go).
const cacheName = ".npm-cache"

// sharedCacheName is the cache every extension's installs shared before
// each had its own, in Root: it may hold what one extension's install
// scripts wrote, and is removed at the next install.
const sharedCacheName = ".npm-cache"

// stage makes a new folder, its name starting with prefix, in the
// folder of req's extension's trees.
func (in *Installer) stage(req Request, prefix string) (dir, stage string, err error) {
	if req.Ecosystem == runnerline.PyPI {
		return "", "", &runnerline.PyPIError{Invocation: req.Invocation}
	}
	if dir, err = extDir(in.Root, req.Extension); err != nil {
		return "", "", err
	}
	if err := privateDir(in.Root, dir); err != nil {
		return "", "", err
	}
	if stage, err = os.MkdirTemp(dir, prefix); err != nil {
		return "", "", err
	}
	return dir, stage, nil
}

// npmRun is what running npm for a request gave: what it asked for,
// from where, how much came through the proxy, and the progress that
// told of it.
type npmRun struct {
	inv              runnerline.Invocation
	target, registry string
	received         int64
	prog             *progress
	// route is how the registries are reached (the person's proxy);
	// trust how they are trusted, in words; network both (Tree.Network).
	route          route
	trust, network []string
	// tools ran npm; latest is what the registry's latest tag names,
	// when the line's pick may depend on it (engine.go).
	tools  npmTools
	latest *viewed
}

// npmTools are node and npm as found on the person's PATH, and the PATH
// an install runs with.
type npmTools struct {
	node, cli, root string
	path            []string
}

// npm runs npm in gemkit's sandbox to install what req names into
// stage, or, lockOnly, to resolve it and write the lock alone; then,
// when req allows them, the packages' install scripts.
func (in *Installer) npm(ctx context.Context, req Request, stage string, lockOnly bool) (npmRun, error) {
	inv := req.Invocation
	env := envmap.Of(in.environ())
	node, npmCLI, npmRoot, err := findNPM(env, in.Untrusted)
	if err != nil {
		return npmRun{}, err
	}
	path, _ := permission.SearchPath(env["PATH"], in.Untrusted)
	tools := npmTools{node: node, cli: npmCLI, root: npmRoot, path: path}
	cfg, err := readConfig(in.environ(), node)
	if err != nil {
		return npmRun{}, err
	}
	rt, err := cfg.routes()
	if err != nil {
		return npmRun{}, err
	}
	cache := filepath.Join(filepath.Dir(stage), cacheName)
	if err := privateDir(in.Root, cache); err != nil {
		return npmRun{}, err
	}
	fsutil.RemoveTree(filepath.Join(in.Root, sharedCacheName))
	if err := os.WriteFile(filepath.Join(stage, "package.json"), []byte(`{"name": "gemkit-pinned", "private": true, "description": "A package pinned by gemkit for an extension's MCP server."}`+"\n"), 0o644); err != nil {
		return npmRun{}, err
	}
	// A bare name is asked bare, as npx asks it: npm reads it as the
	// range *, for which the latest tag's version is taken only when it
	// runs on this node (engine.go); "name@latest", as the line names
	// it, takes it whatever its engines.
	run := npmRun{inv: inv, target: inv.Request(), registry: redact(cfg.RegistryFor(inv.Package)),
		route: rt, trust: cfg.trustWords(), tools: tools}
	if inv.LatestTag {
		run.target = inv.Package + "@latest"
	}
	run.network = append(slices.Clone(rt.words), run.trust...)
	var received atomic.Int64
	run.prog = &progress{w: in.Progress, terminal: in.Terminal, received: &received, bound: in.maxBytes()}
	// The proxy is said as it starts (where the install goes); how the
	// registry is trusted, with the rest, once installed (Tree.Network)
	// or when it fails.
	if lockOnly {
		run.prog.startResolve(inv, req.Server, run.registry, rt.words)
	} else {
		run.prog.start(inv, req.Server, run.registry, req.Scripts, rt.words)
	}
	latest, err := in.fetch(ctx, tools, cfg, stage, cache, lockOnly, run, &received)
	if err != nil {
		return npmRun{}, err
	}
	run.latest = latest
	run.received = received.Load()
	if req.Scripts && !lockOnly {
		if err := in.scripts(ctx, tools, stage, run); err != nil {
			return npmRun{}, err
		}
	}
	return run, nil
}

// fetch runs npm install (or, lockOnly, the resolution alone) with no
// install script, reading the configuration gemkit writes from the
// person's, with their registry tokens, which lives outside the tree
// and only for this run, and reaching the registries alone. For an
// install whose pick may depend on the latest tag, it then asks what
// that tag names (viewLatest), with the same configuration.
func (in *Installer) fetch(ctx context.Context, tools npmTools, cfg Config, stage, cache string, lockOnly bool, run npmRun, received *atomic.Int64) (*viewed, error) {
	conf, err := os.MkdirTemp(filepath.Dir(stage), ".config-")
	if err != nil {
		return nil, err
	}
	defer fsutil.RemoveTree(conf)
	if err := cfg.write(conf); err != nil {
		return nil, fmt.Errorf("writing the install's npm configuration: %w", err)
	}
	args := []string{"install", run.target, "--save-exact", "--no-audit", "--no-fund", "--no-update-notifier",
		"--loglevel=http", "--no-progress", "--prefer-online", "--color=false", "--ignore-scripts"}
	if lockOnly {
		args = append(args, "--package-lock-only")
	}
	hosts := allowedHosts(ctx, cfg, run.route)
	s := npmStep{
		args: args, dir: stage, read: []string{conf}, write: []string{stage, cache}, hosts: hosts, upstream: run.route.Upstream, received: received,
		env: append([]string{"NPM_CONFIG_USERCONFIG=" + filepath.Join(conf, "npmrc"), "NPM_CONFIG_GLOBALCONFIG=" + filepath.Join(conf, "global-npmrc"),
			"NPM_CONFIG_CACHE=" + cache}, cfg.nodeEnv(conf)...),
		bound: newWriteBound(in.maxBytes(), in.maxFiles(), stage, cache),
	}
	denied, werr := in.runNPM(ctx, tools, s, run.prog)
	var se *startError
	switch {
	case ctx.Err() != nil:
		return nil, &InterruptedError{Package: run.target}
	case errors.As(werr, &se):
		return nil, fmt.Errorf("installing %s: %w", run.target, werr)
	case s.bound.exceeded() != "":
		return nil, &InstallError{Package: run.target, Why: s.bound.exceeded(), NPM: run.prog.npmLines()}
	case werr != nil:
		return nil, run.prog.failure(run.target, run.inv, run.registry, werr, denied, hosts, run.trust)
	}
	if lockOnly || !asksLatest(run.inv) {
		return nil, nil
	}
	latest := in.viewLatest(ctx, tools, s, run)
	if ctx.Err() != nil {
		return nil, &InterruptedError{Package: run.target}
	}
	return latest, nil
}

// scripts runs the install scripts of the packages npm installed into
// stage (`npm rebuild`, which runs each package's preinstall, install
// and postinstall, and builds what has a binding.gyp), in a sandbox of
// its own: no network at all, none of the person's npm configuration,
// no npm cache but an empty one in its temporary folder, and no folder
// to write but the tree. What a script could reach there is the tree
// and what the install's sandbox lets any program read.
func (in *Installer) scripts(ctx context.Context, tools npmTools, stage string, run npmRun) error {
	run.prog.startScripts()
	s := npmStep{
		args: []string{"rebuild", "--foreground-scripts", "--no-audit", "--no-fund", "--no-update-notifier", "--offline",
			"--loglevel=http", "--no-progress", "--color=false"},
		dir: stage, write: []string{stage},
		bound: newWriteBound(in.maxBytes(), in.maxFiles(), stage, ""),
	}
	denied, werr := in.runNPM(ctx, tools, s, run.prog)
	var se *startError
	switch {
	case ctx.Err() != nil:
		return &InterruptedError{Package: run.target}
	case errors.As(werr, &se):
		return fmt.Errorf("running the install scripts of %s: %w", run.target, werr)
	case s.bound.exceeded() != "":
		return &InstallError{Package: run.target, Why: s.bound.exceeded(), NPM: run.prog.npmLines()}
	case werr != nil:
		return run.prog.scriptsFailure(run.target, werr, denied)
	}
	return nil
}

// npmStep is one run of npm in gemkit's sandbox: its arguments (after
// npm's command-line script), its working folder, the folders it reads
// beside node's and npm's installations and writes, the hosts it
// reaches (none: no network) and the variables it gets beside PATH,
// HOME, TMPDIR and npm's configuration files (NPM_CONFIG_USERCONFIG and
// NPM_CONFIG_GLOBALCONFIG name files its temporary folder does not
// hold, which npm reads as empty, unless env names others), and what
// bounds what it writes.
type npmStep struct {
	// args are npm's; nodeArgs, when set, node's in place of npm's
	// command-line script and args (engineScript).
	args, nodeArgs []string
	dir            string
	read, write    []string
	hosts          []string
	// upstream is the person's proxy of each host that has one
	// (sandbox.Policy.Upstream).
	upstream func(host string, port int) *url.URL
	env      []string
	received *atomic.Int64
	bound    *writeBound
	// stdout, when set, takes what npm prints on its standard output,
	// apart from its log (on stderr, read by the progress).
	stdout io.Writer
}

// runNPM runs the step s with the tools, its output read by prog,
// watched by its bound while it runs: what the proxy refused, and how
// npm ended.
func (in *Installer) runNPM(ctx context.Context, tools npmTools, s npmStep, prog *progress) ([]netproxy.Denial, error) {
	tmp, err := os.MkdirTemp("", "gemkit-npm-")
	if err != nil {
		return nil, err
	}
	defer fsutil.RemoveTree(tmp)
	env := append([]string{"PATH=" + strings.Join(tools.path, string(filepath.ListSeparator)), "HOME=" + tmp, "TMPDIR=" + tmp,
		"NPM_CONFIG_USERCONFIG=" + filepath.Join(tmp, "npmrc"), "NPM_CONFIG_GLOBALCONFIG=" + filepath.Join(tmp, "global-npmrc"),
		"NPM_CONFIG_CACHE=" + filepath.Join(tmp, "npm-cache"), "NO_UPDATE_NOTIFIER=1", "LANG=C.UTF-8"}, s.env...)
	args := append([]string{tools.cli}, s.args...)
	if s.nodeArgs != nil {
		args = s.nodeArgs
	}
	var stdout io.Writer = prog
	if s.stdout != nil {
		stdout = s.stdout
	}
	var mu sync.Mutex
	var denied []netproxy.Denial
	cmd := &sandbox.Command{
		Policy: sandbox.Policy{
			// Nothing of the person's is read but what is listed: npm's
			// installation, node's, what the step reads.
			ExtensionDir: tools.root, TempDir: tmp, RuntimePaths: append([]string{progsearch.Prefix(tools.node), tools.root}, s.read...),
			Caches:       s.write,
			AllowedHosts: s.hosts, Upstream: s.upstream, ReportRefusals: true,
			MaxFileBytes: uint64(s.bound.max), NoPreallocate: true,
			OwnServer: in.ownServer(),
		},
		Path: tools.node, Args: args, Dir: s.dir,
		Env: dedupEnv(env), Stdout: stdout, Stderr: prog, Received: s.received,
		OnDeny: func(d netproxy.Denial) {
			mu.Lock()
			denied = append(denied, d)
			mu.Unlock()
		},
	}
	launcher := in.Launcher
	if launcher == nil {
		launcher = &sandbox.Launcher{}
	}
	p, err := launcher.Start(ctx, cmd)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &startError{err}
	}
	exited := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.bound.watch(exited, p.Kill)
	}()
	werr := p.Wait()
	close(exited)
	<-watched
	prog.flush()
	mu.Lock()
	defer mu.Unlock()
	return denied, werr
}

// ownServer is whether a loopback port is one of gemkit's own servers
// (permission.OwnServerPort), in the person's environment read as every
// sandboxed process's (permission.ClosedOf): the proxy refuses it to
// npm even where the registry is on loopback.
func (in *Installer) ownServer() func(port int) bool {
	closed := permission.ClosedOf(envmap.Of(in.environ()).Get)
	return func(port int) bool { return permission.OwnServerPort(closed, port) }
}

// startError is npm that could not be started in the sandbox.
type startError struct{ err error }

func (e *startError) Error() string {
	return "npm could not be started in gemkit's sandbox: " + e.err.Error()
}

func (e *startError) Unwrap() error { return e.err }

// dedupEnv keeps, of each variable of env, the last.
func dedupEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	var out []string
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}
