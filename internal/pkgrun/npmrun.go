package pkgrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/langserver"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/runnerline"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// npm run in gemkit's sandbox for a request: to install it into a
// staged folder, or to resolve it and write the lock alone.

// stage makes a new folder, its name starting with prefix, in the
// folder of req's extension's trees.
func (in *Installer) stage(req Request, prefix string) (dir, stage string, err error) {
	if req.Ecosystem == runnerline.PyPI {
		return "", "", &runnerline.PyPIError{Invocation: req.Invocation}
	}
	if dir, err = extDir(in.Root, req.Extension); err != nil {
		return "", "", err
	}
	if err := privateDirs(in.Root, dir); err != nil {
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
	target, registry string
	received         int64
	prog             *progress
}

// npm runs npm in gemkit's sandbox to install what req names into
// stage, or, lockOnly, to resolve it and write the lock alone.
func (in *Installer) npm(ctx context.Context, req Request, stage string, lockOnly bool) (npmRun, error) {
	inv := req.Invocation
	env := envMap(in.environ())
	node, npmCLI, npmRoot, err := findNPM(env, in.Untrusted)
	if err != nil {
		return npmRun{}, err
	}
	cfg, err := ReadConfig(env, node)
	if err != nil {
		return npmRun{}, err
	}
	dir := filepath.Dir(stage)
	cache := filepath.Join(in.Root, ".npm-cache")
	if err := privateDirs(in.Root, cache); err != nil {
		return npmRun{}, err
	}
	// The configuration, with the person's registry tokens, lives
	// outside the tree and only for the install.
	conf, err := os.MkdirTemp(dir, ".config-")
	if err != nil {
		return npmRun{}, err
	}
	defer fsutil.RemoveTree(conf)
	if err := cfg.write(conf); err != nil {
		return npmRun{}, fmt.Errorf("writing the install's npm configuration: %w", err)
	}
	tmp, err := os.MkdirTemp("", "gemkit-npm-")
	if err != nil {
		return npmRun{}, err
	}
	defer fsutil.RemoveTree(tmp)
	if err := os.WriteFile(filepath.Join(stage, "package.json"), []byte(`{"name": "gemkit-pinned", "private": true, "description": "A package pinned by gemkit for an extension's MCP server."}`+"\n"), 0o644); err != nil {
		return npmRun{}, err
	}
	run := npmRun{target: inv.Package + "@" + inv.Spec, registry: redact(cfg.RegistryFor(inv.Package))}
	if inv.Spec == "" {
		run.target = inv.Package + "@latest"
	}
	args := []string{npmCLI, "install", run.target, "--save-exact", "--no-audit", "--no-fund", "--no-update-notifier",
		"--loglevel=http", "--no-progress", "--prefer-online", "--color=false"}
	if lockOnly {
		args = append(args, "--package-lock-only")
	}
	if req.Scripts && !lockOnly {
		args = append(args, "--foreground-scripts")
	} else {
		args = append(args, "--ignore-scripts")
	}
	path, _ := permission.SearchPath(env["PATH"], in.Untrusted)
	runtime := []string{langserver.Prefix(node), npmRoot, conf}
	hosts := allowedHosts(ctx, cfg)
	var received atomic.Int64
	run.prog = &progress{w: in.Progress, terminal: in.Terminal, received: &received}
	if lockOnly {
		run.prog.startResolve(inv, req.Server, run.registry)
	} else {
		run.prog.start(inv, req.Server, run.registry, req.Scripts)
	}
	var mu sync.Mutex
	var denied []netproxy.Denial
	cmd := &sandbox.Command{
		Policy: sandbox.Policy{
			// Nothing of the person's is read but what is listed: npm's
			// installation, node's, the configuration written above.
			ExtensionDir: npmRoot, TempDir: tmp, RuntimePaths: runtime,
			Caches:       []string{stage, cache},
			AllowedHosts: hosts, ReportRefusals: true,
			OwnServer: func(port int) bool {
				return permission.OwnServerPort(permission.ClosedInputs{Home: env["HOME"], Getenv: func(k string) string { return env[k] }}, port)
			},
		},
		Path: node, Args: args, Dir: stage,
		Env: []string{"PATH=" + strings.Join(path, string(filepath.ListSeparator)), "HOME=" + tmp, "TMPDIR=" + tmp,
			"NPM_CONFIG_USERCONFIG=" + filepath.Join(conf, "npmrc"), "NPM_CONFIG_GLOBALCONFIG=" + filepath.Join(conf, "global-npmrc"),
			"NPM_CONFIG_CACHE=" + cache, "NO_UPDATE_NOTIFIER=1", "LANG=C.UTF-8"},
		Stdout: run.prog, Stderr: run.prog, Received: &received,
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
			return npmRun{}, &InterruptedError{Package: run.target}
		}
		return npmRun{}, fmt.Errorf("installing %s: npm could not be started in gemkit's sandbox: %w", run.target, err)
	}
	werr := p.Wait()
	run.prog.flush()
	if ctx.Err() != nil {
		return npmRun{}, &InterruptedError{Package: run.target}
	}
	if werr != nil {
		mu.Lock()
		defer mu.Unlock()
		return npmRun{}, run.prog.failure(run.target, inv, run.registry, werr, denied, hosts)
	}
	run.received = received.Load()
	return run, nil
}
