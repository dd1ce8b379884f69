package sandbox

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/gemkit/gemkit/internal/proc"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"golang.org/x/sys/unix"
)

// A client that neither uses the proxy nor looks a name up (a connection
// to an address literal: Node 20's fetch("http://10.0.0.5/"), a raw
// socket) would fail inside the namespace unseen: no route, or
// Landlock's TCP rule. With ReportRefusals, where the kernel has seccomp
// user notifications, the sandbox child stacks a filter that hands every
// connect(2) of the tool to gemkit (child.Spec.NotifyConnect). gemkit
// reads the address from the tool's memory, lets the connections to the
// proxy and the resolver go on, and answers every other one EACCES,
// recording it (Method DirectMethod) as the proxy records a host. The
// verdict is only a report's: a connection let go on still meets the
// namespace, which holds nothing but the proxy and the resolver, and
// Landlock, so an address the tool changes after gemkit read it (another
// thread writing the buffer) reaches nothing more. Where the memory
// cannot be read, the call goes on unreported, as without the filter.

// The kernel's structures of a seccomp notification (linux/seccomp.h).
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// connectWatch is the watch of a tool's connect calls.
type connectWatch struct {
	stop   int           // write end of the pipe that ends the watch
	polled *os.File      // the listener in Go's poller, or nil
	done   chan struct{} // closed when the watch ended
}

// end stops the watch and waits for it.
func (w *connectWatch) end() {
	if w.polled != nil {
		_ = w.polled.SetReadDeadline(time.Now())
	}
	_, _ = unix.Write(w.stop, []byte{0})
	<-w.done
	unix.Close(w.stop)
}

// watchConnects answers the notifications of the tool's connect calls
// on the listener fd, recording with px the ones it refuses, until the
// tool is gone or the watch is ended. It owns fd.
func watchConnects(fd int, px *netproxy.Proxy, ww *writeWatch) (*connectWatch, error) {
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// The notifications are waited on in Go's poller where the
	// descriptor can be (no goroutine in a blocking poll(2) through the
	// tool's run: each keeps the runtime's monitor waking every 20 us),
	// by poll(2) with the stop pipe otherwise.
	syncWakeUp(fd)
	f, nfd := pollerFile(fd, "seccomp-notify")
	if f != nil {
		unix.Close(fd)
		fd = nfd
	}
	w := &connectWatch{stop: pipe[1], polled: f, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer unix.Close(pipe[0])
		if f != nil {
			defer f.Close()
			if watchPolled(f, func() bool { return answerConnect(fd, px, ww) }) {
				return
			}
		} else {
			defer unix.Close(fd)
		}
		for {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(pipe[0]), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, -1); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
			if fds[1].Revents != 0 || fds[0].Revents&unix.POLLIN == 0 {
				return // ended, or every process of the tool is gone
			}
			if !answerConnect(fd, px, ww) {
				return
			}
		}
	}()
	return w, nil
}

// answerConnect receives one notification of the listener fd, which
// poll said is there, and answers it; false when the listener failed.
func answerConnect(fd int, px *netproxy.Proxy, ww *writeWatch) bool {
	var req seccompNotif
	if err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINTR) {
			return true // the caller died meanwhile
		}
		return false
	}
	resp := seccompNotifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	if c, ok := writeCall(req.Data.Nr); ok && ww != nil {
		resp = ww.handle(fd, &req, c)
	} else if req.Data.Nr == unix.SYS_SOCKET {
		// The filter hands over only socket(AF_UNIX), and only
		// when Unix sockets are not allowed (child.Spec.AllowUnix).
		px.Record(UnixMethod, "", 0, UnixNotAllowed)
		resp = seccompNotifResp{ID: req.ID, Error: -int32(unix.EACCES)}
	} else if req.Data.Nr == unix.SYS_BIND {
		// A bind of a TCP socket to a port is a listen: refused
		// (Landlock refuses it too, from ABI 4 on) and reported.
		// Any other bind goes on, to meet the namespace and
		// Landlock as before: a UDP socket's, a Unix socket's,
		// and one to port 0, which is a probe more often than a
		// listen (Python's urllib3 binds [::1]:0 to learn whether
		// IPv6 works, as gcloud does at each start).
		if ip, port, ok := connectTarget(fd, &req); ok && port != 0 && streamSocket(fd, &req) {
			px.Record(ListenMethod, ip.String(), port, ListenRefused)
			resp = seccompNotifResp{ID: req.ID, Error: -int32(unix.EACCES)}
		}
	} else if ip, port, ok := connectTarget(fd, &req); ok && !toSandbox(ip, port) {
		reason := DirectNotAllowed
		if px.Allowed(ip.String(), port) {
			reason = DirectNoProxy
		}
		px.Record(DirectMethod, ip.String(), port, reason)
		resp = seccompNotifResp{ID: req.ID, Error: -int32(unix.EACCES)}
	}
	_ = ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	return true
}

// seccompIoctlNotifSetFlags is SECCOMP_IOCTL_NOTIF_SET_FLAGS
// (linux/seccomp.h: SECCOMP_IOW(4, __u64)), which x/sys/unix lacks.
const seccompIoctlNotifSetFlags = 0x40082104

// syncWakeUp asks the kernel to hand each notification of the listener
// fd to gemkit, and gemkit's answer back to the tool, as a synchronous
// wake-up on the current processor (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
// Linux 6.6): the tool waits for the answer anyway, so the two need not
// wait for a processor each. A shell's start makes three such round
// trips (its /dev/tty opened to write, and nscd's Unix socket twice, of
// getpwuid), each of two wake-ups, which a loaded machine makes
// milliseconds. Older kernels refuse the flag: the answers are the same,
// only slower.
func syncWakeUp(fd int) {
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(fd), seccompIoctlNotifSetFlags, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
}

// connectTarget reads the address of a connect call from the caller's
// memory: an IPv4 or IPv6 one, else ok is false (a unix socket's, or
// AF_UNSPEC, which disconnects a datagram socket).
func connectTarget(fd int, req *seccompNotif) (net.IP, int, bool) {
	size := min(req.Data.Args[2], 128)
	if size < 8 {
		return nil, 0, false
	}
	mem, err := os.Open("/proc/" + strconv.FormatUint(uint64(req.Pid), 10) + "/mem")
	if err != nil {
		return nil, 0, false
	}
	defer mem.Close()
	buf := make([]byte, size)
	if _, err := mem.ReadAt(buf, int64(req.Data.Args[1])); err != nil {
		return nil, 0, false
	}
	// The pid still names the caller: the notification is still pending.
	if ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&req.ID)) != nil {
		return nil, 0, false
	}
	port := int(binary.BigEndian.Uint16(buf[2:4]))
	switch binary.NativeEndian.Uint16(buf[0:2]) {
	case unix.AF_INET:
		return net.IP(buf[4:8]), port, true
	case unix.AF_INET6:
		if size >= 24 {
			return net.IP(buf[8:24]), port, true
		}
	}
	return nil, 0, false
}

// streamSocket reports whether the socket of the pending call req (its
// first argument) is a stream socket, read through a copy of the
// caller's descriptor (pidfd_getfd, which needs the rights reading its
// memory needs). Where that fails it reports false: the call goes on
// unreported, as without the watch.
func streamSocket(fd int, req *seccompNotif) bool {
	// The notification names the calling thread; a pidfd is of its
	// process (the thread group), whose descriptors the thread shares.
	pidfd, err := unix.PidfdOpen(threadGroup(int(req.Pid)), 0)
	if err != nil {
		return false
	}
	defer unix.Close(pidfd)
	sock, err := unix.PidfdGetfd(pidfd, int(int32(req.Data.Args[0])), 0)
	if err != nil {
		return false
	}
	defer unix.Close(sock)
	// The pid still names the caller: the notification is still pending.
	if ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&req.ID)) != nil {
		return false
	}
	typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	return err == nil && typ == unix.SOCK_STREAM
}

// threadGroup is the process of the thread tid (its Tgid), tid itself
// when that cannot be read.
func threadGroup(tid int) int {
	if pid, err := proc.ThreadGroup(tid); err == nil {
		return pid
	}
	return tid
}

// toSandbox reports whether a connection goes to the proxy or the
// resolver inside the tool's namespace.
func toSandbox(ip net.IP, port int) bool {
	return ip.Equal(net.IPv4(127, 0, 0, 1)) && (port == ProxyPort || port == netproxy.ResolverPort)
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, err := ioctlValue(fd, req, arg)
	return err
}

// ioctlValue is ioctl for a request that returns a value (the number of
// a descriptor added).
func ioctlValue(fd int, req uint, arg unsafe.Pointer) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}
