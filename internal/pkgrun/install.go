package pkgrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/progsearch"
	"github.com/gemkit/gemkit/internal/runnerline"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// Root is the folder of the trees gemkit installed for the extensions
// of the person whose home is home: ~/.local/share/gemkit/packages,
// inside ~/.local/share/gemkit, which is closed to every sandboxed
// process (permission.ClosedPaths). Each extension has a folder there,
// and each pinned server a tree in it; a server reads its own tree,
// read-only. It does not follow XDG_DATA_HOME, as the servers' data
// folders do not.
func Root(home string) string {
	return gemkitdir.Packages(home)
}

// Installer installs the package a runner's line names into a tree of
// its own, with npm run in gemkit's sandbox.
type Installer struct {
	// Launcher starts npm in the sandbox.
	Launcher *sandbox.Launcher
	// Environ is the person's environment: PATH, to find node and npm,
	// HOME and the variables of their npm configuration. Nil is
	// os.Environ().
	Environ []string
	// Untrusted are the folders whose programs are never started, even
	// to install (permission.Untrusted: the workspace, ...).
	Untrusted []string
	// Root holds the trees (Root's).
	Root string
	// Progress, when set, is told what the install fetches and how much
	// so far; Terminal rewrites one line there rather than adding lines.
	Progress io.Writer
	Terminal bool
	// MaxBytes and MaxFiles bound what an install writes, while npm
	// writes it (bound.go); 0 is DefaultMaxBytes, DefaultMaxFiles.
	MaxBytes int64
	MaxFiles int
}

// Request is one server's package to install.
type Request struct {
	// Extension and Server name the server the tree is for.
	Extension, Server string
	runnerline.Invocation
	// Scripts runs the packages' install scripts, in the install's
	// sandbox: the person allowed it (--allow-install-scripts).
	Scripts bool
}

// Tree is an installed package.
type Tree struct {
	// Dir is the tree's folder: its package.json and package-lock.json,
	// and node_modules.
	Dir string
	// Package and Version are the package installed; Newest that the
	// line asked for no version (the registry's latest).
	Package, Version string
	Newest           bool
	// Integrity is the package's own, from the registry (the lock's).
	Integrity string
	// Program is the slash path in Dir of the program the server runs
	// (the package's bin the line names, or its own).
	Program string
	// Lock is the SHA-256 of the tree's package-lock.json: every
	// package's version and integrity.
	Lock string
	// Registry is where it came from (without credentials).
	Registry string
	// Packages, Files and Bytes count the tree; Fetched is what came
	// through the sandbox's proxy (a package npm's cache held is not
	// fetched again).
	Packages, Files int
	Bytes, Fetched  int64
	// ScriptsRun: the install ran the packages' install scripts.
	// ScriptsNotRun are the packages that have some, which did not run.
	ScriptsRun    bool
	ScriptsNotRun []string
	// Network says, in words, which of the person's settings the
	// install reached and trusted the registry with (their proxy,
	// NODE_EXTRA_CA_CERTS, npm's cafile, ca or strict-ssl): none of
	// them reaches the server.
	Network []string
	// Engine is what the node that starts the server made of the pick
	// (engine.go): why not the latest, and engines that do not fit.
	Engine Engine
	// engines is the package's own package.json's engines.
	engines json.RawMessage
}

// Summary says t in words: the package, how many packages, files and
// bytes, from where, and its install scripts.
func (t Tree) Summary() string {
	s := fmt.Sprintf("%s %s", t.Package, t.Version)
	switch {
	case t.Engine.Choice() != "":
		s += " (" + t.Engine.Choice() + ")"
	case t.Newest:
		s += " (the newest)"
	}
	s += fmt.Sprintf(", %d packages, %d files, %s, from %s", t.Packages, t.Files, Size(t.Bytes), t.Registry)
	switch {
	case t.ScriptsRun:
		s += ", install scripts run in the install's sandbox as you allowed"
	default:
		s += ", install scripts not run"
	}
	return s
}

// Size is n bytes in words.
func Size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// InterruptedError says the install was stopped before it ended
// (Ctrl-C, a cancelled context): nothing of it was kept.
type InterruptedError struct{ Package string }

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("the install of %s was interrupted: nothing of it was kept, and what was pinned before stays", e.Package)
}

// InstallError is npm's failure in words, with npm's own lines.
type InstallError struct {
	Package string
	// Code is npm's error code (E404, EINTEGRITY, ...), "" when it gave
	// none.
	Code string
	Why  string
	// NPM are npm's error lines, escaped.
	NPM []string
}

func (e *InstallError) Error() string {
	s := fmt.Sprintf("installing %s failed: %s; nothing was kept", e.Package, e.Why)
	if len(e.NPM) > 0 {
		s += ". npm said:\n  " + strings.Join(e.NPM, "\n  ")
	}
	return s
}

func (in *Installer) environ() []string {
	if in.Environ != nil {
		return in.Environ
	}
	return os.Environ()
}

// Install installs the package req names into a new tree under the
// Installer's Root, and returns it. npm runs in gemkit's sandbox: it
// reads its own installation, the node program and a configuration
// gemkit wrote from the person's (ReadConfig), writes only the tree
// being staged and npm's cache, and reaches no host but the registries
// of that configuration, through the sandbox's proxy. Install scripts
// do not run unless req.Scripts. The tree is staged in a folder of its
// own and renamed into place once npm succeeded and it was checked; an
// install that fails or is interrupted (ctx) leaves nothing behind.
func (in *Installer) Install(ctx context.Context, req Request) (Tree, error) {
	dir, stage, err := in.stage(req, ".staging-")
	if err != nil {
		return Tree{}, err
	}
	kept := false
	defer func() {
		if !kept {
			fsutil.RemoveTree(stage)
		}
	}()
	run, err := in.npm(ctx, req, stage, false)
	if err != nil {
		return Tree{}, err
	}
	t, err := inspect(stage, req.Invocation, req.Scripts, limits{in.maxBytes(), in.maxFiles()})
	if err != nil {
		return Tree{}, fmt.Errorf("installing %s: %w; nothing was kept", run.target, err)
	}
	t.Registry, t.Fetched, t.Newest, t.Network = run.registry, run.received, req.Spec == "", run.network
	t.Engine = in.engine(ctx, run, t.Version, t.engines)
	if ctx.Err() != nil {
		return Tree{}, &InterruptedError{Package: run.target}
	}
	final := filepath.Join(dir, slug(req.Server)+"@"+slug(t.Version)+"-"+strings.TrimPrefix(filepath.Base(stage), ".staging-"))
	if err := os.Rename(stage, final); err != nil {
		return Tree{}, err
	}
	kept = true
	t.Dir = final
	run.prog.done(t)
	return t, nil
}

// findNPM finds node and npm on the person's PATH, outside the folders
// a tool may write: node's real path, npm's command-line script and
// npm's installation folder.
func findNPM(env map[string]string, untrusted []string) (node, cli, root string, err error) {
	look := progsearch.Look(env["PATH"], untrusted)
	n, err := look("node")
	if err != nil {
		return "", "", "", fmt.Errorf("installing an npm package needs node: %w", err)
	}
	node = fsutil.RealPath(n)
	var candidates []string
	if p, err := look("npm"); err == nil {
		candidates = append(candidates, fsutil.RealPath(p))
	}
	candidates = append(candidates, filepath.Join(filepath.Dir(filepath.Dir(node)), "lib", "node_modules", "npm", "bin", "npm-cli.js"))
	for _, c := range candidates {
		if filepath.Base(c) != "npm-cli.js" {
			continue
		}
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			return node, c, filepath.Dir(filepath.Dir(c)), nil
		}
	}
	return "", "", "", fmt.Errorf("installing an npm package needs npm beside node (%s): its npm-cli.js was not found (looked at %s)", node, strings.Join(candidates, ", "))
}

// allowedHosts are the hosts the install may reach: each registry's,
// and, for a registry whose name this machine resolves to a private
// address (a company mirror), that address too, for the sandbox's proxy
// reaches a private address only when its allowlist names it. A
// registry reached through the person's proxy (rt) is not looked up:
// that proxy resolves it.
func allowedHosts(ctx context.Context, cfg Config, rt route) []string {
	hosts := cfg.Hosts()
	for _, h := range slices.Clone(hosts) {
		name, port, _ := net.SplitHostPort(h)
		if net.ParseIP(name) != nil || name == "localhost" || rt.upstream[strings.ToLower(h)] != nil {
			continue
		}
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, name)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if a.IP.IsPrivate() || a.IP.IsLoopback() || !a.IP.IsGlobalUnicast() || reserved(a.IP) {
				if ip := a.IP.To4(); ip != nil {
					hosts = append(hosts, net.JoinHostPort(ip.String(), port))
				}
			}
		}
	}
	return hosts
}

// reserved are the documentation and benchmarking ranges, which the
// proxy takes for special-purpose addresses too.
func reserved(ip net.IP) bool {
	for _, c := range []string{"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "198.18.0.0/15", "100.64.0.0/10"} {
		_, n, _ := net.ParseCIDR(c)
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// inspect checks the tree npm staged in dir and says what it holds: the
// package the line asked for, at one version, with the program to run,
// and nothing it does not pin (count).
// The tree was written by npm in the sandbox from what the registry
// sent: it is read through its Root.
func inspect(dir string, inv runnerline.Invocation, scripts bool, lim limits) (Tree, error) {
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		return Tree{}, err
	}
	defer root.Close()
	l, data, err := readLock(root)
	if err != nil {
		return Tree{}, err
	}
	at := "node_modules/" + inv.Package
	e, ok := l.Packages[at]
	if !ok || e.Link || e.Version == "" {
		return Tree{}, fmt.Errorf("npm installed no package %s (its lock has no %s)", inv.Package, at)
	}
	sum := sha256.Sum256(data)
	t := Tree{Package: inv.Package, Version: e.Version, Integrity: e.Integrity, Lock: hex.EncodeToString(sum[:]),
		Packages: len(l.installed()), ScriptsRun: scripts}
	if !scripts {
		t.ScriptsNotRun = l.withScripts()
	}
	var manifest struct {
		Name    string          `json:"name"`
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
		Engines json.RawMessage `json:"engines"`
	}
	b, err := root.ReadFile(at+"/package.json", 1<<20)
	if err != nil {
		return Tree{}, fmt.Errorf("the package's package.json: %w", err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		return Tree{}, fmt.Errorf("the package's package.json is not JSON: %w", err)
	}
	if manifest.Name != inv.Package || manifest.Version != e.Version {
		return Tree{}, fmt.Errorf("the package installed at %s is %s %s, not %s %s as the lock says", at, manifest.Name, manifest.Version, inv.Package, e.Version)
	}
	program, err := chooseProgram(inv, manifest.Bin)
	if err != nil {
		return Tree{}, err
	}
	rel := path.Clean(at + "/" + strings.TrimPrefix(program, "./"))
	if !strings.HasPrefix(rel, at+"/") {
		return Tree{}, fmt.Errorf("the program %q of %s leads out of its package", program, inv.Package)
	}
	real, err := root.Resolve(rel)
	if err != nil {
		return Tree{}, fmt.Errorf("the program %s of %s: %w", program, inv.Package, err)
	}
	fi, err := root.Stat(real)
	switch {
	case err != nil:
		return Tree{}, fmt.Errorf("the program %s of %s: %w", program, inv.Package, err)
	case !fi.Mode().IsRegular():
		return Tree{}, fmt.Errorf("the program %s of %s is not a regular file", program, inv.Package)
	case fi.Mode()&0o111 == 0:
		return Tree{}, fmt.Errorf("npm did not make the program %s of %s executable", program, inv.Package)
	}
	t.Program, t.engines = real, manifest.Engines
	if err := t.count(root, lim); err != nil {
		return Tree{}, err
	}
	return t, nil
}

// limits are what a tree may hold (Installer.MaxBytes, MaxFiles).
type limits struct {
	bytes int64
	files int
}

// count counts the files and bytes of the tree root into t, and refuses
// what gemkit does not pin: a link that leads out of the tree (the
// server, which reads its tree alone, could not read through it, and
// what it names is no part of what the person agreed to), an entry that
// is neither a file, a folder nor a link (a FIFO a script made), a
// file at the bound (the sandbox cut it there: MaxFileBytes), and a
// tree past the bounds.
func (t *Tree) count(root *fsutil.Root, lim limits) error {
	err := root.Walk(".", func(d *fsutil.Root, name string, de fs.DirEntry) error {
		switch typ := de.Type(); {
		case typ&fs.ModeSymlink != 0:
			target, err := d.Readlink(de.Name())
			if err != nil {
				return err
			}
			if _, err := root.Resolve(name); errors.Is(err, fsutil.ErrOutside) {
				return fmt.Errorf("%s is a link to %s, which leads out of the tree: gemkit pins only what the tree holds (an install script made it?)", printable(name), printable(target))
			}
			return nil
		case typ.IsDir():
			return nil
		case !typ.IsRegular():
			return fmt.Errorf("%s is neither a file, a folder nor a link (%s): gemkit pins only files, folders and links", printable(name), typ.Type())
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		t.Files++
		t.Bytes += fi.Size()
		switch {
		case fi.Size() >= lim.bytes:
			return fmt.Errorf("the file %s reached the %s an install may write", printable(name), Size(lim.bytes))
		case t.Bytes > lim.bytes:
			return fmt.Errorf("the tree's files come to more than the %s an install may write", Size(lim.bytes))
		case t.Files > lim.files:
			return fmt.Errorf("the tree holds more than the %d files an install may write", lim.files)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checking the tree: %w", err)
	}
	return nil
}

// chooseProgram picks the program of a package's bin field (a path, or
// programs by name) as npx does: the one the line names; else the only
// one; else the one named as the package without its scope.
func chooseProgram(inv runnerline.Invocation, raw json.RawMessage) (string, error) {
	unscoped := inv.Package[strings.LastIndex(inv.Package, "/")+1:]
	bins := map[string]string{}
	var one string
	if len(raw) > 0 && json.Unmarshal(raw, &one) == nil {
		bins[unscoped] = one
	} else if len(raw) > 0 {
		if err := json.Unmarshal(raw, &bins); err != nil {
			return "", fmt.Errorf("the bin field of %s's package.json is neither a path nor programs by name", inv.Package)
		}
	}
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	slices.Sort(names)
	switch {
	case len(bins) == 0:
		return "", fmt.Errorf("%s has no program to run (its package.json has no bin)", inv.Package)
	case inv.Program != "":
		if p, ok := bins[inv.Program]; ok {
			return p, nil
		}
		return "", fmt.Errorf("%s has no program %s (its programs: %s)", inv.Package, inv.Program, strings.Join(names, ", "))
	case len(bins) == 1:
		return bins[names[0]], nil
	}
	if p, ok := bins[unscoped]; ok {
		return p, nil
	}
	return "", fmt.Errorf("%s has several programs (%s) and none named %s, so %s would not know which to run either", inv.Package, strings.Join(names, ", "), unscoped, inv.Runner)
}

// privateDir makes dir, a folder of the trees under root, 0700, and
// checks it as every private folder of gemkit's is (sandbox.PrivateDir):
// no folder on the way from the home folder whose Packages root is (from
// root's parent, for a root elsewhere) is a link, since a link planted
// there would send the install's writes, and the server's reads,
// elsewhere; and dir is this user's own, that no one else may enter.
func privateDir(root, dir string) error {
	home := filepath.Dir(root)
	if h := filepath.Dir(filepath.Dir(filepath.Dir(home))); gemkitdir.Packages(h) == filepath.Clean(root) {
		home = h
	}
	return sandbox.PrivateDir(home, dir)
}

// slug is s fit to be part of a file name.
func slug(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 || b[0] == '.' {
		b = append([]byte{'_'}, b...)
	}
	return string(b)
}

// Prune removes, from the folder of the extension ext under root,
// every tree but those in keep (their folders), and what an install
// left there: the trees no record pins any longer. The extension's npm
// cache stays. The caller holds the extension's lock (Lock).
func Prune(root, ext string, keep []string) error {
	dir, err := extDir(root, ext)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.Name() == lockFileName || e.Name() == cacheName || slices.Contains(keep, p) {
			continue
		}
		if err := fsutil.RemoveTree(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Remove removes every tree of the extension ext under root: it is
// being uninstalled.
func Remove(root, ext string) error {
	dir, err := extDir(root, ext)
	if err != nil {
		return err
	}
	return fsutil.RemoveTree(dir)
}

// extDir is the folder of the extension ext's trees under root; a name
// that is not one plain component (an extension's name is letters,
// digits and dashes) is refused rather than joined.
func extDir(root, ext string) (string, error) {
	if ext == "" || ext != filepath.Base(ext) || strings.HasPrefix(ext, ".") || strings.ContainsAny(ext, `/\`) {
		return "", fmt.Errorf("%q is not an extension's name", ext)
	}
	return filepath.Join(root, ext), nil
}
