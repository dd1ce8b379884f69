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
// connect(2) of the tool to the parent (SECCOMP_RET_USER_NOTIF), which
// reads the address, reports it and answers; with unixSockets, every
// socket(AF_UNIX) too, which the parent refuses and reports. It returns
// the listener. The main filter applies as well (the strictest verdict
// of the two wins), and so do the network namespace and Landlock when
// the parent lets a call go on; with no parent to answer, a notified
// call fails. no_new_privs must be set.
func installConnectNotify(unixSockets bool) (int, error) {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	// Jumps name their targets by index; notify and allow are the last
	// two instructions, filled in below.
	const notify, allow = -1, -2
	type insn struct {
		code   uint16
		k      uint32
		jt, jf int
	}
	prog := []insn{
		{code: ld, k: seccompArch},
		// Another architecture is the main filter's to kill.
		{code: jeq, k: auditArch, jf: allow},
		{code: ld, k: seccompNR},
		{code: jeq, k: unix.SYS_CONNECT, jt: notify},
	}
	if unixSockets {
		prog = append(prog,
			insn{code: jeq, k: unix.SYS_SOCKET, jf: allow},
			insn{code: ld, k: seccompArg0},
			insn{code: jeq, k: unix.AF_UNIX, jt: notify},
		)
	}
	prog = append(prog, insn{code: ret, k: unix.SECCOMP_RET_ALLOW}, insn{code: ret, k: unix.SECCOMP_RET_USER_NOTIF}, insn{code: ret, k: unix.SECCOMP_RET_ALLOW})
	target := func(i, t int) uint8 {
		switch t {
		case notify:
			return uint8(len(prog) - 2 - (i + 1))
		case allow:
			return uint8(len(prog) - 1 - (i + 1))
		}
		return 0 // the next instruction
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.code, K: in.k}
		if in.code == jeq {
			filter[i].Jt, filter[i].Jf = target(i, in.jt), target(i, in.jf)
		}
	}
	fp := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fp)))
	if errno != 0 {
		return -1, fmt.Errorf("installing the seccomp filter of connect calls: %w", errno)
	}
	unix.CloseOnExec(int(fd))
	return int(fd), nil
}
