package sandbox

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// ProxyPort is the port of the proxy inside a tool's network namespace.
// The namespace holds nothing else, so a fixed port cannot collide.
const ProxyPort = 3128

// Launcher starts tools inside the sandbox. The zero value refuses to run
// what the kernel cannot enforce; set AllowUnconfined to run anyway with
// warnings.
type Launcher struct {
	// AllowUnconfined runs a tool even when a permission cannot be
	// enforced on this machine; every missing protection is returned as a
	// warning on the Process, for the caller to show loudly.
	AllowUnconfined bool
	// NoNamespaces skips user, network and PID namespaces, as on a
	// kernel that refuses them: the network is then denied by seccomp and
	// a forked child is kept in the killed process group by refusing
	// setsid. Tests and the benchmark use it to exercise that path.
	NoNamespaces bool
	// NoSealing gives a server's absent protected names placeholders
	// even where the watch of its writes could keep them (sealedRules):
	// tests compare the two ways.
	NoSealing bool
	// NoCgroup skips the memory cgroup even where one could be made, as
	// on a machine that lets gemkit create none: each process is then
	// bounded by RLIMIT_DATA alone. Tests and the benchmark use it.
	NoCgroup bool
	// Resolver resolves names for the proxy; nil is the system resolver.
	Resolver netproxy.Resolver
	// AllowPrivateAddresses lets allowed host names resolve to loopback
	// and private addresses (see Proxy.AllowPrivate); tests use it.
	AllowPrivateAddresses bool
	// OnDeny is called for the first of each distinct refusal of the
	// proxy (same method, host, port and reason), for at most 64 of them;
	// Process.Denied counts the repeats, Process.DeniedDropped the rest.
	OnDeny func(netproxy.Denial)
	// Exe is the binary re-executed as the sandbox child; empty means
	// this process's own binary. Any binary that links this package
	// serves as the child.
	Exe string
	// LockDir is the private folder (0700) of the locks that say which
	// runs use a placeholder of an absent guarded path, shared by every
	// gemkit process of this user so that none removes a placeholder
	// another one's tool still has bound; empty is gemkit's configuration
	// folder's "placeholders" (~/.config/gemkit/placeholders), which is
	// closed to every tool.
	LockDir string
	// Linger keeps the placeholders of absent guarded paths (and their
	// locks) after a run for this long, so that the runs of a long-lived
	// caller (gemkit mcp, an agent's session) that follow one another
	// bind them as they are instead of making and removing them each
	// time: on this machine's disk each costs about a quarter of a
	// millisecond to make and remove, and a fresh workspace has thirty.
	// Zero gives them back at the end of each run. A caller that sets it
	// calls Close before it exits.
	Linger time.Duration
	// Logger receives debug details; nil is slog.Default().
	Logger *slog.Logger

	// noLandlock pretends the kernel has no Landlock, for tests of the
	// refusal and of --allow-unconfined.
	noLandlock bool
	// planned, when set, is called once the run's rules and mount steps
	// are planned and before the child that applies them starts: tests
	// change the filesystem there (a closed folder that vanishes).
	planned func()

	cgOnce sync.Once
	cg     *cgroupLayout

	// sweepOnce sweeps the placeholder locks no run holds (Linux).
	sweepOnce sync.Once

	// guards watches the guarded paths of all runs (Linux).
	guardMu sync.Mutex
	guards  *guardWatcher

	// kept are the guarded paths held between runs (Linger).
	keptMu sync.Mutex
	kept   map[string]*kept
	closed bool
}

// Command is one tool process to run.
type Command struct {
	Policy Policy
	// Path is the absolute path of the program; Args follow argv[0].
	Path string
	Args []string
	// Env is the whole environment of the tool; the launcher adds the
	// proxy variables when the tool may reach allowed hosts.
	Env []string
	// Dir is the working directory.
	Dir string

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// WaitDelay bounds how long Wait waits for output after the process
	// has been killed; 0 means two seconds.
	WaitDelay time.Duration
	// OnDeny, when set, receives this command's refusals by the proxy in
	// place of the Launcher's OnDeny, so that a report can name what was
	// refused (an extension's MCP server, with the command that allows
	// the host).
	OnDeny func(netproxy.Denial)
	// Gate, when set, is called once as the start begins, and the
	// program is executed only after it returns nil: the sandbox is
	// set up meanwhile, so that a check of the program (consent to its
	// bytes) costs its start no more than the longer of the two. An
	// error from it is Start's error, as it returned it; a panic in it
	// is an error naming the panic.
	Gate func(context.Context) error
	// OnExit, when set, is called by Wait as soon as the program has
	// exited, with its status, before Wait stops what served it and
	// gives back its cgroup, placeholders and guards (Linux): a caller
	// that only passes the status on (a hook's warm sandbox) need not
	// wait for that. Wait's error may still differ (a guarded path
	// removed meanwhile, which killed the program).
	OnExit func(*os.ProcessState)
	// Received, when set, counts the bytes the proxy receives from the
	// hosts for this command as they arrive: how much an install
	// fetched so far.
	Received *atomic.Int64
}

// Enforcement says how a run is confined.
type Enforcement struct {
	LandlockABI int  `json:"landlockABI"` // 0: filesystem not confined
	UserNS      bool `json:"userNS"`      // in a user namespace
	NetNS       bool `json:"netNS"`       // in a network namespace
	PIDNS       bool `json:"pidNS"`       // in a PID namespace
	Proxy       bool `json:"proxy"`       // network only through the allowlisting proxy
	Seccomp     bool `json:"seccomp"`     // seccomp filter installed
	SeccompNet  bool `json:"seccompNet"`  // all sockets refused by seccomp
	// MountNS: the tool sees its own root, built of binds (read-only
	// unless writable by its scope), a tmpfs temp dir of TempBytes and
	// its own /proc and minimal /dev.
	MountNS   bool   `json:"mountNS"`
	TempBytes uint64 `json:"tempBytes,omitempty"`
	// Memory says what bounds MemoryBytes: "cgroup v1" or "cgroup v2"
	// (the whole process tree, every kind of memory), or "rlimit" (what
	// each process writes of its own, RLIMIT_DATA).
	Memory      string `json:"memory"`
	MemoryBytes uint64 `json:"memoryBytes"`
	// DataRlimit: each process's RLIMIT_DATA is MemoryBytes too. Only
	// without a cgroup, or with one that cannot bound swap while the
	// machine has some: the rlimit counts a thread's whole stack, used
	// or not, and refused threads a cgroup has room for.
	DataRlimit bool `json:"dataRlimit,omitempty"`
	// MaxProcesses bounds the processes and threads of the tool's PID
	// namespace (its own pid_max, Linux 6.14+); 0: not bounded.
	MaxProcesses int `json:"maxProcesses,omitempty"`
}

// DefaultMaxProcesses bounds the processes and threads a tool may have at
// once where the kernel can (a fork bomb then stops there): generous for
// runtimes with worker threads and tools that spawn compilers.
const DefaultMaxProcesses = 1024
