package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

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
	onExit func(*os.ProcessState)
	cgroup *cgroup
	logger *slog.Logger
	// OOMKilled is set by Wait when the kernel killed a process of the
	// tool for going past its memory bound.
	OOMKilled bool
	// release gives back the guarded paths the run held (placeholders).
	release func()
	// held are the tool's namespaces that Wait ends after OnExit
	// (holdNamespaces).
	held []*os.File
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
	if !child.SeccompSupported {
		reasons = append(reasons, noSeccomp())
	}

	var attempts []nsAttempt
	if !l.NoNamespaces {
		base := uintptr(unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS)
		attempts = append(attempts, nsAttempt{flags: base | unix.CLONE_NEWUSER, userns: true})
		if os.Getuid() == 0 {
			attempts = append(attempts, nsAttempt{flags: base})
		}
	}
	// The run's plan is made while the first child starts (see
	// runPlan); the child waits for its spec, which needs the plan.
	pf := l.startPlan(c, len(attempts) > 0)
	var g *gate
	if c.Gate != nil {
		g = runGate(ctx, c.Gate)
	}
	p, err := l.startWith(ctx, c, g, attempts, pf, abi, reasons)
	pl := pf.get()
	guards := pl.guards
	if guards != nil && (p == nil || !p.Enforcement.MountNS) {
		pl.w.unwatch(guards)
		guards = nil
	}
	if p == nil {
		l.release(pl.held)
		return nil, err
	}
	held := pl.held
	p.release = func() { l.release(held) }
	if guards != nil {
		p.guards = func() error { return pl.w.unwatch(guards) }
		pl.w.arm(guards, p.Kill)
	}
	return p, err
}

// runPlan is what a run needs of the filesystem before its child builds
// the tool's world: the rules, the overlays and sealed folders (with a
// mount namespace the folders of other extensions inside the write scope
// are read-only binds; a server whose calls that write are watched has
// no placeholder made for its absent protected names where the kernel
// lets gemkit make new names for it, sealedRules), and, with namespaces,
// the placeholders held, the watch of the guarded paths and the steps of
// the tool's root. It is made
// on another thread while the first attempt's child starts (its clone,
// its exec and its Go runtime's start take milliseconds of the other
// core), not before it: the child reads its spec, made from the plan,
// before it does anything.
type runPlan struct {
	rules    []PathRule
	overlays []overlay
	sealed   []sealedFolder
	held     []heldPath
	w        *guardWatcher
	guards   *guardRun
	// root is the steps of the tool's own root, planned with
	// namespaces (every attempt with them has a mount namespace, and
	// childSpec takes them from here): the walk of the links on the way
	// to each bind is stats, which the other core makes here while the
	// child starts, where the spec waited for them.
	root *rootPlan
	err  error
}

// planFuture is a runPlan being made; get waits for it. Only the
// goroutine of Start calls get.
type planFuture struct {
	c chan *runPlan
	p *runPlan
}

func (f *planFuture) get() *runPlan {
	if f.p == nil {
		f.p = <-f.c
	}
	return f.p
}

// readyPlan is a plan made already.
func readyPlan(p *runPlan) *planFuture { return &planFuture{p: p} }

// startPlan starts making c's plan; namespaces says whether a start
// with namespaces will be tried (which holds placeholders and watches
// the guarded paths).
func (l *Launcher) startPlan(c *Command, namespaces bool) *planFuture {
	f := &planFuture{c: make(chan *runPlan, 1)}
	go func() { f.c <- l.plan(c, namespaces) }()
	return f
}

func (l *Launcher) plan(c *Command, namespaces bool) *runPlan {
	p := &runPlan{}
	if c.Policy.ReportRefusals && child.SeccompSupported && supervisesWrites() && !l.NoNamespaces && !l.NoSealing {
		p.rules, p.overlays, p.sealed, p.err = c.Policy.sealedRules()
	} else {
		p.rules, p.overlays, p.err = c.Policy.rules(false)
	}
	if p.err != nil || !namespaces {
		return p
	}
	if p.held, p.err = l.hold(p.overlays); p.err != nil {
		return p
	}
	if p.w, p.err = l.guardWatcher(p.overlays); p.err == nil && p.w != nil {
		p.guards, p.err = p.w.watch(p.overlays)
	}
	if p.err != nil {
		l.release(p.held)
		p.held = nil
		return p
	}
	p.root = planRoot(c, p.rules, p.overlays)
	return p
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

// startWith tries each way of making namespaces, then none. The rules
// of a run without a mount namespace (the read-only folders split out of
// the write scope) are computed only when it comes to that: a start
// paid for them each time, as much as for the rules it used (a tenth of
// a hook's own CPU time in gemkit).
func (l *Launcher) startWith(ctx context.Context, c *Command, g *gate, attempts []nsAttempt, pf *planFuture, abi int, reasons []string) (*Process, error) {
	var lastNSErr error
	for _, a := range attempts {
		p, err := l.start(ctx, c, g, pf, abi, a, reasons)
		if err == nil || !isNamespaceRefusal(err) || pf.get().err != nil {
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
	if err := pf.get().err; err != nil {
		return nil, err
	}
	splitRules, err := c.Policy.Rules()
	if err != nil {
		return nil, err
	}
	return l.start(ctx, c, g, readyPlan(&runPlan{rules: splitRules}), abi, nsAttempt{}, reasons)
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

// start makes one attempt at starting c: in the namespaces ns asks for
// (none when its flags are 0), with the rules of pf's plan as the tool's
// filesystem. Each step is a function of its own so that the order is
// what reads here: decide what this attempt enforces, bound its memory,
// start the child, make its spec once the plan is there, hand it over
// and serve what the child asks for until it execs the tool.
func (l *Launcher) start(ctx context.Context, c *Command, g *gate, pf *planFuture, abi int, ns nsAttempt, reasons []string) (proc *Process, err error) {
	// A gate that has already refused (each attempt asks again) spares
	// the cgroup, the child and its mounts of a program that never runs.
	if err := g.failed(); err != nil {
		return nil, err
	}
	enf := enforcement(c, abi, ns)
	if len(reasons) > 0 && !l.AllowUnconfined {
		return nil, &UnenforceableError{Reasons: reasons}
	}
	cg := l.memoryCgroup(&enf)
	var word *startWord
	if cg != nil {
		// Unless a Process owns it, the cgroup goes on every return
		// (after abandon has waited for the child, and the child's move
		// into it has ended).
		defer func() {
			if proc == nil {
				if word != nil {
					_ = word.wait()
				}
				_ = cg.remove()
			}
		}()
	}
	var warnings []string
	for _, r := range reasons {
		warnings = append(warnings, "UNCONFINED: "+r)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	parentEnd := os.NewFile(uintptr(fds[0]), "sandbox-child")
	childEnd := os.NewFile(uintptr(fds[1]), "sandbox-parent")
	defer parentEnd.Close()
	cmd, w, joinFDs, move, gated, err := l.spawn(c, cg, g, ns, enf, childEnd)
	childEnd.Close()
	if err != nil {
		return nil, err
	}
	p := &Process{logger: l.logger(), cmd: cmd, Enforcement: enf, Warnings: warnings, done: make(chan struct{}), cgroup: cg, onExit: c.OnExit}
	if c.OnExit != nil {
		p.holdNamespaces(ns)
	}
	// Cancelling ctx kills the tool, also while the sandbox is being set
	// up.
	go func() {
		select {
		case <-ctx.Done():
			p.Kill()
		case <-p.done:
		}
	}()
	// The child is moved into the cgroup while it reads its spec and
	// sets up the sandbox; it execs the tool only once it is inside, so
	// that all the tool starts is too.
	if w != nil {
		word = w
		word.r.Close()
		word.send(move, cmd.Process.Pid, g)
	}
	ww, err := l.sendSpec(p, parentEnd, fds[0], c, gated, joinFDs, pf, &enf)
	if err != nil {
		return nil, p.abandon(ctx, g, err)
	}
	said, err := p.serveChild(fds[0], c, l, ww)
	if err == nil {
		err = childVerdict(l.exe(), said)
	}
	if word != nil {
		// A child that failed to join its cgroup was told nothing and
		// did not exec: that failure is the reason, unless the child
		// was gone already (its own error says why).
		if aerr := word.wait(); aerr != nil && !errors.Is(aerr, unix.ESRCH) {
			err = aerr
		}
	}
	if err != nil {
		return nil, p.abandon(ctx, g, err)
	}
	return p, nil
}

// sendSpec waits for the run's plan, makes the child's spec from it and
// writes it to the child, which has been starting meanwhile. A write
// error means the child is gone: what it said, or that it said nothing,
// is read by serveChild after this.
func (l *Launcher) sendSpec(p *Process, parentEnd *os.File, fd int, c *Command, gated bool, join []int, pf *planFuture, enf *Enforcement) (*writeWatch, error) {
	pl := pf.get()
	if pl.err != nil {
		return nil, pl.err
	}
	spec, ww, err := childSpec(c, gated, pl, enf)
	if err != nil {
		return nil, err
	}
	spec.Join = join
	p.Enforcement.TempBytes = enf.TempBytes
	payload, err := spec.MarshalBinary()
	if err != nil {
		return nil, err
	}
	if l.planned != nil {
		l.planned()
	}
	if _, err := parentEnd.Write(payload); err == nil {
		_ = unix.Shutdown(fd, unix.SHUT_WR)
	}
	return ww, nil
}

// spawn starts the sandbox child, its end of the socket childEnd. The
// child moves itself into a v1 cgroup (joinFiles); else, with a cgroup
// or a gate, it waits for a word before it execs the tool (startWord),
// and sets up the sandbox meanwhile: move is the cgroup the parent moves
// it into (nil when it moves itself, or there is none), gated whether
// it waits for the word.
func (l *Launcher) spawn(c *Command, cg *cgroup, g *gate, ns nsAttempt, enf Enforcement, childEnd *os.File) (cmd *exec.Cmd, w *startWord, joinFDs []int, move *cgroup, gated bool, err error) {
	var joins []*os.File
	move = cg
	if cg != nil {
		if joins = cg.joinFiles(); joins != nil {
			move = nil
		}
	}
	gated = move != nil || g != nil
	cmd, w, joinFDs, err = l.childCommand(c, gated, ns, enf, usesResolver(c, enf), childEnd, joins)
	if err != nil {
		closeFiles(joins)
		return nil, nil, nil, nil, false, err
	}
	err = cmd.Start()
	closeFiles(joins)
	if err != nil {
		if w != nil {
			w.close()
		}
		return nil, nil, nil, nil, false, err
	}
	return cmd, w, joinFDs, move, gated, nil
}

// enforcement is what an attempt in the namespaces ns enforces, as far
// as the kernel and c's policy decide it before anything is made.
func enforcement(c *Command, abi int, ns nsAttempt) Enforcement {
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
	enf.MemoryBytes = c.Policy.MemoryBytes
	if enf.MemoryBytes == 0 {
		enf.MemoryBytes = DefaultMemoryBytes
	}
	return enf
}

// memoryCgroup makes the run's cgroup, which bounds its memory (and its
// processes where the PID namespace's pid_max does not), and says in enf
// what bounds the memory: the cgroup, or the data rlimit of each process
// alone when none can be made (nil).
func (l *Launcher) memoryCgroup(enf *Enforcement) *cgroup {
	var cg *cgroup
	if !l.NoCgroup {
		procs := DefaultMaxProcesses
		if enf.MaxProcesses > 0 {
			procs = 0
		}
		l.cgOnce.Do(func() { l.cg = findCgroups() })
		var err error
		if cg, err = l.cg.create(enf.MemoryBytes, procs); err != nil {
			l.logger().Debug("sandbox: no memory cgroup", "err", err)
			cg = nil
		}
	}
	if cg != nil {
		enf.Memory = "cgroup " + cg.version
	} else {
		enf.Memory = "rlimit"
	}
	enf.DataRlimit = cg == nil || !cg.swapBounded
	return cg
}

// supervisesWrites reports whether this kernel lets the watch of a
// tool's writes make a file for it and hand it the descriptor as its
// call's answer (SECCOMP_IOCTL_NOTIF_ADDFD, then the answer: Linux 5.9;
// 5.14 is asked, the version this was built and tested from, which also
// has SECCOMP_ADDFD_FLAG_SEND, not used: sealedwrites_linux.go, open),
// and so take the place of placeholders (sealedRules).
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

// holdNamespaces keeps the child's mount and network namespaces (those
// it made: ns) alive past the tool's exit until Wait has called OnExit:
// the last process of a mount namespace tears its mounts down in its
// exit, before its parent learns of it, so a caller that answers
// someone at OnExit (a warm hook's client) would wait for the tool's
// whole root to be unmounted first. Held here, the namespaces end when
// Wait closes them, after OnExit. A namespace that cannot be opened is
// not held: it ends with the tool, as without this.
func (p *Process) holdNamespaces(ns nsAttempt) {
	for _, k := range []struct {
		flag uintptr
		name string
	}{{unix.CLONE_NEWNS, "mnt"}, {unix.CLONE_NEWNET, "net"}} {
		if ns.flags&k.flag == 0 {
			continue
		}
		if f, err := os.Open("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/ns/" + k.name); err == nil {
			p.held = append(p.held, f)
		}
	}
}

// releaseNamespaces lets the namespaces holdNamespaces kept end.
func (p *Process) releaseNamespaces() {
	for _, f := range p.held {
		f.Close()
	}
	p.held = nil
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
	awaitExit(p.cmd.Process.Pid)
	err := p.cmd.Wait()
	if p.onExit != nil {
		p.onExit(p.cmd.ProcessState)
	}
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
	p.releaseNamespaces()
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
