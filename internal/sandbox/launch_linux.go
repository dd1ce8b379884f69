package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/sandbox/child"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"golang.org/x/sys/unix"
)

// Process is a running sandboxed tool.
type Process struct {
	cmd         *exec.Cmd
	proxy       *netproxy.Proxy
	proxyDone   chan struct{}
	connects    *connectWatch // the tool's connect calls (ReportRefusals)
	Enforcement Enforcement
	// Warnings lists every protection that is missing because the caller
	// allowed running unconfined. Show them loudly.
	Warnings []string

	done   chan struct{} // closed when Wait returns
	cgroup *cgroup
	logger *slog.Logger
	// OOMKilled is set by Wait when the kernel killed a process of the
	// tool for going past its memory bound.
	OOMKilled bool
	// release gives back the guarded paths the run held (placeholders).
	release func()
	// guards ends the watch that stops the tool if a guarded path bound
	// into its root is removed or replaced meanwhile, or a protected name
	// is created, and returns what happened (GuardRemovedError,
	// ProtectedNameError).
	guards func() error
}

// nsAttempt is one way to create the child's namespaces, tried in order.
type nsAttempt struct {
	flags  uintptr
	userns bool
}

// Start starts c under the sandbox. It returns after the tool has been
// exec'd (or failed to be), so errors in setting up the sandbox come back
// from Start, not Wait. Cancelling ctx kills the tool and everything it
// started.
func (l *Launcher) Start(ctx context.Context, c *Command) (*Process, error) {
	// With a mount namespace the folders of other extensions inside the
	// write scope are read-only binds; without one they are split out of
	// the scope.
	// A server (ReportRefusals), whose calls that write are watched, has
	// no placeholder made for its absent protected names where the
	// kernel lets gemkit make new names for it (sealedRules).
	var nsRules []PathRule
	var overlays []overlay
	var sealed []sealedFolder
	var err error
	if c.Policy.ReportRefusals && child.SeccompSupported && supervisesWrites() && !l.NoNamespaces && !l.NoSealing {
		nsRules, overlays, sealed, err = c.Policy.sealedRules()
	} else {
		nsRules, overlays, err = c.Policy.rules(false)
	}
	if err != nil {
		return nil, err
	}
	splitRules, err := c.Policy.Rules()
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(c.Path, "/") {
		return nil, fmt.Errorf("sandbox: program path %q is not absolute", c.Path)
	}
	abi := child.LandlockABI()
	if l.noLandlock {
		abi = 0
	}
	var reasons []string
	if abi == 0 {
		reasons = append(reasons, "Landlock is not available in this kernel (or disabled at boot), so the filesystem scopes cannot be enforced")
	}

	var attempts []nsAttempt
	if !l.NoNamespaces {
		base := uintptr(unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS)
		attempts = append(attempts, nsAttempt{flags: base | unix.CLONE_NEWUSER, userns: true})
		if os.Getuid() == 0 {
			attempts = append(attempts, nsAttempt{flags: base})
		}
	}
	var held []heldPath
	var w *guardWatcher
	var guards *guardRun
	if len(attempts) > 0 {
		if held, err = l.hold(overlays); err != nil {
			return nil, err
		}
		if w, err = l.guardWatcher(overlays); err == nil && w != nil {
			guards, err = w.watch(overlays)
		}
		if err != nil {
			l.release(held)
			return nil, err
		}
	}
	var g *gate
	if c.Gate != nil {
		g = runGate(ctx, c.Gate)
	}
	p, err := l.startWith(ctx, c, g, attempts, nsRules, overlays, sealed, splitRules, abi, reasons)
	if guards != nil && (p == nil || !p.Enforcement.MountNS) {
		w.unwatch(guards)
		guards = nil
	}
	if p == nil {
		l.release(held)
		return nil, err
	}
	p.release = func() { l.release(held) }
	if guards != nil {
		p.guards = func() error { return w.unwatch(guards) }
		w.arm(guards, p.Kill)
	}
	return p, err
}

// guardWatcher returns the launcher's watcher of guarded paths, made at
// the first run that has some.
func (l *Launcher) guardWatcher(overlays []overlay) (*guardWatcher, error) {
	if !slices.ContainsFunc(overlays, func(o overlay) bool { return o.guarded }) {
		return nil, nil
	}
	l.guardMu.Lock()
	defer l.guardMu.Unlock()
	if l.guards == nil {
		w, err := newGuardWatcher()
		if err != nil {
			return nil, err
		}
		l.guards = w
	}
	return l.guards, nil
}

// startWith tries each way of making namespaces, then none.
func (l *Launcher) startWith(ctx context.Context, c *Command, g *gate, attempts []nsAttempt, nsRules []PathRule, overlays []overlay, sealed []sealedFolder, splitRules []PathRule, abi int, reasons []string) (*Process, error) {
	var lastNSErr error
	for _, a := range attempts {
		p, err := l.start(ctx, c, g, nsRules, overlays, sealed, abi, a, reasons)
		if err == nil || !isNamespaceRefusal(err) {
			return p, err
		}
		lastNSErr = err
		l.logger().Debug("sandbox: namespaces refused", "userns", a.userns, "err", err)
	}
	// No namespaces: seccomp must deny the network, and nothing can give
	// the tool a proxy-only network.
	why := "namespaces are disabled for this run"
	if lastNSErr != nil {
		why = "the kernel refused to create namespaces (" + lastNSErr.Error() + ")"
	}
	if c.Policy.NeedsNetwork() {
		reasons = append(reasons, "network.allowedHosts needs a private network namespace whose only exit is the proxy, but "+why)
	} else if !child.SeccompSupported {
		reasons = append(reasons, "no network namespace ("+why+") and no seccomp filter for this CPU architecture, so network access cannot be denied")
	}
	return l.start(ctx, c, g, splitRules, nil, nil, abi, nsAttempt{}, reasons)
}

func isNamespaceRefusal(err error) bool {
	var se *os.SyscallError
	if errors.As(err, &se) {
		err = se.Err
	}
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSPC) ||
		errors.Is(err, unix.EACCES) || errors.Is(err, unix.EUSERS)
}

func (l *Launcher) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

func (l *Launcher) start(ctx context.Context, c *Command, g *gate, rules []PathRule, overlays []overlay, sealed []sealedFolder, abi int, ns nsAttempt, reasons []string) (proc *Process, err error) {
	// A gate that has already refused (each attempt asks again) spares
	// the cgroup, the child and its mounts of a program that never runs.
	if err := g.failed(); err != nil {
		return nil, err
	}
	netns := ns.flags&unix.CLONE_NEWNET != 0
	enf := Enforcement{
		LandlockABI: abi,
		UserNS:      ns.userns,
		NetNS:       netns,
		PIDNS:       ns.flags&unix.CLONE_NEWPID != 0,
		Proxy:       netns && c.Policy.needsProxy(),
		Seccomp:     child.SeccompSupported,
		SeccompNet:  !netns && !c.Policy.NeedsNetwork() && child.SeccompSupported,
	}
	if enf.PIDNS && pidnsPidMax() {
		enf.MaxProcesses = DefaultMaxProcesses
	}
	enf.MountNS = ns.flags&unix.CLONE_NEWNS != 0
	if len(reasons) > 0 && !l.AllowUnconfined {
		return nil, &UnenforceableError{Reasons: reasons}
	}
	memBytes := c.Policy.MemoryBytes
	if memBytes == 0 {
		memBytes = DefaultMemoryBytes
	}
	enf.MemoryBytes = memBytes
	var cg *cgroup
	if !l.NoCgroup {
		// The PID namespace's pid_max bounds processes where the kernel
		// has it; else the cgroup does.
		procs := DefaultMaxProcesses
		if enf.MaxProcesses > 0 {
			procs = 0
		}
		l.cgOnce.Do(func() { l.cg = findCgroups() })
		if cg, err = l.cg.create(memBytes, procs); err != nil {
			l.logger().Debug("sandbox: no memory cgroup", "err", err)
			cg = nil
		}
	}
	if cg != nil {
		enf.Memory = "cgroup " + cg.version
		// Unless a Process owns it, the cgroup goes on every return
		// (after fail has waited for the child).
		defer func() {
			if proc == nil {
				_ = cg.remove()
			}
		}()
	} else {
		enf.Memory = "rlimit"
	}
	var warnings []string
	for _, r := range reasons {
		warnings = append(warnings, "UNCONFINED: "+r)
	}

	exe := l.Exe
	if exe == "" {
		exe = "/proc/self/exe"
	}
	// Python's user site-packages (~/.local/lib/pythonX.Y) is a folder
	// a write: home tool of another extension could fill: a .pth file
	// there would run in this tool with this tool's permissions. The
	// runtime loads only its own installation and the tool's folder.
	env := append(append([]string(nil), c.Env...), "PYTHONNOUSERSITE=1")
	spec := child.Spec{
		Path:         c.Path,
		Argv:         append([]string{c.Path}, c.Args...),
		Rules:        rules,
		LandlockABI:  abi,
		DenySockets:  enf.SeccompNet,
		DenySession:  !enf.PIDNS,
		MemoryBytes:  memBytes,
		PidMax:       enf.MaxProcesses,
		AddressSpace: cg == nil,
		DenyMetadata: !enf.MountNS,
		Gated:        g != nil,
		// What a server stores in a bounded folder grows only as fast
		// as it writes, so that the watch of the folder stops it in time.
		DenyFallocate: c.Policy.NoPreallocate,
		// What confines Unix sockets and what makes every /proc/<pid>
		// the tool's own are the namespaces; without them the filter
		// and the rule for /proc/self stay as they are.
		AllowUnix: c.Policy.UnixSockets && enf.NetNS && enf.MountNS,
		OwnProc:   c.Policy.OwnProcesses && enf.PIDNS && enf.MountNS,
	}
	if len(c.Policy.Handed) > 0 && !enf.MountNS {
		return nil, errors.New("sandbox: files are handed to the tool (credentials) only in a mount namespace of its own, which this machine does not give it")
	}
	var ww *writeWatch
	if enf.MountNS {
		var err error
		if spec.Mounts, spec.MountBase, spec.Dir, err = rootSteps(c, rules, overlays); err != nil {
			return nil, err
		}
		enf.TempBytes = tempBytes(c)
	}
	if enf.Proxy {
		spec.ProxyPort = ProxyPort
		u := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
		env = append(env, "HTTP_PROXY="+u, "HTTPS_PROXY="+u, "http_proxy="+u, "https_proxy="+u, "ALL_PROXY="+u, "NO_PROXY=", "no_proxy=")
		if c.Policy.ReportRefusals && enf.MountNS {
			// The tool's names are looked up by the sandbox's resolver
			// (see ServeResolver), which its own resolv.conf names and
			// Landlock lets it read.
			spec.ResolverPort = netproxy.ResolverPort
			spec.NotifyConnect = child.SeccompSupported
			// Its writes are watched too: reported when refused, and
			// the new names of the sealed folders made by gemkit.
			spec.NotifyWrites = spec.NotifyConnect
			spec.NotifyRemoves = spec.NotifyConnect && len(sealed) > 0
			ww = newWriteWatch(nil, c, rules, overlays, sealed, spec.Mounts)
			spec.Mounts = append(spec.Mounts, child.Mount{Kind: child.MountFile, Path: "/etc/resolv.conf", Content: netproxy.ResolvConf})
			spec.Rules = append(spec.Rules, child.PathRule{Path: "/etc/resolv.conf", File: true, Why: "the sandbox's resolver"})
		}
	}
	spec.Env = env
	payload, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}

	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	parentEnd := os.NewFile(uintptr(fds[0]), "sandbox-child")
	childEnd := os.NewFile(uintptr(fds[1]), "sandbox-parent")
	defer parentEnd.Close()

	cmd := exec.Command(exe)
	// The extra argument makes a Go test binary that lacks the child hook
	// run no tests instead of its whole suite; the missing hook is then
	// reported below, because such a child never says it is ready.
	cmd.Args = []string{"gemkit-sandbox", "-test.run=^$"}
	// The child's Go runtime needs no parallelism or collector for the
	// few steps before exec; the tool gets spec.Env, not this.
	cmd.Env = []string{child.Env + "=1", "GOMAXPROCS=1", "GOGC=off"}
	cmd.Dir = c.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.ExtraFiles = []*os.File{childEnd}
	if g != nil {
		gateEnd, err := g.pipe()
		if err != nil {
			childEnd.Close()
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		defer gateEnd.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, gateEnd) // child.GateFD
	}
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	attr := &syscall.SysProcAttr{
		Setsid:     true, // own session and process group, no controlling terminal
		Pdeathsig:  syscall.SIGKILL,
		Cloneflags: ns.flags,
	}
	if ns.userns {
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// An unprivileged user's capabilities in the new namespace do
		// not survive the exec of the child unless ambient. Bringing up
		// loopback needs CAP_NET_ADMIN, setting the namespace's pid_max
		// CAP_SYS_ADMIN; the child drops both before the tool runs.
		if enf.Proxy {
			attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_ADMIN)
		}
		// The resolver's port, 53, is a privileged one.
		if spec.ResolverPort > 0 {
			attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_BIND_SERVICE)
		}
		if enf.MaxProcesses > 0 || enf.MountNS {
			attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SYS_ADMIN)
		}
		// Dropping the bounding set needs CAP_SETPCAP.
		attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SETPCAP)
	}
	cmd.SysProcAttr = attr
	if l.planned != nil {
		l.planned()
	}
	if err := cmd.Start(); err != nil {
		childEnd.Close()
		return nil, err
	}
	childEnd.Close()
	p := &Process{logger: l.logger(), cmd: cmd, Enforcement: enf, Warnings: warnings, done: make(chan struct{}), cgroup: cg}

	// Cancelling ctx kills the tool, also while the sandbox is being set
	// up.
	go func() {
		select {
		case <-ctx.Done():
			p.Kill()
		case <-p.done:
		}
	}()
	fail := func(err error) (*Process, error) {
		// Killed because ctx ended: that is the reason to give, not
		// what the dying child managed to say.
		if cerr := ctx.Err(); cerr != nil {
			err = fmt.Errorf("sandbox: stopped while setting up the tool: %w", cerr)
		} else if gerr := g.failed(); gerr != nil {
			err = gerr
		}
		p.Kill()
		_ = cmd.Wait()
		close(p.done)
		if p.connects != nil {
			p.connects.end()
		}
		if p.proxy != nil {
			p.proxy.Close()
		}
		return nil, err
	}
	// The child waits for its spec before it does anything, so all it
	// and the tool start is inside the cgroup.
	if cg != nil {
		if err := cg.add(cmd.Process.Pid); err != nil {
			return fail(err)
		}
	}
	// A write error means the child is gone; what it said, or that it
	// said nothing, is read below.
	if _, err := parentEnd.Write(payload); err == nil {
		_ = unix.Shutdown(fds[0], unix.SHUT_WR)
	}
	// Read what the child reports until its end closes on exec (or
	// its death).
	var childErr []byte
	ready := false
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(8))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fds[0], buf, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ECONNRESET {
			break // the child exited without reading everything: judged below
		}
		if err != nil {
			return fail(fmt.Errorf("sandbox: reading from the child: %w", err))
		}
		if n == 0 {
			break
		}
		if oobn > 0 {
			fds, err := parseRights(oob[:oobn])
			if err != nil {
				return fail(err)
			}
			buf0 := buf[:n]
			if len(buf0) > 0 && buf0[0] == child.Notify {
				// The listener of the tool's connect calls, after the
				// proxy's.
				if len(fds) != 1 || p.proxy == nil {
					for _, fd := range fds {
						unix.Close(fd)
					}
					return fail(errors.New("sandbox: the child passed a connect listener without a proxy"))
				}
				if ww != nil {
					ww.px = p.proxy
				}
				if p.connects, err = watchConnects(fds[0], p.proxy, ww); err != nil {
					return fail(err)
				}
				childErr = append(childErr, buf0[1:]...)
				continue
			}
			if err := p.serveProxy(fds, c, l); err != nil {
				return fail(err)
			}
			if len(buf0) > 0 && buf0[0] == 'L' {
				buf0 = buf0[1:]
			}
			childErr = append(childErr, buf0...)
			continue
		}
		childErr = append(childErr, buf[:n]...)
	}
	if len(childErr) > 0 && childErr[0] == child.Ready {
		ready = true
		childErr = childErr[1:]
	}
	if len(childErr) == 0 && !ready {
		return fail(fmt.Errorf("sandbox: %s did not set up the sandbox child; it is not a gemkit binary (any program that links package sandbox, whose child package takes over when started as the child, is one)", exe))
	}
	if len(childErr) > 0 {
		msg := strings.TrimPrefix(string(childErr), "E")
		return fail(errors.New(msg))
	}
	return p, nil
}

func tempBytes(c *Command) uint64 {
	if c.Policy.TempBytes == 0 {
		return DefaultTempBytes
	}
	return c.Policy.TempBytes
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
	return append(steps, handedSteps(c.Policy.Handed)...), realTmp, dir, nil
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

// supervisesWrites reports whether this kernel lets the watch of a
// tool's writes make a file for it and hand it the descriptor as its
// call's answer (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14), and so take the
// place of placeholders (sealedRules).
func supervisesWrites() bool { return kernelAtLeast(5, 14) }

// pidnsPidMax reports whether this kernel keeps pid_max per PID namespace
// (Linux 6.14 and later), so that the sandbox child can bound its own
// namespace. On older kernels the file is global and must not be touched.
func pidnsPidMax() bool { return kernelAtLeast(6, 14) }

// kernelAtLeast reports whether the running kernel's release is
// major.minor or later; false when it cannot be told.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// parseRights takes the file descriptors out of an SCM_RIGHTS message:
// the proxy's listener, and the resolver's socket when asked for.
func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("sandbox: bad control message from the child: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) < 1 || len(fds) > 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("sandbox: bad descriptors from the child: %v", err)
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	return fds, nil
}

// serveProxy runs the allowlisting proxy on the listener the child opened
// inside its network namespace (fds[0]), and the sandbox's resolver on
// its UDP socket there (fds[1], when asked for). Connections accepted
// there come from the tool; the proxy dials out from gemkit's own
// namespace.
func (p *Process) serveProxy(fds []int, c *Command, l *Launcher) error {
	pol := &c.Policy
	f := os.NewFile(uintptr(fds[0]), "sandbox-proxy")
	ln, err := net.FileListener(f)
	f.Close()
	var pc net.PacketConn
	if len(fds) > 1 {
		rf := os.NewFile(uintptr(fds[1]), "sandbox-resolver")
		var rerr error
		pc, rerr = net.FilePacketConn(rf)
		rf.Close()
		if err == nil && rerr != nil {
			err = fmt.Errorf("resolver socket: %w", rerr)
		}
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		if pc != nil {
			pc.Close()
		}
		return fmt.Errorf("sandbox: proxy listener: %w", err)
	}
	onDeny := l.OnDeny
	if c.OnDeny != nil {
		onDeny = c.OnDeny
	}
	px, err := netproxy.NewProxy(pol.AllowedHosts, l.Resolver, onDeny, l.logger())
	if err != nil {
		ln.Close()
		if pc != nil {
			pc.Close()
		}
		return err
	}
	px.AllowPrivate = l.AllowPrivateAddresses
	px.OwnServer = pol.OwnServer
	px.Received = c.Received
	max := pol.MaxConnections
	if max <= 0 {
		max = DefaultMaxConnections
	}
	p.proxy = px
	p.proxyDone = make(chan struct{})
	if pc != nil {
		px.StartResolver(pc)
	}
	go func() {
		defer close(p.proxyDone)
		_ = px.ServeAtMost(ln, max)
	}()
	return nil
}

// Pid is the process id of the tool (in gemkit's PID namespace).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill kills the tool and everything it started: the PID namespace's
// first process, which takes the whole namespace with it, and the process
// group, which seccomp keeps every descendant in where there is no PID
// namespace. The process itself is signalled through its pidfd, so a
// recycled pid is never hit.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if !p.Enforcement.PIDNS {
		_ = unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
	}
}

// Wait waits for the tool to exit, then stops its proxy. The error is an
// *exec.ExitError for a non-zero exit, like exec.Cmd.Wait.
func (p *Process) Wait() error {
	err := p.cmd.Wait()
	// Descendants outside a PID namespace die with the group.
	if !p.Enforcement.PIDNS {
		_ = unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
	}
	if p.connects != nil {
		p.connects.end()
	}
	if p.proxy != nil {
		p.proxy.Close()
		<-p.proxyDone
	}
	if p.cgroup != nil {
		p.OOMKilled = p.cgroup.oomKilled()
		if rerr := p.cgroup.remove(); rerr != nil {
			p.logger.Warn("sandbox: removing the tool's cgroup", "err", rerr)
		}
	}
	// Before the placeholders are released: their removal is no reason.
	if p.guards != nil {
		if gerr := p.guards(); gerr != nil {
			err = gerr
		}
	}
	if p.release != nil {
		p.release()
	}
	close(p.done)
	return err
}

// DeniedDropped is the number of refusals past the distinct ones Denied
// keeps.
func (p *Process) DeniedDropped() int {
	if p.proxy == nil {
		return 0
	}
	return p.proxy.Dropped()
}

// Denied returns the connections the proxy refused, one per distinct
// refusal with its count.
func (p *Process) Denied() []netproxy.Denial {
	if p.proxy == nil {
		return nil
	}
	return p.proxy.Denied()
}
