package child

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompOptions say what the filter denies beyond its fixed list.
type seccompOptions struct {
	// denyAllSockets refuses socket(2) for every family: the network
	// fallback where no network namespace could be made.
	denyAllSockets bool
	// denyNewSession refuses setsid and setpgid so that a forked child
	// cannot leave the process group that is killed on timeout; needed
	// where there is no PID namespace to kill instead.
	denyNewSession bool
	// denyMetadata refuses setting extended attributes and inode flags
	// (FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR): where there is no mount
	// namespace to make what the tool may not write read-only, Landlock
	// alone would let it change them on every file its uid owns.
	denyMetadata bool
	// allowUnix lets socket(AF_UNIX) through (Spec.AllowUnix).
	allowUnix bool
	// denyFallocate refuses fallocate (EOPNOTSUPP, as a file system
	// without it answers; the C library's posix_fallocate then writes
	// the blocks instead), so that what the process stores grows only as
	// fast as it writes (Spec.DenyFallocate).
	denyFallocate bool
	// notifyUnix lets socket(AF_UNIX) through to the watch of connect
	// calls, which refuses and reports it, except a non-blocking one,
	// refused here unreported: glibc's probe of nscd at a process's
	// first name lookup, which would be reported for every server that
	// looks a name up, though no nscd is in its view.
	notifyUnix bool
}

// Inode-flag ioctls refused with denyMetadata.
const (
	fsIocSetflags   = 0x40086602
	fsIocFssetxattr = 0x401c5820
)

// Offsets into struct seccomp_data.
const (
	seccompNR   = 0
	seccompArch = 4
	seccompArg0 = 16 // low 32 bits of args[0] on little-endian machines
)

// chmodCall is a chmod-like syscall and the index of its mode argument.
type chmodCall struct{ nr, arg uint32 }

// sysFchmodat2 is fchmodat2 (Linux 6.6), numbered alike on every
// architecture.
const sysFchmodat2 = 452

// setxattrat and removexattrat (Linux 6.13), numbered alike everywhere.
const (
	sysSetxattrat    = 463
	sysRemovexattrat = 466
)

// Jump targets at the end of the program.
const (
	tAllow = iota
	tEPERM
	tEACCES
	tKill
	tENOSYS
	tEOPNOTSUPP
	nTargets
)

type bpfInsn struct {
	code   uint16
	k      uint32
	jt, jf int // targets (tAllow...) or -1 for "next instruction"
	// skip, when set, replaces jf: on false skip that many instructions.
	skip uint8
}

// seccompProgram assembles the filter. It always refuses: mappings that
// grow down (outside the memory bound, see limits), io_uring (which
// can open sockets behind the filter's back), the kernel keyrings, bpf, and
// sockets of families the network namespace does not confine (AF_UNIX
// pathname sockets reach host services; AF_VSOCK reaches the hypervisor),
// and new user namespaces: inside one a tool would hold CAP_NET_ADMIN and
// CAP_SYS_ADMIN over fresh namespaces, the kernel surface (nf_tables and
// others) behind many privilege escalations. unshare and clone are refused
// with CLONE_NEWUSER in their flags; clone3, whose flags seccomp cannot
// read, answers ENOSYS, so that the C library falls back to clone (as it
// does on older kernels). socketpair stays allowed: a connected pair
// reaches nothing but itself. With allowUnix, AF_UNIX sockets are let
// through to what confines them there (Spec.AllowUnix).
func seccompProgram(o seccompOptions) []unix.SockFilter {
	prog := []bpfInsn{
		ld(seccompArch),
		{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: auditArch, jt: -1, jf: tKill},
		ld(seccompNR),
	}
	if x32SyscallBit != 0 {
		prog = append(prog, bpfInsn{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: x32SyscallBit, jt: tEPERM, jf: -1})
	}
	denied := []uint32{
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_BPF,
	}
	if o.denyNewSession {
		denied = append(denied, unix.SYS_SETSID, unix.SYS_SETPGID)
	}
	if o.denyMetadata {
		denied = append(denied, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_REMOVEXATTR,
			unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, sysSetxattrat, sysRemovexattrat)
	}
	for _, nr := range denied {
		prog = append(prog, jeq(nr, tEPERM))
	}
	if o.denyFallocate {
		prog = append(prog, jeq(unix.SYS_FALLOCATE, tEOPNOTSUPP))
	}
	if o.denyMetadata {
		prog = append(prog,
			bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: unix.SYS_IOCTL, jt: -1, skip: 4},
			ld(seccompArg0+8),
			jeq(fsIocSetflags, tEPERM),
			jeq(fsIocFssetxattr, tEPERM),
			// Not an inode-flag ioctl: the rest of the filter cannot
			// concern ioctl, so allow.
			bpfInsn{code: unix.BPF_RET | unix.BPF_K, k: unix.SECCOMP_RET_ALLOW, jt: -1, jf: -1},
		)
	}
	// The tool never mounts: its view of the filesystem is fixed before it
	// runs (it holds no capability, so these would fail anyway; refusing
	// them keeps the mount API's kernel surface away too).
	for _, nr := range []uint32{unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT,
		unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR} {
		prog = append(prog, jeq(nr, tEPERM))
	}
	// chmod that sets the setuid or setgid bit: the writable binds are
	// nosuid inside the sandbox, but outside it a setuid file the tool
	// made in the workspace would run with its owner's rights.
	for _, c := range append(archChmod, chmodCall{unix.SYS_FCHMOD, 1}, chmodCall{unix.SYS_FCHMODAT, 2}, chmodCall{sysFchmodat2, 2}) {
		prog = append(prog,
			bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: c.nr, jt: -1, skip: 2},
			ld(seccompArg0+8*c.arg),
			bpfInsn{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: unix.S_ISUID | unix.S_ISGID, jt: tEPERM, jf: tAllow},
		)
	}
	// A private writable mapping that grows down is a stack to the
	// kernel, which RLIMIT_DATA does not count: the one way around the
	// memory bound of a process with no cgroup (limits). Nothing but
	// the kernel's own main-thread stack needs one.
	prog = append(prog,
		bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: sysMmap, jt: -1, skip: 2},
		ld(seccompArg0+8*3),
		bpfInsn{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: unix.MAP_GROWSDOWN, jt: tEPERM, jf: tAllow},
	)
	prog = append(prog, jeq(unix.SYS_CLONE3, tENOSYS))
	for _, nr := range []uint32{unix.SYS_UNSHARE, unix.SYS_CLONE} {
		// The flags are the first argument of both; their low 32 bits
		// hold CLONE_NEWUSER. Either way the verdict is final here.
		prog = append(prog,
			bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: nr, jt: -1, skip: 2},
			ld(seccompArg0),
			bpfInsn{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: unix.CLONE_NEWUSER, jt: tEPERM, jf: tAllow},
		)
	}
	prog = append(prog, socketRules(o)...)
	// The targets, in the order of the t* constants.
	ret := func(k uint32) bpfInsn { return bpfInsn{code: unix.BPF_RET | unix.BPF_K, k: k, jt: -1, jf: -1} }
	return assemble(prog, []bpfInsn{
		ret(unix.SECCOMP_RET_ALLOW),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)),
		ret(unix.SECCOMP_RET_KILL_PROCESS),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)),
	})
}

// socketRules end the program with its verdict on socket(): every
// socket refused (denyAllSockets, no network namespace), or only the
// families the network namespace confines allowed (and AF_UNIX where
// its namespaces confine it, or a blocking one left to the watch of
// connect calls, notifyUnix).
func socketRules(o seccompOptions) []bpfInsn {
	var prog []bpfInsn
	if o.denyAllSockets {
		prog = append(prog, jeq(unix.SYS_SOCKET, tEACCES))
		prog = append(prog, bpfInsn{code: unix.BPF_RET | unix.BPF_K, k: unix.SECCOMP_RET_ALLOW, jt: -1, jf: -1})
	} else {
		prog = append(prog,
			bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: unix.SYS_SOCKET, jt: -1, jf: tAllow},
			ld(seccompArg0),
			jeq(unix.AF_INET, tAllow),
			jeq(unix.AF_INET6, tAllow),
			jeq(unix.AF_NETLINK, tAllow),
		)
		switch {
		case o.allowUnix:
			prog = append(prog, jeq(unix.AF_UNIX, tAllow))
		case o.notifyUnix:
			prog = append(prog,
				bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: unix.AF_UNIX, jt: -1, skip: 2},
				ld(seccompArg0+8),
				bpfInsn{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: unix.SOCK_NONBLOCK, jt: tEACCES, jf: tAllow},
			)
		}
		prog = append(prog,
			bpfInsn{code: unix.BPF_RET | unix.BPF_K, k: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES), jt: -1, jf: -1},
		)
	}
	return prog
}

// ld loads the 32 bits at off of the seccomp data.
func ld(off uint32) bpfInsn {
	return bpfInsn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off, jt: -1, jf: -1}
}

// jeq jumps to target when the loaded value is k, else on.
func jeq(k uint32, target int) bpfInsn {
	return bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: target, jf: -1}
}

// assemble appends targets to prog and turns each jump's target, an
// index into targets (-1: the next instruction), into the offset BPF
// jumps by.
func assemble(prog, targets []bpfInsn) []unix.SockFilter {
	base := len(prog)
	prog = append(prog, targets...)
	out := make([]unix.SockFilter, len(prog))
	rel := func(i, t int) uint8 {
		if t < 0 {
			return 0
		}
		return uint8(base + t - (i + 1))
	}
	for i, in := range prog {
		jf := rel(i, in.jf)
		if in.skip > 0 {
			jf = in.skip
		}
		out[i] = unix.SockFilter{Code: in.code, K: in.k, Jt: rel(i, in.jt), Jf: jf}
	}
	return out
}

// installSeccomp loads the filter on the calling thread. no_new_privs must
// already be set.
func installSeccomp(o seccompOptions) error {
	if !SeccompSupported {
		return errors.New("no seccomp filter for this architecture")
	}
	filter := seccompProgram(o)
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("installing seccomp filter: %w", errno)
	}
	return nil
}
