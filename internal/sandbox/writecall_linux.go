package sandbox

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gemkit/gemkit/internal/sandbox/child"
	"golang.org/x/sys/unix"
)

// A write call as the watch of a tool's writes reads it from the caller
// while it waits: which call it is, its paths and flags read from the
// caller's memory, and the paths resolved as the tool sees them.

// writeCall is the child's description of the call nr, when the watch
// of writes takes it.
func writeCall(nr int32) (child.WriteCall, bool) {
	for _, c := range child.WriteCalls {
		if int32(c.Nr) == nr {
			return c, true
		}
	}
	return child.WriteCall{}, false
}

// callTarget is a path a call names, as the tool sees it.
type callTarget struct {
	// abs is the path, absolute and cleaned as written (the tool's
	// working folder or the folder of its descriptor before a relative
	// one); "" when it cannot be told.
	abs string
	// parent is a descriptor (O_PATH) of the folder that holds it,
	// reached in the tool's own view; -1 when there is none. base is
	// the name in it, real its real path in the tool's view.
	parent int
	base   string
	real   string
}

func (t *callTarget) close() {
	if t.parent >= 0 {
		unix.Close(t.parent)
		t.parent = -1
	}
}

// path is the real path of the target when its folder was found, else
// its path as written.
func (t *callTarget) path() string {
	if t.parent >= 0 && t.real != "" {
		return filepath.Join(t.real, t.base)
	}
	return t.abs
}

// exists says whether the target is there (a link counts, as itself).
func (t *callTarget) exists() bool {
	if t.parent < 0 || t.base == "" {
		return false
	}
	var st unix.Stat_t
	return unix.Fstatat(t.parent, t.base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// lexical is the path p, relative to the folder dirfd of the process
// pid (AT_FDCWD its working folder), made absolute and cleaned as
// written, in that process's view; "" when that cannot be told.
func lexical(pid int, dirfd int32, p string) string {
	if p == "" {
		return ""
	}
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	link := "/proc/" + strconv.Itoa(pid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(dirfd))
	}
	base, err := os.Readlink(link)
	if err != nil || !strings.HasPrefix(base, "/") {
		return ""
	}
	return path.Clean(base + "/" + p)
}

// resolve finds the target of the path p, relative to the folder dirfd
// of the process pid (AT_FDCWD its working folder), in that process's
// own view: its root, its working folder and its descriptors are read
// through /proc, and the folder that holds the path is opened beneath
// that root as the kernel would open it for the process, with no magic
// link followed.
func resolve(pid int, dirfd int32, p string) callTarget {
	t := callTarget{parent: -1}
	if p == "" {
		return t
	}
	proc := "/proc/" + strconv.Itoa(pid)
	base := ""
	if !strings.HasPrefix(p, "/") {
		link := proc + "/cwd"
		if dirfd != unix.AT_FDCWD {
			link = proc + "/fd/" + strconv.Itoa(int(dirfd))
		}
		var err error
		if base, err = os.Readlink(link); err != nil || !strings.HasPrefix(base, "/") {
			return t
		}
	}
	full := p
	if base != "" {
		full = base + "/" + p
	}
	t.abs = path.Clean(full)
	trimmed := strings.TrimRight(full, "/")
	i := strings.LastIndexByte(trimmed, '/')
	if i < 0 {
		return t
	}
	t.base = trimmed[i+1:]
	if t.base == "" || t.base == "." || t.base == ".." {
		t.base = ""
		return t
	}
	root, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return t
	}
	defer unix.Close(root)
	dir := trimmed[:i+1]
	fd, err := unix.Openat2(root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return t
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(real, "/") {
		unix.Close(fd)
		return t
	}
	t.parent, t.real = fd, real
	return t
}

// readMem reads len(buf) bytes at addr in the memory of the process
// pid (process_vm_readv: one call, where /proc/PID/mem takes three),
// and says how many it read.
func readMem(pid int, addr uint64, buf []byte) int {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return 0
	}
	return n
}

// readString reads a NUL-terminated string of at most max bytes at addr
// in the memory of the process pid, a page at a time so that a string at
// the end of a mapping is read.
func readString(pid int, addr uint64, max int) (string, bool) {
	var out []byte
	var buf [4096]byte
	const page = 4096
	for len(out) < max {
		n := page - int(addr%page)
		got := readMem(pid, addr, buf[:n])
		if got == 0 {
			return "", false
		}
		if i := bytes.IndexByte(buf[:got], 0); i >= 0 {
			return string(append(out, buf[:i]...)), true
		}
		out = append(out, buf[:got]...)
		addr += uint64(got)
	}
	return "", false
}

// pendingWrite is a write call as read from the caller while it waits.
type pendingWrite struct {
	c   child.WriteCall
	req *seccompNotif
	pid int
	// p is the call's path, p2 its second one (a link's or a rename's
	// target), "" when it has none.
	p, p2 string
	// flags are an open's, mode the mode it creates with.
	flags, mode uint32
}

// cont is the answer that lets the call go on as the caller made it.
func (r *pendingWrite) cont() seccompNotifResp {
	return seccompNotifResp{ID: r.req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
}

// dir is the folder descriptor argument i names (AT_FDCWD for none).
func (r *pendingWrite) dir(i int) int32 {
	if i < 0 {
		return unix.AT_FDCWD
	}
	return int32(r.req.Data.Args[i])
}

// arg is the call's argument i.
func (r *pendingWrite) arg(i int) uint64 { return r.req.Data.Args[i] }

// readWrite reads the call's paths, flags and mode from the caller; ok
// is false when a path cannot be read (the call then goes on, and meets
// Landlock).
func readWrite(req *seccompNotif, c child.WriteCall) (r pendingWrite, ok bool) {
	r = pendingWrite{c: c, req: req, pid: int(req.Pid)}
	a := req.Data.Args
	if r.p, ok = readString(r.pid, a[c.Path], unix.PathMax); !ok {
		return r, false
	}
	if c.Path2 >= 0 {
		if r.p2, ok = readString(r.pid, a[c.Path2], unix.PathMax); !ok {
			return r, false
		}
	}
	switch {
	case c.Kind == child.WriteOpen && c.Flags < 0: // creat
		r.flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	case c.Kind == child.WriteOpen:
		r.flags = uint32(a[c.Flags])
	case c.Kind == child.WriteOpen2:
		var how [8]byte
		if readMem(r.pid, a[2], how[:]) == 8 {
			r.flags = uint32(*(*uint64)(unsafe.Pointer(&how[0])))
		}
	}
	if c.Mode >= 0 {
		r.mode = uint32(a[c.Mode])
	}
	return r, true
}
