package child

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Notify is the first byte of the message that passes the parent the
// seccomp listener of the tool's connect calls (Spec.NotifyConnect).
const Notify = 'N'

// installConnectNotify stacks a seccomp filter that hands every
// connect(2) and bind(2) of the tool to the parent
// (SECCOMP_RET_USER_NOTIF), which reads the address, reports it and
// answers (a bind it lets go on unless it is a TCP socket's: a listen,
// which Landlock refuses too); with unixSockets, every socket(AF_UNIX)
// too, which the parent refuses and reports. It returns
// the listener. The main filter applies as well (the strictest verdict
// of the two wins), and so do the network namespace and Landlock when
// the parent lets a call go on; with no parent to answer, a notified
// call fails. no_new_privs must be set.
func installConnectNotify(unixSockets, writes, removes bool) (int, error) {
	filter := notifyProgram(unixSockets, writes, removes)
	fp := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fp)))
	if errno != 0 {
		return -1, fmt.Errorf("installing the seccomp filter of connect calls: %w", errno)
	}
	unix.CloseOnExec(int(fd))
	return int(fd), nil
}

// notifyProgram assembles installConnectNotify's filter; with writes,
// the calls that may write a path go to the parent too (WriteCalls): an
// open only when its flags ask to write, create or truncate, and those
// that remove a name only with removes.
func notifyProgram(unixSockets, writes, removes bool) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	// Jump targets at the end of the program.
	const tNotify, tAllowed = 0, 1
	prog := []bpfInsn{
		{code: ld, k: seccompArch, jt: -1, jf: -1},
		// Another architecture is the main filter's to kill.
		{code: jeq, k: auditArch, jt: -1, jf: tAllowed},
		{code: ld, k: seccompNR, jt: -1, jf: -1},
		{code: jeq, k: unix.SYS_CONNECT, jt: tNotify, jf: -1},
		{code: jeq, k: unix.SYS_BIND, jt: tNotify, jf: -1},
	}
	if writes {
		const jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		for _, c := range WriteCalls {
			if c.Kind == WriteUnlink && !removes {
				continue
			}
			if c.Flags < 0 {
				prog = append(prog, bpfInsn{code: jeq, k: c.Nr, jt: tNotify, jf: -1})
				continue
			}
			// An open: to the parent when its flags write, else on.
			prog = append(prog,
				bpfInsn{code: jeq, k: c.Nr, jt: -1, skip: 2},
				bpfInsn{code: ld, k: uint32(seccompArg0 + 8*c.Flags), jt: -1, jf: -1},
				bpfInsn{code: jset, k: OpenWrites, jt: tNotify, jf: tAllowed},
			)
		}
		// The loads above change the accumulator: the number again.
		prog = append(prog, bpfInsn{code: ld, k: seccompNR, jt: -1, jf: -1})
	}
	if unixSockets {
		prog = append(prog,
			bpfInsn{code: jeq, k: unix.SYS_SOCKET, jt: -1, jf: tAllowed},
			bpfInsn{code: ld, k: seccompArg0, jt: -1, jf: -1},
			bpfInsn{code: jeq, k: unix.AF_UNIX, jt: tNotify, jf: -1},
		)
	}
	prog = append(prog, bpfInsn{code: ret, k: unix.SECCOMP_RET_ALLOW, jt: -1, jf: -1})
	return assemble(prog, []bpfInsn{
		{code: ret, k: unix.SECCOMP_RET_USER_NOTIF, jt: -1, jf: -1},
		{code: ret, k: unix.SECCOMP_RET_ALLOW, jt: -1, jf: -1},
	})
}

// OpenWrites are the flags of an open that may write: what makes the
// watch of writes look at it.
const OpenWrites = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// WriteCall is a system call that may write a path, as the watch of
// writes reads it (Spec.NotifyWrites): which of its arguments are the
// folder (a descriptor, AT_FDCWD or -1 for none, a path relative to
// the working folder) and the path of what it writes, the second ones
// for a call that names two (link, rename: the new name), its flags
// (opens only: -1 otherwise) and its mode (-1: none).
type WriteCall struct {
	Nr                     uint32
	Kind                   WriteKind
	Dir, Path, Dir2, Path2 int
	Flags, Mode            int
}

// WriteKind is what a WriteCall does.
type WriteKind uint8

// The kinds of WriteCall.
const (
	WriteOpen     WriteKind = iota + 1 // open, openat, creat: Flags, Mode
	WriteOpen2                         // openat2: its open_how at Flags
	WriteMkdir                         // Mode
	WriteMknod                         // Mode
	WriteSymlink                       // Path is the link's target, Path2 the link
	WriteLink                          // Path the old name, Path2 the new
	WriteRename                        // Path the old name, Path2 the new; Flags of renameat2
	WriteTruncate                      // Path
	WriteUnlink                        // Path; unlinkat's flags are its third argument
)
