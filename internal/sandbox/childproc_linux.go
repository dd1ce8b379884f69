package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/sandbox/child"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"golang.org/x/sys/unix"
)

// The sandbox child as a process: how it is cloned, what it is handed,
// and the parent's side of the conversation until it execs the tool (the
// sockets it passes to be served: the proxy's, the resolver's, the
// listener of the tool's connect calls).

// exe is the program started as the sandbox child: gemkit itself.
func (l *Launcher) exe() string {
	if l.Exe == "" {
		return "/proc/self/exe"
	}
	return l.Exe
}

// childCommand is the command that starts the sandbox child in the
// namespaces ns asks for, talking to gemkit over childEnd and, when
// gated, waiting before it execs the tool for the word it returns (see
// startWord; the caller closes its read end once the child has it).
// The files joins (cgroup.joinFiles) are handed to the child, at the
// descriptors joinFDs.
func (l *Launcher) childCommand(c *Command, gated bool, ns nsAttempt, enf Enforcement, resolver bool, childEnd *os.File, joins []*os.File) (cmd *exec.Cmd, word *startWord, joinFDs []int, err error) {
	cmd = exec.Command(l.exe())
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
	if gated {
		if word, err = newStartWord(); err != nil {
			return nil, nil, nil, fmt.Errorf("sandbox: %w", err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, word.r) // child.GateFD
	}
	for _, f := range joins {
		joinFDs = append(joinFDs, 3+len(cmd.ExtraFiles))
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	cmd.SysProcAttr = childAttr(ns, enf, resolver)
	return cmd, word, joinFDs, nil
}

// childAttr is how the child is cloned: in a process group of its own,
// killed with gemkit, in the namespaces ns asks for; in a user
// namespace, as the same user, with the capabilities its setup needs
// kept across its exec.
//
// In a PID namespace the child stays in gemkit's session, and leaves its
// controlling terminal itself (child's leaveTerminal): not being a
// session's leader, the tool cannot take one again. A session of its own
// would put it in a scheduling group of its own (the kernel's autogroup,
// one per session), which a busy machine's scheduler runs after the
// other groups' turns: each call forwarded to a sandboxed MCP server
// waited for it, 36 to 46 µs at load 7 to 10 (git show f68add0:bench/README.md). Without
// a PID namespace the tool gets a session of its own, as before:
// seccomp then keeps it and all it starts there (DenySession), so that
// killing the group kills them, and the kernel lets a process send
// SIGCONT to any process of its session, whatever its user.
func childAttr(ns nsAttempt, enf Enforcement, resolver bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Cloneflags: ns.flags,
	}
	if ns.flags&syscall.CLONE_NEWPID == 0 {
		attr.Setpgid, attr.Setsid = false, true
	}
	if !ns.userns {
		return attr
	}
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
	if resolver {
		attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_BIND_SERVICE)
	}
	if enf.MaxProcesses > 0 || enf.MountNS {
		attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SYS_ADMIN)
	}
	// Dropping the bounding set needs CAP_SETPCAP.
	attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SETPCAP)
	return attr
}

// abandon ends a start that failed: it kills the child, waits for it and
// stops what was served for it. The error it returns is err, or why the
// child was killed when ctx ended or the gate refused: that is the
// reason to give, not what the dying child managed to say.
func (p *Process) abandon(ctx context.Context, g *gate, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		err = fmt.Errorf("sandbox: stopped while setting up the tool: %w", cerr)
	} else if gerr := g.failed(); gerr != nil {
		err = gerr
	}
	p.Kill()
	_ = p.cmd.Wait()
	if se := (*silentChildError)(nil); errors.As(err, &se) {
		se.state = p.cmd.ProcessState
	}
	p.releaseNamespaces()
	close(p.done)
	if p.connects != nil {
		p.connects.end()
	}
	if p.proxy != nil {
		p.proxy.Close()
	}
	return err
}

// serveChild reads what the child reports over fd until its end closes
// on exec (or its death), serving the sockets it passes: the proxy's
// listener (and the resolver's socket), and the listener of the tool's
// connect calls. It returns what the child said.
func (p *Process) serveChild(fd int, c *Command, l *Launcher, ww *writeWatch) ([]byte, error) {
	var said []byte
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(8))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ECONNRESET {
			return said, nil // the child exited without reading everything: judged by the caller
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: reading from the child: %w", err)
		}
		if n == 0 {
			return said, nil
		}
		msg := buf[:n]
		if oobn == 0 {
			said = append(said, msg...)
			continue
		}
		fds, err := parseRights(oob[:oobn])
		if err != nil {
			return nil, err
		}
		if len(msg) > 0 && msg[0] == child.Notify {
			if err := p.watchChildConnects(fds, ww); err != nil {
				return nil, err
			}
			said = append(said, msg[1:]...)
			continue
		}
		if err := p.serveProxy(fds, c, l); err != nil {
			return nil, err
		}
		if len(msg) > 0 && msg[0] == 'L' {
			msg = msg[1:]
		}
		said = append(said, msg...)
	}
}

// watchChildConnects takes the listener of the tool's connect calls,
// which the child passes after the proxy's, and watches them (and its
// writes, whose refusals go to the proxy's record).
func (p *Process) watchChildConnects(fds []int, ww *writeWatch) error {
	if len(fds) != 1 || p.proxy == nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return errors.New("sandbox: the child passed a connect listener without a proxy")
	}
	if ww != nil {
		ww.px = p.proxy
	}
	var err error
	p.connects, err = watchConnects(fds[0], p.proxy, ww)
	return err
}

// childVerdict reads what the child said before its end closed: that
// the tool is exec'd (child.Ready), or why it could not be; silence is a
// program exe that is not gemkit.
func childVerdict(exe string, said []byte) error {
	ready := false
	if len(said) > 0 && said[0] == child.Ready {
		ready = true
		said = said[1:]
	}
	if len(said) == 0 && !ready {
		return &silentChildError{exe: exe}
	}
	if len(said) > 0 {
		return errors.New(strings.TrimPrefix(string(said), "E"))
	}
	return nil
}

// silentChildError is a child that ended without a word: exe is not a
// gemkit binary, or the child died while it set up the sandbox (the
// race detector's or the Go runtime's fatal errors say nothing to the
// parent). How it ended is filled in once it has been waited for.
type silentChildError struct {
	exe   string
	state *os.ProcessState
}

func (e *silentChildError) Error() string {
	how := ""
	if e.state != nil {
		how = " (" + e.state.String() + ")"
	}
	return fmt.Sprintf("sandbox: the sandbox child ended without a word%s: either %s is not a gemkit binary (any program that links package sandbox, whose child package takes over when started as the child, is one), or the child died while setting up the sandbox", how, e.exe)
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
	px.Upstream = pol.Upstream
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
