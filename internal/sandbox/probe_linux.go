package sandbox

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/sandbox/child"
)

// Probe finds what this machine can enforce: the Landlock ABI, and whether
// a tool can get its own user, network and PID namespaces, by starting the
// sandbox child in probe mode the way a tool run would.
func (l *Launcher) Probe(ctx context.Context) Capabilities {
	c := Capabilities{OS: runtime.GOOS, LandlockABI: child.LandlockABI(), Seccomp: child.SeccompSupported}
	c.Memory, c.MemoryErr = "rlimit", ""
	if l.NoCgroup {
		c.MemoryErr = "cgroups are disabled for this launcher"
	} else if cg, err := newCgroup(DefaultMemoryBytes, DefaultMaxProcesses); err != nil {
		c.MemoryErr = err.Error()
	} else {
		c.Memory = "cgroup " + cg.version
		c.SwapUnbounded = !cg.swapBounded
		_ = cg.remove()
	}
	if l.NoNamespaces {
		c.NamespaceErr = "namespaces are disabled for this launcher"
		return c
	}
	// Namespaces are probed with a trivial program, so probing never
	// depends on the running binary having the sandbox child hook (a
	// test binary may not).
	exe, env := "", []string(nil)
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		exe, env = l.Exe, []string{child.ProbeEnv + "=1"}
		if exe == "" {
			exe = "/proc/self/exe"
		}
	}
	base := uintptr(unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS)
	try := func(flags uintptr, userns bool) error {
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = env
		attr := &syscall.SysProcAttr{Cloneflags: flags}
		if userns {
			uid, gid := os.Getuid(), os.Getgid()
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		}
		cmd.SysProcAttr = attr
		return cmd.Run()
	}
	if pidnsPidMax() {
		c.MaxProcesses = DefaultMaxProcesses
	}
	err := try(base|unix.CLONE_NEWUSER, true)
	if err == nil {
		c.Namespaces, c.UserNS = true, true
		return c
	}
	c.NamespaceErr = "user namespaces refused: " + err.Error()
	if os.Getuid() == 0 {
		if err := try(base, false); err == nil {
			c.Namespaces = true
			c.NamespaceErr = ""
			return c
		}
	}
	c.MaxProcesses = 0
	return c
}
