package sandbox

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/gemkit/gemkit/internal/permission"
)

// Capabilities is what this machine can enforce, as found by Probe.
type Capabilities struct {
	OS          string `json:"os"`
	LandlockABI int    `json:"landlockABI"`
	// Namespaces is true when a tool can get its own network and PID
	// namespaces; UserNS says whether that goes through a user namespace
	// (false: as root without one).
	Namespaces bool `json:"namespaces"`
	UserNS     bool `json:"userNS"`
	// NamespaceErr is why namespaces are unavailable.
	NamespaceErr string `json:"namespaceErr,omitempty"`
	Seccomp      bool   `json:"seccomp"`
	// MaxProcesses is the bound on a tool's processes and threads, 0
	// where the kernel cannot set one (pid_max per PID namespace).
	MaxProcesses int `json:"maxProcesses,omitempty"`
	// Memory is what bounds a tool's memory: "cgroup v1" or "cgroup v2"
	// (the whole process tree), or "rlimit" (what each process writes of
	// its own, RLIMIT_DATA), with MemoryErr saying why there is no cgroup.
	Memory    string `json:"memory,omitempty"`
	MemoryErr string `json:"memoryErr,omitempty"`
	// SwapUnbounded: the cgroup cannot bound swap (v1 without swap
	// accounting) on a machine that has swap, so each process's data is
	// bounded by RLIMIT_DATA too (Enforcement.DataRlimit).
	SwapUnbounded bool `json:"swapUnbounded,omitempty"`
}

// Note says how one permission is enforced.
type Note = permission.Note

// Describe says, permission by permission, how a tool with the declared
// permissions p is confined on a machine with
// capabilities c. Notes whose Enforced is false are protections missing
// here; those of the permissions themselves (files without Landlock, the
// network) make a run refuse unless running unconfined is allowed
// (Note.Refuses where the note says so).
func Describe(p permission.Policy, c Capabilities) []Note {
	read, write, hosts := p.Read.Effective(), p.Write.Effective(), p.AllowedHosts
	if c.OS == "darwin" {
		return describeDarwin(read, write, hosts)
	}
	if c.OS != "linux" {
		return []Note{{Permission: "all", How: "no sandbox on " + c.OS + ": tools are refused unless running them unconfined is allowed", Enforced: false, Refuses: true}}
	}
	notes := describeFiles(p, c, read, write)
	notes = append(notes, describeProtected(p, c, write)...)
	notes = append(notes, describeWalls(c)...)
	notes = append(notes, describeNetwork(c, hosts)...)
	return append(notes, describeProcesses(c)...)
}

// llWhy is how a file permission reads where Landlock is missing.
const llWhy = "Landlock is not available in this kernel, so file access is NOT restricted"

// describeFiles: the read and write scopes, the extension's own folder,
// and what stays closed whatever the scopes (gemkit's configuration,
// other programs' credentials), all Landlock's.
func describeFiles(p permission.Policy, c Capabilities, read, write permission.Access) []Note {
	var notes []Note
	ll := c.LandlockABI > 0
	scope := func(a permission.Access) string {
		switch a {
		case permission.AccessWorkspace:
			return "the workspace (the folder you run from)"
		case permission.AccessHome:
			return "your home folder"
		case permission.AccessFull:
			return "every file"
		}
		return "nothing of yours"
	}
	how := llWhy
	if ll {
		how = fmt.Sprintf("Landlock (ABI %d): reads limited to %s, plus system libraries, the runtime's own installation, the extension's folder and a private temp dir", c.LandlockABI, scope(read))
	}
	notes = append(notes, Note{Permission: "filesystem.read=" + string(read), How: how, Enforced: ll})
	how = llWhy
	if ll {
		how = fmt.Sprintf("Landlock (ABI %d): writes limited to %s and a private temp dir", c.LandlockABI, scope(write))
		if write == permission.AccessNone {
			how = fmt.Sprintf("Landlock (ABI %d): no writes except a private temp dir", c.LandlockABI)
		}
	}
	notes = append(notes, Note{Permission: "filesystem.write=" + string(write), How: how, Enforced: ll})
	how = llWhy
	if ll {
		how = "Landlock: the extension's own folder is read-only for its tools, whatever the write scope"
	}
	notes = append(notes, Note{Permission: "extension folder", How: how, Enforced: ll})
	how = llWhy
	if ll {
		how = "Landlock: ~/.gemini (credentials, consent records, other extensions and their settings) is closed to the tools even under home or full (Landlock lets them list its names; in a mount namespace they see only their own extension's folder there), and so are the folders its symlinks lead to; the IDE companions' discovery files (<tmp>/gemini/ide) and Claude Code's and Qwen Code's lock files (~/.claude/ide, ~/.qwen/ide), which hold their tokens, gemkit's agent configuration (~/.config/gemkit, $XDG_CONFIG_HOME/gemkit) and the token files gemkit's servers record, wherever the environment of each running server put them (its TMPDIR, CLAUDE_CONFIG_DIR, QWEN_HOME, XDG_CONFIG_HOME, GEMINI_CLI_HOME), not only where gemkit's own would"
		if read == permission.AccessFull {
			how += "; other processes' /proc entries are closed too"
		}
	}
	notes = append(notes, Note{Permission: "gemkit's configuration", How: how, Enforced: ll})
	if read.Rank() >= permission.AccessHome.Rank() {
		how = llWhy
		if ll {
			how = "closed to the tools whatever the read scope, as ~/.gemini is: the credentials other programs keep, by kind (" + permission.CredentialKinds() +
				"), at their default places and wherever their variables (CODEX_HOME, KUBECONFIG, DOCKER_CONFIG, …) move them"
			if len(p.Credentials) > 0 {
				how += "; except, as the manifest asks and the consent said: " + strings.Join(p.Credentials, ", ")
			}
		}
		notes = append(notes, Note{Permission: "credentials", How: how, Enforced: ll})
	}
	return notes
}

// describeProtected: the paths other programs run or obey later, kept
// read-only under a write scope.
func describeProtected(p permission.Policy, c Capabilities, write permission.Access) []Note {
	ll := c.LandlockABI > 0
	var notes []Note
	if write != permission.AccessNone {
		how := "read-only, the files other programs run or obey later outside any sandbox, in the workspace, your home folder and the folders between them: " +
			permission.GuardedWords() + " (for a .git file, also the git folder it points to and its common folder; the .git of the repository the workspace is in; node_modules above every extension's folder); why: " +
			strings.Join(permission.Reasons(), "; ")
		if len(p.ProtectedWrites) > 0 {
			how += "; except in the workspace, as the manifest asks and the consent said: " + strings.Join(p.ProtectedWrites, ", ")
		}
		how += "; a workspace that is your home folder (or holds it) is refused"
		switch {
		case !ll:
			how = llWhy
		case c.Namespaces:
			how += "; read-only binds, and an absent one gets an empty placeholder bound read-only for the run (removed after it), so it cannot be created either"
		default:
			how += "; split out of the write scope by Landlock, so the folder that holds them takes no new entries (no mount namespace here)"
		}
		notes = append(notes, Note{Permission: "protected paths", How: how, Enforced: ll})
	}
	return notes
}

// describeWalls: the second wall around files (the mount namespace) and
// what bounds the tool's memory.
func describeWalls(c Capabilities) []Note {
	var notes []Note
	if c.Namespaces {
		notes = append(notes, Note{Permission: "second wall (files)", How: "own mount namespace: the tool's root holds only what it may read, bound read-only, and what it may write, bound writable, so everything else is absent and chmod, utimes, xattrs and inode flags outside the write scope fail (read-only file system); other extensions' folders and linked sources are read-only binds; /dev holds only null, zero, full, random and urandom (no terminal); /proc is the tool's own; seccomp refuses mounting and setuid/setgid bits", Enforced: true})
		notes = append(notes, Note{Permission: "temp dir", How: "a private tmpfs inside the tool's mount namespace, bounded in size, gone with the tool", Enforced: true})
	} else {
		meta := "(seccomp refuses xattrs and inode flags)"
		if !c.Seccomp {
			meta = "and their xattrs and inode flags"
		}
		notes = append(notes, Note{Permission: "second wall (files)", How: "NOT available: no mount namespace (" + c.NamespaceErr + "); only Landlock guards files, so a tool may change the modes and times of files it can reach " + meta + " and see which paths exist; the temp dir is a folder on the host's disk, unbounded", Enforced: false})
	}
	switch {
	case strings.HasPrefix(c.Memory, "cgroup"):
		how := "a " + c.Memory + " memory cgroup bounds the tool and everything it starts together (heap, shared memory, memfds, its temp dir, page cache); at most " + fmt.Sprint(DefaultMaxProcesses) + " processes"
		if c.SwapUnbounded {
			how += "; this cgroup cannot bound swap (no swap accounting) and the machine has swap, so RLIMIT_DATA also bounds what each process writes of its own (each thread's stack counts whole)"
		}
		notes = append(notes, Note{Permission: "memory", How: how, Enforced: true})
	case c.Memory != "":
		how := "RLIMIT_DATA bounds the memory each process writes of its own (heap, stacks, private mappings; the address space runtimes reserve and never touch is free); NOT the process tree as a whole: N processes may use N times the bound, and shared memory (memfds, shared anonymous mappings) is not counted"
		if c.MemoryErr != "" {
			how += "; no cgroup: " + c.MemoryErr
		}
		notes = append(notes, Note{Permission: "memory", How: how, Enforced: true})
	}
	return notes
}

// describeNetwork: no network, or only the allowed hosts through the
// proxy, by namespace or seccomp.
func describeNetwork(c Capabilities, hosts []string) []Note {
	var notes []Note
	ns := "its own network namespace"
	if c.UserNS {
		ns += " (in a user namespace)"
	}
	if len(hosts) == 0 {
		switch {
		case c.Namespaces:
			notes = append(notes, Note{Permission: "network (none)", How: ns + " with no interface up: no connection and no name lookup can leave it", Enforced: true})
		case c.Seccomp:
			notes = append(notes, Note{Permission: "network (none)", How: "seccomp refuses to create any socket (no namespaces: " + c.NamespaceErr + ")", Enforced: true})
		default:
			notes = append(notes, Note{Permission: "network (none)", How: "NOT enforced: no namespaces (" + c.NamespaceErr + ") and no seccomp filter for " + runtime.GOARCH, Enforced: false})
		}
	} else {
		list := strings.Join(hosts, ", ")
		if c.Namespaces {
			how := ns + " whose only way out is gemkit's allowlisting HTTP(S) proxy (HTTP_PROXY/HTTPS_PROXY set); the proxy resolves names and lets through only " + list + "; every refused connection is reported"
			if c.LandlockABI >= 4 {
				how += "; Landlock allows TCP connections only to the proxy's port"
			}
			notes = append(notes, Note{Permission: "network.allowedHosts", How: how, Enforced: true})
		} else {
			notes = append(notes, Note{Permission: "network.allowedHosts", How: "NOT enforceable: " + list + " needs a private network namespace and namespaces are unavailable (" + c.NamespaceErr + "); runs are refused unless running unconfined is allowed", Enforced: false, Refuses: true})
		}
	}
	return notes
}

// describeProcesses: what bounds the tool's processes, its environment
// and the kernel interfaces closed to it.
func describeProcesses(c Capabilities) []Note {
	var notes []Note
	if c.Namespaces {
		how := "own PID namespace: a timeout or cancel kills the tool and every process it started"
		if c.MaxProcesses > 0 {
			how += fmt.Sprintf("; at most %d processes and threads at once (the namespace's pid_max)", c.MaxProcesses)
		} else {
			how += "; their number is bounded only by the timeout (this kernel keeps pid_max global; Linux 6.14+ bounds it)"
		}
		notes = append(notes, Note{Permission: "processes", How: how, Enforced: true})
	} else if c.Seccomp {
		notes = append(notes, Note{Permission: "processes", How: "own process group, which seccomp keeps every descendant in (setsid refused): a timeout kills them all", Enforced: true})
	}
	notes = append(notes, Note{Permission: "environment", How: "only PATH, HOME, USER, the POSIX locale variables and terminal variables, a private TMPDIR and the extension's declared settings with values from its .env (never from your environment); no other variable of yours", Enforced: true})
	if c.Seccomp {
		notes = append(notes, Note{Permission: "kernel interfaces", How: "seccomp refuses io_uring, kernel keyrings, bpf, new user namespaces, mounting, setuid/setgid bits and sockets the network namespace cannot confine (unix, vsock); no capabilities (the bounding set emptied too, except without namespaces as a non-root user, who can gain none), no_new_privs", Enforced: true})
	} else {
		notes = append(notes, Note{Permission: "kernel interfaces", How: "NOT enforced: " + noSeccomp() + "; runs are refused unless running unconfined is allowed", Enforced: false, Refuses: true})
	}
	return notes
}

func describeDarwin(read, write permission.Access, hosts []string) []Note {
	notes := []Note{
		{Permission: "filesystem.read=" + string(read), How: "sandbox-exec profile: reads limited to the scope, system paths, the runtime, the extension's folder and a private temp dir", Enforced: true},
		{Permission: "filesystem.write=" + string(write), How: "sandbox-exec profile: writes limited to the scope and a private temp dir; the extension's folder is denied", Enforced: true},
	}
	if len(hosts) == 0 {
		notes = append(notes, Note{Permission: "network (none)", How: "sandbox-exec profile denies all network access", Enforced: true})
	} else {
		notes = append(notes, Note{Permission: "network.allowedHosts", How: "sandbox-exec profile allows only the local allowlisting proxy, which lets through only " + strings.Join(hosts, ", "), Enforced: true})
	}
	return notes
}

// noSeccomp says what is lost where gemkit has no seccomp filter for the
// CPU (32-bit and other architectures): the walls only seccomp builds.
func noSeccomp() string {
	return "no seccomp filter for this CPU architecture (" + runtime.GOARCH + "; gemkit has one for amd64 and arm64), so io_uring, new user namespaces, setuid/setgid bits and unix sockets cannot be refused"
}
