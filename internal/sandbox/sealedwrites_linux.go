package sandbox

import (
	"errors"
	"path/filepath"
	"strconv"
	"unsafe"

	"github.com/gemkit/gemkit/internal/sandbox/child"
	"golang.org/x/sys/unix"
)

// The writes gemkit makes for a tool in a sealed folder (one that holds
// absent protected names): each kind of call, made by gemkit in the
// caller's stead where it leaves no protected name made or replaced,
// with the answer (or descriptor) handed back as the call's own.

// handleOpen: an open that writes or creates, made by gemkit in a sealed
// folder (and its descriptor handed over), else reported.
func (w *writeWatch) handleOpen(fd int, r *pendingWrite) seccompNotifResp {
	if r.flags&unix.O_PATH != 0 {
		return r.cont()
	}
	t := resolve(r.pid, r.dir(r.c.Dir), r.p)
	defer t.close()
	if r.flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) == 0 && (r.flags&unix.O_CREAT == 0 || t.exists()) {
		return r.cont() // it reads
	}
	if r.c.Kind == child.WriteOpen && r.flags&unix.O_TMPFILE != unix.O_TMPFILE {
		if f, sealed := w.sealedOf(t.parent); sealed {
			return w.make(fd, r.req, r.pid, &t, f, func(umask uint32) (int, error) {
				return w.open(fd, r.req, &t, r.flags, r.mode&^umask)
			})
		}
	}
	w.report(t.path())
	return r.cont()
}

// handleMake: a folder or a node (a file, a FIFO; no device) made by
// gemkit in a sealed folder, else reported.
func (w *writeWatch) handleMake(fd int, r *pendingWrite) seccompNotifResp {
	t := resolve(r.pid, r.dir(r.c.Dir), r.p)
	defer t.close()
	f, sealed := w.sealedOf(t.parent)
	if !sealed {
		w.report(t.path())
		return r.cont()
	}
	mode := r.mode
	if r.c.Kind == child.WriteMknod {
		if k := mode & unix.S_IFMT; k != 0 && k != unix.S_IFREG && k != unix.S_IFIFO {
			return w.answer(r.req, unix.EPERM)
		}
	}
	return w.make(fd, r.req, r.pid, &t, f, func(umask uint32) (int, error) {
		if r.c.Kind == child.WriteMkdir {
			return -1, w.fixMode(&t, mode&^umask&0o7777, unix.Mkdirat(t.parent, t.base, mode&^umask&0o7777))
		}
		return -1, w.fixMode(&t, mode&^umask&0o7777, unix.Mknodat(t.parent, t.base, mode&^umask, 0))
	})
}

// handleSymlink: a link made by gemkit in a sealed folder, else reported.
func (w *writeWatch) handleSymlink(fd int, r *pendingWrite) seccompNotifResp {
	t := resolve(r.pid, r.dir(r.c.Dir2), r.p2)
	defer t.close()
	if f, sealed := w.sealedOf(t.parent); sealed {
		return w.make(fd, r.req, r.pid, &t, f, func(uint32) (int, error) {
			return -1, unix.Symlinkat(r.p, t.parent, t.base)
		})
	}
	w.report(t.path())
	return r.cont()
}

// handleTruncate: a file in a sealed folder truncated by gemkit (a link
// or a mount point left to the kernel), else reported.
func (w *writeWatch) handleTruncate(fd int, r *pendingWrite) seccompNotifResp {
	t := resolve(r.pid, r.dir(r.c.Dir), r.p)
	defer t.close()
	if f, sealed := w.sealedOf(t.parent); sealed {
		return w.make(fd, r.req, r.pid, &t, f, func(uint32) (int, error) {
			nfd, err := w.openBeneath(&t, unix.O_WRONLY, 0)
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
				return -1, errGoOn // a link, a mount point: the kernel's
			}
			if err != nil {
				return -1, err
			}
			defer unix.Close(nfd)
			return -1, unix.Ftruncate(nfd, int64(r.arg(1)))
		})
	}
	w.report(t.path())
	return r.cont()
}

// handleUnlink: a name in a sealed folder removed by gemkit (never a
// mount point), else reported.
func (w *writeWatch) handleUnlink(fd int, r *pendingWrite) seccompNotifResp {
	t := resolve(r.pid, r.dir(r.c.Dir), r.p)
	defer t.close()
	var uflags int
	switch int32(r.c.Nr) {
	case unix.SYS_UNLINKAT:
		uflags = int(r.arg(2))
	case child.SysRmdir:
		uflags = unix.AT_REMOVEDIR
	}
	if f, sealed := w.sealedOf(t.parent); sealed {
		return w.make(fd, r.req, r.pid, &t, f, func(uint32) (int, error) {
			if w.mountPoint(t.parent, t.base) {
				return -1, unix.EBUSY
			}
			w.forget(t.path())
			return -1, unix.Unlinkat(t.parent, t.base, uflags)
		})
	}
	w.report(t.path())
	return r.cont()
}

// handleRename: a rename into or out of a sealed folder made by gemkit,
// else reported.
func (w *writeWatch) handleRename(fd int, r *pendingWrite) seccompNotifResp {
	t := resolve(r.pid, r.dir(r.c.Dir2), r.p2)
	defer t.close()
	src := resolve(r.pid, r.dir(r.c.Dir), r.p)
	defer src.close()
	f, sealed := w.sealedOf(t.parent)
	if _, from := w.sealedOf(src.parent); sealed || from {
		var rflags uint
		if int32(r.c.Nr) == unix.SYS_RENAMEAT2 {
			rflags = uint(r.arg(4))
		}
		return w.make(fd, r.req, r.pid, &t, f, func(uint32) (int, error) {
			return -1, w.rename(&src, &t, rflags)
		})
	}
	w.report(t.path())
	return r.cont()
}

// sealedOf says whether the folder parent is a sealed folder or one made
// in one since the run began (a folder gemkit made for the tool has no
// rule of its own), and for a sealed folder itself, which (for its
// protected names); a folder with a rule of its own is not. It walks up
// from parent by "..", in the tool's view, to the first folder it
// knows.
func (w *writeWatch) sealedOf(parent int) (*sealedFolder, bool) {
	if parent < 0 || len(w.sealed) == 0 {
		return nil, false
	}
	cur := parent
	defer func() {
		if cur != parent {
			unix.Close(cur)
		}
	}()
	var st unix.Stat_t
	var last devIno
	for depth := 0; depth < 256; depth++ {
		if unix.Fstat(cur, &st) != nil {
			return nil, false
		}
		k := devInoOf(&st)
		if depth > 0 && k == last {
			return nil, false // the root
		}
		switch {
		case w.granted[k]:
			return nil, false
		case w.sealed[k] != nil && depth == 0:
			return w.sealed[k], true
		case w.sealed[k] != nil:
			return nil, true
		}
		next, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, false
		}
		if cur != parent {
			unix.Close(cur)
		}
		cur, last = next, k
	}
	return nil, false
}

// protected says whether the name base is a protected one of the sealed
// folder f (nil: a folder made since, which holds none).
func (f *sealedFolder) protected(base string) bool {
	if f == nil {
		return false
	}
	for _, n := range f.names {
		if n == base {
			return true
		}
	}
	for _, p := range f.patterns {
		if ok, _ := filepath.Match(p, base); ok {
			return true
		}
	}
	return false
}

// make makes the new name t in a sealed folder for the tool, by do (given
// the tool's umask), unless it is a protected name there, which is
// refused and reported. do returns the descriptor it handed the tool,
// its number in the tool (-1: none, the call answers 0), or why it
// failed, which becomes the call's error.
func (w *writeWatch) make(fd int, req *seccompNotif, pid int, t *callTarget, f *sealedFolder, do func(umask uint32) (int, error)) seccompNotifResp {
	if t.base == "" {
		return w.answer(req, unix.EACCES)
	}
	if f.protected(t.base) {
		w.record(t.path(), WriteProtected)
		return w.answer(req, unix.EACCES)
	}
	// Read at each call: a program may change its umask as it runs.
	nfd, err := do(toolUmask(pid))
	var errno unix.Errno
	switch {
	case errors.Is(err, errGoOn):
		return seccompNotifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	case errors.As(err, &errno):
		return w.answer(req, errno)
	case err != nil:
		return w.answer(req, unix.EIO)
	case nfd < 0:
		return seccompNotifResp{ID: req.ID}
	}
	return seccompNotifResp{ID: req.ID, Val: int64(nfd)}
}

// errGoOn is what a maker returns for a call it leaves to the kernel.
var errGoOn = errors.New("go on")

// seccompNotifAddfd is struct seccomp_notif_addfd (linux/seccomp.h).
type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// open opens t for the tool with flags and mode (its umask taken) and
// hands it the descriptor, whose number in the tool it returns: the
// call's answer. The file is opened, or created, beneath the folder the
// tool's path led to, never through a link or into another mount: a
// name that is a link, or a mount point (a protected path that exists,
// another extension's folder), is left to the kernel, whose mounts and
// Landlock decide.
//
// The descriptor is added first and the call answered after
// (SECCOMP_IOCTL_NOTIF_SEND with its number), not both at once with
// SECCOMP_ADDFD_FLAG_SEND: the kernel marks the call answered as soon as
// that flag's request is queued, and when a signal interrupts gemkit's
// wait for it before the tool took the descriptor (Go's runtime signals
// its threads), the request is withdrawn and the call returns 0, no
// descriptor, as if it had opened one: the tool took its standard input
// for the file, wrote to it, closed it (Linux 6.18, kernel/seccomp.c,
// seccomp_notify_addfd; TestSealedWorkspace, 3,000 racing opens, saw it
// about once in 20 runs under load, as "broken pipe"). Without the flag an
// interrupted request is withdrawn and asked again, and the call stays
// unanswered meanwhile; if the tool is interrupted between the two steps
// (its call is then made again), it keeps a descriptor it did not ask for.
func (w *writeWatch) open(fd int, req *seccompNotif, t *callTarget, flags, mode uint32) (int, error) {
	var nfd int
	var err error
	created := false
	for try := 0; try < 2; try++ {
		if flags&unix.O_CREAT != 0 {
			nfd, err = w.openBeneath(t, flags|unix.O_EXCL, mode)
			if err == nil {
				created = true
				break
			}
			if !errors.Is(err, unix.EEXIST) || flags&unix.O_EXCL != 0 {
				break
			}
		}
		nfd, err = w.openBeneath(t, flags&^(unix.O_CREAT|unix.O_EXCL), 0)
		if !errors.Is(err, unix.ENOENT) || flags&unix.O_CREAT == 0 {
			break // else removed since: made anew
		}
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return -1, errGoOn
	}
	if err != nil {
		return -1, err
	}
	if created && mode&w.umask != 0 {
		_ = unix.Fchmod(nfd, mode&0o7777)
	}
	var fdFlags uint32
	if flags&unix.O_CLOEXEC != 0 {
		fdFlags = unix.O_CLOEXEC
	}
	add := seccompNotifAddfd{ID: req.ID, Srcfd: uint32(nfd), NewfdFlags: fdFlags}
	tfd, err := ioctlValue(fd, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&add))
	unix.Close(nfd)
	if err != nil {
		return -1, err
	}
	return tfd, nil
}

// openBeneath opens the name of t beneath its folder with flags: no link
// followed, no mount crossed.
func (w *writeWatch) openBeneath(t *callTarget, flags, mode uint32) (int, error) {
	return unix.Openat2(t.parent, t.base, &unix.OpenHow{
		Flags:   uint64(flags&^unix.O_CLOEXEC) | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Mode:    uint64(mode & 0o7777),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
}

// mountPoint says whether the name base of the folder dir is a mount
// point of the tool's root, which gemkit, outside its mount namespace,
// must never rename, replace or remove: that would carry the mount
// along, or detach it there.
func (w *writeWatch) mountPoint(dir int, base string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && w.mounts[devInoOf(&st)]
}

// fixMode gives the entry t the mode the tool asked for, when err (of
// making it) is nil and gemkit's umask took more from it than the
// tool's: the kernel applied gemkit's.
func (w *writeWatch) fixMode(t *callTarget, mode uint32, err error) error {
	if err != nil || mode&w.umask == 0 {
		return err
	}
	nfd, oerr := unix.Openat(t.parent, t.base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		return nil
	}
	defer unix.Close(nfd)
	// Through the descriptor's own entry: an O_PATH one takes no fchmod.
	_ = unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(nfd), mode, 0)
	return nil
}

// rename renames src to dst, one of them in a sealed folder, for the
// tool: never a protected name, nor a mount point of the tool's root or
// onto one.
func (w *writeWatch) rename(src, dst *callTarget, flags uint) error {
	if src.parent < 0 || src.base == "" {
		return unix.ENOENT
	}
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		return unix.EPERM
	}
	if dst.parent < 0 || dst.base == "" {
		return unix.ENOENT
	}
	var st unix.Stat_t
	if err := unix.Fstatat(src.parent, src.base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if w.mountPoint(src.parent, src.base) || w.mountPoint(dst.parent, dst.base) {
		return unix.EBUSY
	}
	if f, _ := w.sealedOf(src.parent); f.protected(src.base) {
		return unix.EACCES
	}
	w.forget(src.path())
	w.forget(dst.path())
	return unix.Renameat2(src.parent, src.base, dst.parent, dst.base, flags)
}
