package child

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Notify is the first byte of the message that passes the parent the
// seccomp listener of the tool's connect calls (Spec.NotifyConnect).
const Notify = 'N'

// installConnectNotify stacks a second seccomp filter that hands every
// connect(2) of the tool to the parent (SECCOMP_RET_USER_NOTIF), which
// reads the address, reports it and answers; it returns the listener.
// The main filter still applies (the strictest verdict of the two wins),
// and so do the network namespace and Landlock when the parent lets a
// call go on. no_new_privs must be set.
func installConnectNotify() (int, error) {
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: seccompArch},
		// Another architecture is the main filter's to kill.
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: auditArch, Jt: 0, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: seccompNR},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CONNECT, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return -1, fmt.Errorf("installing the seccomp filter of connect calls: %w", errno)
	}
	unix.CloseOnExec(int(fd))
	return int(fd), nil
}
