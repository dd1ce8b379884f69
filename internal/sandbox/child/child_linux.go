package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/proc/procstat"
)

// Env and ProbeEnv are the environment variables that turn a gemkit
// process into the sandbox child or the namespace probe. Only the
// launcher sets them, on a process whose whole environment it builds.
const (
	Env      = "GEMKIT_SANDBOX_CHILD"
	ProbeEnv = "GEMKIT_SANDBOX_PROBE"
)

// FD is the socket to the parent: the spec comes in on it, the proxy
// listener and any error go out on it, and it closes on exec.
const FD = 3

// GateFD is the read end of a pipe from the parent, present when the
// spec is Gated: the child execs only after reading Go from it, and an
// end of file there means the parent withheld the program.
const GateFD = 4

// Go is the parent's word that a Gated child may exec.
const Go = 'G'

// MaxOpenFiles bounds each tool process's open files (RLIMIT_NOFILE, soft
// and hard): plenty for a runtime, and with the process bound it keeps a
// tool from filling the kernel's file table.
const MaxOpenFiles = 4096

// Ready is the child's last word before exec: the sandbox is in place.
const Ready = 'R'

// Spec is what the parent tells the child to set up before exec.
type Spec struct {
	Path        string     `json:"path"`
	Argv        []string   `json:"argv"`
	Env         []string   `json:"env"`
	Rules       []PathRule `json:"rules"`
	LandlockABI int        `json:"landlockABI"`
	// ProxyPort, when set, asks for loopback up and a listener on
	// 127.0.0.1:ProxyPort inside the namespace, passed back to the parent.
	ProxyPort int `json:"proxyPort,omitempty"`
	// ResolverPort, when set with ProxyPort, asks for a UDP socket bound
	// to 127.0.0.1:ResolverPort inside the namespace too, passed back
	// with the proxy's listener in one message: the sandbox's resolver,
	// which the tool's resolv.conf names (a Mount of kind MountFile).
	ResolverPort int `json:"resolverPort,omitempty"`
	// NotifyConnect, when set, hands every connect(2) of the tool to
	// the parent through a seccomp listener, passed back after a
	// Notify byte, so that a connection that does not use the proxy is
	// known by its address.
	NotifyConnect bool `json:"notifyConnect,omitempty"`
	// NotifyWrites, with NotifyConnect, hands the parent through the
	// same listener every call of the tool that may write a path: an
	// open for writing or creating, and the calls that make, link or
	// rename a name, or truncate one (notifyWrites). The parent reports
	// the ones its policy refuses, and makes the new names the tool may
	// make in a folder whose rule withholds it (PathRule.NoCreate).
	NotifyWrites bool `json:"notifyWrites,omitempty"`
	// NotifyRemoves adds the calls that remove a name (unlink, rmdir),
	// which the parent does for the tool in a sealed folder
	// (PathRule.NoCreate); elsewhere they go straight to the kernel.
	NotifyRemoves bool `json:"notifyRemoves,omitempty"`
	DenySockets   bool `json:"denySockets,omitempty"`
	// AllowUnix lets the tool create Unix-domain sockets. The parent
	// asks it only for a tool with its own network namespace (abstract
	// sockets are per namespace) and its own root (a pathname socket is
	// reachable only where that root shows it). Without it, and with
	// NotifyConnect, each socket(AF_UNIX) goes to the parent, which
	// refuses and reports it.
	AllowUnix bool `json:"allowUnix,omitempty"`
	// OwnProc widens the tool's rule for /proc/self to the whole of
	// /proc when the child mounted a fresh procfs of the tool's own PID
	// namespace (see buildRoot): each /proc/<pid> there is one of the
	// tool's own processes, which can then each read their own entry.
	OwnProc     bool `json:"ownProc,omitempty"`
	DenySession bool `json:"denySession,omitempty"`
	// DenyMetadata refuses xattrs and inode flags (no mount namespace).
	DenyMetadata bool `json:"denyMetadata,omitempty"`
	// DenyFallocate refuses fallocate (Policy.NoPreallocate).
	DenyFallocate bool `json:"denyFallocate,omitempty"`
	// MemoryBytes, when set, bounds each process alone (limits): the
	// parent sets it where no memory cgroup bounds the tree.
	MemoryBytes uint64 `json:"memoryBytes"`
	// FileBytes, when set, bounds each file a process writes
	// (RLIMIT_FSIZE: Policy.MaxFileBytes).
	FileBytes uint64 `json:"fileBytes,omitempty"`
	// PidMax, when set, is written to the PID namespace's own pid_max:
	// the child is its first process, and the tool cannot raise it.
	PidMax int `json:"pidMax,omitempty"`
	// Mounts, when set, build the tool's own root (see buildRoot),
	// starting on the existing directory MountBase; the child must be in
	// its own mount namespace. Dir is the working directory in the new
	// root.
	Mounts    []Mount `json:"mounts,omitempty"`
	MountBase string  `json:"mountBase,omitempty"`
	Dir       string  `json:"dir,omitempty"`
	// Gated: once the sandbox is in place, wait for Go on GateFD
	// before exec, so that the parent can check something (consent to
	// the program's bytes) while the sandbox is being set up.
	Gated bool `json:"gated,omitempty"`
	// Join are descriptors of cgroup files (a v1 group's tasks file)
	// to which the child writes "0" first: the thread that will exec
	// the tool moves itself into the run's cgroups, so that the tool
	// and all it starts are inside from its first instruction.
	Join []int `json:"join,omitempty"`
}

// init turns the process into the sandbox child before the rest of the
// program initializes. Go initializes packages in import-path order as
// soon as their imports are ready, and this package imports only the
// standard library, x/sys/unix and procstat (which imports early parts
// of the standard library only), so it runs before the heavy
// initialization of gemkit's other dependencies (compiling JSON schemas
// alone takes milliseconds), which the child never needs: it execs the
// tool or exits from here. The main goroutine is on the main thread
// during init, and LockOSThread keeps it there: the thread that applies
// Landlock and seccomp must be the one that execs, and exec from the
// thread-group leader keeps the tool's /proc entry the one the Landlock
// rule names.
func init() {
	switch {
	case os.Getenv(ProbeEnv) == "1":
		os.Exit(0)
	case os.Getenv(Env) == "1":
		runtime.LockOSThread()
		os.Exit(Main())
	}
}

// IsChild reports whether this process was started by the launcher as the
// sandbox child (or namespace probe). The package's init has then taken
// over already, so it is true only for a caller that runs first.
func IsChild() bool {
	return os.Getenv(Env) == "1" || os.Getenv(ProbeEnv) == "1"
}

// Main sets up the sandbox and execs the tool; it returns only on
// failure, with the exit status to use. The error has already been sent to
// the parent.
func Main() int {
	if os.Getenv(ProbeEnv) == "1" {
		return 0
	}
	// Landlock, no_new_privs and seccomp apply to the calling thread, so
	// all of it and the exec must happen on one thread.
	runtime.LockOSThread()
	conn := os.NewFile(FD, "sandbox-parent")
	if err := setup(conn); err != nil {
		if !errors.Is(err, errReported) {
			report(err)
		}
		return 126
	}
	return 0 // unreachable: setup execs
}

// report sends err to the parent; it has no other way to learn it.
func report(err error) {
	msg := append([]byte{'E'}, err.Error()...)
	_, _ = unix.Write(FD, msg)
}

// setup makes the tool's world as spec says, in this order: its network
// (the proxy's listener passed to the parent), its processes' bound, its
// own root, its confinement (Landlock, capabilities, seccomp); then it
// waits for the gate, sets the resource limits, tells the parent it is
// ready and execs the tool.
func setup(conn *os.File) error {
	spec, err := readSpec(conn)
	if err != nil {
		return err
	}
	if err := leaveTerminal(); err != nil {
		return err
	}
	for _, fd := range spec.Join {
		if err := join(fd); err != nil {
			return err
		}
	}
	if spec.ProxyPort > 0 {
		if err := passNetwork(spec); err != nil {
			return err
		}
	}
	if spec.PidMax > 0 {
		// /proc/sys/kernel/pid_max is the one of the reader's PID
		// namespace on the kernels the parent asks this on.
		if err := os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(spec.PidMax)), 0); err != nil {
			return fmt.Errorf("sandbox child: bounding the number of processes: %w", err)
		}
	}
	if len(spec.Mounts) > 0 {
		freshProc, err := buildRoot(spec.MountBase, spec.Mounts)
		if err != nil {
			return err
		}
		ownProcRules(spec.Rules, spec.OwnProc, freshProc)
		if err := unix.Chdir(spec.Dir); err != nil {
			return fmt.Errorf("sandbox child: working directory %s: %w", spec.Dir, err)
		}
	}
	if err := confine(spec); err != nil {
		return err
	}
	// Only stdin, stdout and stderr reach the tool. Go's exec passes just
	// the descriptors it was given, but ones gemkit itself inherited
	// without close-on-exec (from a shell, an editor) would stay open;
	// this closes them, and the socket to the parent, on exec.
	if err := unix.CloseRange(FD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("sandbox child: marking descriptors close-on-exec: %w", err)
	}
	if spec.Gated {
		if err := awaitGo(); err != nil {
			return err
		}
	}
	// The limits come last, with the exec (toolExec says why).
	ex, err := prepareExec(spec)
	if err != nil {
		return err
	}
	return ex.take()
}

// leaveTerminal gives up the controlling terminal the child inherited
// from gemkit, if any, so that the tool has none (no /dev/tty, no
// TIOCSTI into the person's shell) although it stays in gemkit's
// session (childAttr): a process that leads no session cannot take a
// terminal again. A child that leads its own session has none already.
func leaveTerminal() error {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err == unix.ENXIO {
		return nil // /dev/tty opens the controlling terminal only: there is none
	}
	if err != nil {
		// No /dev/tty to open (a container's /dev): the kernel's word
		// on the terminal is in /proc.
		if st, perr := procstat.ReadSelf(); perr == nil && st.Tty == 0 {
			return nil
		}
		return fmt.Errorf("sandbox child: leaving the controlling terminal: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.TIOCNOTTY, 0); err != nil {
		return fmt.Errorf("sandbox child: leaving the controlling terminal: %w", err)
	}
	return nil
}

// readSpec reads the spec the parent wrote, whole (bounded), before
// anything is done.
func readSpec(conn *os.File) (Spec, error) {
	raw, err := io.ReadAll(io.LimitReader(conn, 16<<20))
	if err != nil {
		return Spec{}, fmt.Errorf("sandbox child: reading spec: %w", err)
	}
	var spec Spec
	if err := spec.UnmarshalBinary(raw); err != nil {
		return Spec{}, fmt.Errorf("sandbox child: %w", err)
	}
	return spec, nil
}

// passNetwork brings up loopback in the tool's network namespace, and
// passes the parent the listener of the proxy's port (and the resolver's
// socket) bound there: the parent serves them, so that the tool's only
// way out is gemkit's proxy.
func passNetwork(spec Spec) error {
	if err := loopbackUp(); err != nil {
		return err
	}
	lfd, err := listenLoopback(spec.ProxyPort)
	if err != nil {
		return err
	}
	fds := []int{lfd}
	if spec.ResolverPort > 0 {
		dfd, err := bindLoopbackUDP(spec.ResolverPort)
		if err != nil {
			unix.Close(lfd)
			return err
		}
		fds = append(fds, dfd)
	}
	err = unix.Sendmsg(FD, []byte{'L'}, unix.UnixRights(fds...), nil, 0)
	for _, fd := range fds {
		unix.Close(fd)
	}
	if err != nil {
		return fmt.Errorf("sandbox child: passing the proxy listener: %w", err)
	}
	return nil
}

// confine confines this process, and so the tool it becomes: Landlock's
// rules, no capabilities, no_new_privs, then the seccomp filters (the
// watch of connect calls, passed to the parent, before the main one).
func confine(spec Spec) error {
	var err error
	rfd := -1
	if spec.LandlockABI > 0 {
		rfd, err = landlockRuleset(spec.LandlockABI, spec.Rules, spec.ProxyPort)
		if err != nil {
			return err
		}
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox child: no_new_privs: %w", err)
	}
	if rfd >= 0 {
		if err := landlockRestrictSelf(rfd); err != nil {
			return err
		}
	}
	// The watch of connect calls goes first: where it is in place, the
	// main filter lets socket(AF_UNIX) through to it, to be refused and
	// reported by the parent; elsewhere the main filter refuses it.
	// A kernel without user notifications (before 5.0), or a chain
	// that has a listener already (gemkit itself supervised so), only
	// loses the report of addresses: the confinement does not rest on
	// the watch.
	reportUnix := spec.NotifyConnect && !spec.AllowUnix && !spec.DenySockets
	nfd := -1
	if spec.NotifyConnect {
		if nfd, err = installConnectNotify(reportUnix, spec.NotifyWrites, spec.NotifyRemoves); err != nil {
			nfd, reportUnix = -1, false
		}
	}
	if err := installSeccomp(seccompOptions{denyAllSockets: spec.DenySockets, denyNewSession: spec.DenySession, denyMetadata: spec.DenyMetadata, denyFallocate: spec.DenyFallocate, allowUnix: spec.AllowUnix, notifyUnix: reportUnix}); err != nil {
		return err
	}
	if nfd >= 0 {
		err = unix.Sendmsg(FD, []byte{Notify}, unix.UnixRights(nfd), nil, 0)
		unix.Close(nfd)
		if err != nil {
			return fmt.Errorf("sandbox child: passing the connect listener: %w", err)
		}
	}
	return nil
}

// join moves the calling thread, the one that execs the tool, into the
// cgroup whose tasks file is open at fd, and closes it.
func join(fd int) error {
	defer unix.Close(fd)
	for {
		_, err := unix.Write(fd, []byte("0"))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox child: moving into the tool's cgroup: %w", err)
		}
		return nil
	}
}

// awaitGo reads the parent's word on GateFD: Go, or the end of the pipe
// when the program must not run.
func awaitGo() error {
	var b [1]byte
	for {
		n, err := unix.Read(GateFD, b[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox child: waiting to start: %w", err)
		}
		if n == 1 && b[0] == Go {
			return nil
		}
		return errors.New("sandbox child: the program was not started")
	}
}

// loopbackUp brings up lo in the child's fresh network namespace, which
// starts with it down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox child: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("sandbox child: bringing up loopback: %w", err)
	}
	return nil
}

// listenLoopback opens the in-namespace end of the proxy: a TCP listener
// the parent accepts on, whose accepted connections the parent serves from
// outside the namespace.
func listenLoopback(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("sandbox child: socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("sandbox child: bind 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("sandbox child: listen: %w", err)
	}
	return fd, nil
}

// bindLoopbackUDP opens the in-namespace end of the sandbox's resolver: a
// UDP socket on 127.0.0.1:port (53, which needs CAP_NET_BIND_SERVICE in
// the namespace's user namespace), whose queries the parent answers.
func bindLoopbackUDP(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("sandbox child: socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("sandbox child: bind udp 127.0.0.1:%d: %w", port, err)
	}
	return fd, nil
}

// dropCapabilities leaves the tool no capability: none ambient, none in the
// bounding set (so that uid 0 regains none on exec), none effective,
// permitted or inheritable.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox child: clearing ambient capabilities: %w", err)
	}
	for c := 0; c <= 63; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EINVAL {
			break // past the last capability this kernel knows
		}
		if err != nil && os.Getuid() == 0 {
			return fmt.Errorf("sandbox child: dropping capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox child: dropping capabilities: %w", err)
	}
	return nil
}

// ownProcRules widens the rule for /proc/self to all of /proc when the
// tool may read its own processes (ownProc) and /proc is a procfs of its
// own PID namespace (freshProc), where every entry is one of its own
// processes; never over a bound host /proc, which shows every process.
func ownProcRules(rules []PathRule, ownProc, freshProc bool) {
	if !ownProc || !freshProc {
		return
	}
	for i, r := range rules {
		if r.Path == "/proc/self" {
			rules[i].Path, rules[i].Why = "/proc", "/proc of the tool's own PID namespace"
		}
	}
}
