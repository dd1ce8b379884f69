package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/gemkit/gemkit/internal/sandbox/child"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// The child's spec: what the sandbox child is told to make of the
// tool's world before it execs it (its program, rules and limits, its
// own root, its network), written whole by the parent so that the child
// decides nothing.

// childSpec is what the sandbox child is told to make of the tool's
// world: its program, rules and limits, its own root (with a mount
// namespace), and its network (childNetwork). ww is the watch of its
// writes when they are watched. A gated child execs the tool only once
// the parent says Go (startWord).
func childSpec(c *Command, gated bool, pl *runPlan, enf *Enforcement) (child.Spec, *writeWatch, error) {
	rules, overlays, sealed := pl.rules, pl.overlays, pl.sealed
	spec := child.Spec{
		Path:         c.Path,
		Argv:         append([]string{c.Path}, c.Args...),
		Rules:        rules,
		LandlockABI:  enf.LandlockABI,
		DenySockets:  enf.SeccompNet,
		DenySession:  !enf.PIDNS,
		MemoryBytes:  enf.MemoryBytes,
		FileBytes:    c.Policy.MaxFileBytes,
		PidMax:       enf.MaxProcesses,
		DenyMetadata: !enf.MountNS,
		Gated:        gated,
		// What a server stores in a bounded folder grows only as fast
		// as it writes, so that the watch of the folder stops it in time.
		DenyFallocate: c.Policy.NoPreallocate,
		// What confines Unix sockets and what makes every /proc/<pid>
		// the tool's own are the namespaces; without them the filter
		// and the rule for /proc/self stay as they are.
		AllowUnix: c.Policy.UnixSockets && enf.NetNS && enf.MountNS,
		OwnProc:   c.Policy.OwnProcesses && enf.PIDNS && enf.MountNS,
	}
	// Python's user site-packages (~/.local/lib/pythonX.Y) is a folder
	// a write: home tool of another extension could fill: a .pth file
	// there would run in this tool with this tool's permissions. The
	// runtime loads only its own installation and the tool's folder.
	spec.Env = append(append([]string(nil), c.Env...), "PYTHONNOUSERSITE=1")
	if !enf.DataRlimit {
		// A memory cgroup bounds what the whole tree uses, its swap
		// included, and the tool is in it before its exec (spawn). The
		// data rlimit counts what each process makes writable, used or
		// not (a thread's stack: RLIMIT_STACK's 8 MiB), so under a small
		// bound it refused threads the cgroup had room for, and a
		// runtime that cannot start its threads may wait forever (node
		// under 16 MB, until the timeout) where the cgroup ends it for
		// its memory.
		spec.MemoryBytes = 0
	}
	if len(c.Policy.Handed) > 0 && !enf.MountNS {
		return spec, nil, errors.New("sandbox: files are handed to the tool (credentials) only in a mount namespace of its own, which this machine does not give it")
	}
	if len(c.Policy.Replaced) > 0 && !enf.MountNS {
		return spec, nil, ErrNoMountNamespace
	}
	if enf.MountNS {
		// Every plan for an attempt with namespaces has its root
		// planned (Launcher.plan).
		if pl.root.err != nil {
			return spec, nil, pl.root.err
		}
		spec.Mounts, spec.MountBase, spec.Dir = pl.root.steps, pl.root.base, pl.root.dir
		enf.TempBytes = tempBytes(c)
	}
	var ww *writeWatch
	if enf.Proxy {
		ww = childNetwork(&spec, c, rules, overlays, sealed, *enf)
	}
	return spec, ww, nil
}

// childNetwork points the tool at the proxy (its only way out of its
// network namespace) and, for a server whose refusals are reported, at
// the sandbox's resolver, with its connect calls and writes watched; it
// returns the watch of the writes then.
func childNetwork(spec *child.Spec, c *Command, rules []PathRule, overlays []overlay, sealed []sealedFolder, enf Enforcement) *writeWatch {
	spec.ProxyPort = ProxyPort
	u := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	spec.Env = append(spec.Env, "HTTP_PROXY="+u, "HTTPS_PROXY="+u, "http_proxy="+u, "https_proxy="+u, "ALL_PROXY="+u, "NO_PROXY=", "no_proxy=")
	if !usesResolver(c, enf) {
		return nil
	}
	// The tool's names are looked up by the sandbox's resolver
	// (see netproxy.Proxy.ServeResolver), which its own resolv.conf names and
	// Landlock lets it read.
	spec.ResolverPort = netproxy.ResolverPort
	spec.NotifyConnect = child.SeccompSupported
	// Its writes are watched too: reported when refused, and
	// the new names of the sealed folders made by gemkit.
	spec.NotifyWrites = spec.NotifyConnect
	spec.NotifyRemoves = spec.NotifyConnect && len(sealed) > 0
	ww := newWriteWatch(nil, c, rules, overlays, sealed, spec.Mounts)
	spec.Mounts = append(spec.Mounts, child.Mount{Kind: child.MountFile, Path: "/etc/resolv.conf", Content: netproxy.ResolvConf})
	spec.Rules = append(spec.Rules, child.PathRule{Path: "/etc/resolv.conf", File: true, Why: "the sandbox's resolver"})
	return ww
}

// usesResolver says whether the tool gets the sandbox's resolver (and
// the watch of its connect calls and writes): a server whose refusals
// are reported, behind the proxy in a root of its own. The child is
// started knowing it, before its spec is made: it binds the resolver's
// port, a privileged one.
func usesResolver(c *Command, enf Enforcement) bool {
	return enf.Proxy && c.Policy.ReportRefusals && enf.MountNS
}

func tempBytes(c *Command) uint64 {
	if c.Policy.TempBytes == 0 {
		return DefaultTempBytes
	}
	return c.Policy.TempBytes
}

// rootPlan is what rootSteps gave.
type rootPlan struct {
	steps     []child.Mount
	base, dir string
	err       error
}

func planRoot(c *Command, rules []PathRule, overlays []overlay) *rootPlan {
	r := &rootPlan{}
	r.steps, r.base, r.dir, r.err = rootSteps(c, rules, overlays)
	return r
}

// rootSteps are the steps that build c's own root in its mount
// namespace, the folder the build starts on and the working directory.
func rootSteps(c *Command, rules []PathRule, overlays []overlay) (steps []child.Mount, base, dir string, err error) {
	links := append([]string{c.Path, c.Dir, c.Policy.TempDir, c.Policy.Workspace, c.Policy.Home, c.Policy.ExtensionDir}, c.Policy.RuntimePaths...)
	links = append(append(append(links, c.Policy.Caches...), systemReadDirs...), systemReadFiles...)
	realTmp, err := filepath.EvalSymlinks(c.Policy.TempDir)
	if err != nil {
		return nil, "", "", fmt.Errorf("temp dir: %w", err)
	}
	steps = mountPlan(rules, overlays, realTmp, tempBytes(c), links)
	dir = c.Dir
	if dir == "" {
		dir = "/"
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	// The working directory exists in the new root even where the read
	// scope does not reach it (an empty folder then).
	steps = append(steps, child.Mount{Kind: child.MountDir, Path: dir})
	steps = append(steps, replacedSteps(c.Policy.Replaced)...)
	return append(steps, handedSteps(c.Policy.Handed)...), realTmp, dir, nil
}

// replacedSteps bind each replacing folder read-only over the one it
// replaces, after every other bind (which shows the replaced folder,
// and may show a folder holding it).
func replacedSteps(replaced []Handed) []child.Mount {
	var steps []child.Mount
	for _, r := range replaced {
		// Both as the child's binds take them: with no link on the way.
		target, source := r.Target, r.Source
		if real, err := filepath.EvalSymlinks(target); err == nil {
			target = real
		}
		if real, err := filepath.EvalSymlinks(source); err == nil {
			source = real
		}
		steps = append(steps, child.Mount{Kind: child.MountBind, Path: target, Source: source})
	}
	return steps
}

// The bounds of the tmpfs that holds handed files: a few files, and
// what the tool writes beside them (a client library's logs), for the
// run only.
const (
	handedDirBytes  = 4 << 20
	handedDirInodes = 256
)

// handedSteps show each handed file read-only at its target, on a tmpfs
// of its own covering the target's folder (after the caches' binds,
// which hold the folder).
func handedSteps(handed []Handed) []child.Mount {
	var steps []child.Mount
	dirs := map[string]bool{}
	for _, h := range handed {
		if d := filepath.Dir(h.Target); !dirs[d] {
			dirs[d] = true
			steps = append(steps, child.Mount{Kind: child.MountPrivateDir, Path: d, Size: handedDirBytes, Inodes: handedDirInodes})
		}
	}
	for _, h := range handed {
		steps = append(steps, child.Mount{Kind: child.MountBind, Path: h.Target, Source: h.Source, File: true})
	}
	return steps
}

// RootPlan returns the steps that build c's own root, as a run with a
// mount namespace would take them: for tools that compare (the benchmark
// gives bubblewrap the same view).
func RootPlan(c *Command) ([]child.Mount, error) {
	rules, overlays, err := c.Policy.rules(false)
	if err != nil {
		return nil, err
	}
	steps, _, _, err := rootSteps(c, rules, overlays)
	return steps, err
}
