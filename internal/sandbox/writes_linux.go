package sandbox

import (
	"bytes"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/sandbox/child"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"golang.org/x/sys/unix"
)

// The watch of a tool's writes (child.Spec.NotifyWrites, for a server
// run with ReportRefusals in its own mount namespace) does two things
// with the calls that may write a path, which the sandbox child hands
// to gemkit through the seccomp listener of its connect calls:
//
//   - It reports the writes the sandbox refuses, by the path the call
//     names, whatever the call's arguments said (Node's
//     mkdirSync(dir, {recursive: true}) fails with ENOENT on a path it
//     names nowhere, a new file with EROFS): a Denial of Method
//     WriteMethod, with why and, in words for the person, what allows
//     it (the caller's to say: extmcp names --allow-write workspace).
//     The verdict is only a report's: the call goes on to the kernel,
//     whose mounts and Landlock decide, and a path the tool changes
//     after gemkit read it (another thread writing the buffer) changes
//     nothing but the report.
//
//   - Where the write scope holds protected names that do not exist
//     (GEMINI.md, .env, .mcp.json, ...), it keeps the tool from creating
//     them without a placeholder in the person's folder: the folders
//     holding them are sealed (sealedFolder), their Landlock rule
//     withholds making entries (child.PathRule.NoCreate), and gemkit
//     makes each new name the tool asks for there that is not a
//     protected one, itself, on the descriptor of that folder as the
//     tool sees it, and hands the tool the result (a new file's
//     descriptor through SECCOMP_IOCTL_NOTIF_ADDFD). What gemkit makes
//     is the name it read and checked, never what the tool's memory
//     says later, so racing the check gains nothing: a call that gemkit
//     lets go on meets Landlock, which refuses every new name there.
//     The folders that existed when the tool started keep rules of
//     their own, so what the tool makes in them is the kernel's alone.

// devIno names a file or folder across mount namespaces: a bind shows
// the device and inode of what it binds.
type devIno struct{ dev, ino uint64 }

func devInoOf(st *unix.Stat_t) devIno { return devIno{st.Dev, st.Ino} }

// writeWatch is what the watch of a tool's writes knows of its run.
type writeWatch struct {
	px *netproxy.Proxy
	// workspace and ext are the real paths of the workspace and of the
	// tool's extension's folder; wsWritable says the tool may write the
	// workspace.
	workspace, ext string
	wsWritable     bool
	// writable are the paths its rules let it write; readOnly the
	// read-only binds inside them (other extensions' folders, the
	// protected paths that exist), guarded telling the protected ones.
	writable []string
	readOnly []overlay
	// sealed are the sealed folders by what they are; granted the
	// folders in them with rules of their own; mounts the mount points
	// in the write scope, which gemkit never renames or replaces.
	sealed  map[devIno]*sealedFolder
	granted map[devIno]bool
	mounts  map[devIno]bool
	// grantedPaths are the paths of the granted folders in the sealed
	// ones, as the run began: a call whose path, as written, lies in one
	// goes on at once (one that leads elsewhere through a link meets
	// Landlock). One that gemkit renames or removes for the tool leaves
	// the list.
	grantedPaths []string
	// umask is gemkit's own, which the kernel applies to what gemkit
	// makes on the tool's behalf.
	umask uint32
}

// newWriteWatch prepares the watch of a run of c whose rules are rules,
// with the read-only binds overlays, the sealed folders sealed and the
// mount steps steps.
func newWriteWatch(px *netproxy.Proxy, c *Command, rules []PathRule, overlays []overlay, sealed []sealedFolder, steps []child.Mount) *writeWatch {
	w := &writeWatch{px: px, sealed: map[devIno]*sealedFolder{}, granted: map[devIno]bool{}, mounts: map[devIno]bool{}}
	w.workspace, _ = filepath.EvalSymlinks(c.Policy.Workspace)
	w.ext, _ = filepath.EvalSymlinks(c.Policy.ExtensionDir)
	w.wsWritable = c.Policy.Write == "workspace" || c.Policy.Write == "home" || c.Policy.Write == "full"
	var st unix.Stat_t
	for _, r := range rules {
		if !r.Write {
			continue
		}
		w.writable = append(w.writable, r.Path)
		if !r.NoCreate && !r.File && unix.Lstat(r.Path, &st) == nil {
			w.granted[devInoOf(&st)] = true
			for _, f := range sealed {
				if fsutil.Within(f.path, r.Path) {
					w.grantedPaths = append(w.grantedPaths, r.Path)
					break
				}
			}
		}
	}
	w.readOnly = overlays
	for i := range sealed {
		if unix.Lstat(sealed[i].path, &st) == nil {
			w.sealed[devInoOf(&st)] = &sealed[i]
		}
	}
	for _, s := range steps {
		if s.Kind != child.MountBind {
			continue
		}
		for _, f := range sealed {
			if fsutil.Within(f.path, s.Path) && unix.Lstat(s.Path, &st) == nil {
				w.mounts[devInoOf(&st)] = true
				break
			}
		}
	}
	for _, o := range overlays {
		if !o.pattern && unix.Lstat(o.path, &st) == nil {
			w.mounts[devInoOf(&st)] = true
		}
	}
	w.umask = selfUmask()
	return w
}

// selfUmask is this process's umask, read without changing it.
func selfUmask() uint32 { return umaskOf("/proc/self/status") }

// toolUmask is the umask of the process pid.
func toolUmask(pid int) uint32 { return umaskOf("/proc/" + strconv.Itoa(pid) + "/status") }

// umaskOf is the umask a /proc status file says, 022 where it cannot be
// read.
func umaskOf(status string) uint32 {
	b, err := os.ReadFile(status)
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(n)
				}
			}
		}
	}
	return 0o022
}

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

// inSealed says whether p, as written, lies in a sealed folder and not
// in a folder of it that has a rule of its own.
func (w *writeWatch) inSealed(p string) bool {
	for _, g := range w.grantedPaths {
		if fsutil.Within(g, p) && g != p {
			return false
		}
	}
	for _, f := range w.sealed {
		if fsutil.Within(f.path, p) {
			return true
		}
	}
	return false
}

// forget takes the path p out of grantedPaths: gemkit renamed or removed
// it for the tool, and what comes there next has no rule of its own.
func (w *writeWatch) forget(p string) {
	w.grantedPaths = slices.DeleteFunc(w.grantedPaths, func(g string) bool { return fsutil.Within(p, g) })
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

// handle answers the notification req of the write call c (fd is the
// listener): it says whether it sent the answer itself (a descriptor
// handed over), else the answer to send.
func (w *writeWatch) handle(fd int, req *seccompNotif, c child.WriteCall) (seccompNotifResp, bool) {
	cont := seccompNotifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	pid := int(req.Pid)
	a := req.Data.Args
	dirOf := func(i int) int32 {
		if i < 0 {
			return unix.AT_FDCWD
		}
		return int32(a[i])
	}
	str := func(i int) (string, bool) { return readString(pid, a[i], unix.PathMax) }
	p, ok := str(c.Path)
	if !ok {
		return cont, false
	}
	var p2 string
	if c.Path2 >= 0 {
		if p2, ok = str(c.Path2); !ok {
			return cont, false
		}
	}
	var flags, mode uint32
	switch {
	case c.Kind == child.WriteOpen && c.Flags < 0: // creat
		flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	case c.Kind == child.WriteOpen:
		flags = uint32(a[c.Flags])
	case c.Kind == child.WriteOpen2:
		var how [8]byte
		if readMem(pid, a[2], how[:]) == 8 {
			flags = uint32(*(*uint64)(unsafe.Pointer(&how[0])))
		}
	}
	if c.Mode >= 0 {
		mode = uint32(a[c.Mode])
	}
	// Most calls write where the server may (its data folder, its
	// temporary folder): told by the path as written, they go on at
	// once. One that leads elsewhere through a link it made meets
	// Landlock, which leaves it only reading in a sealed folder.
	quick := func(dir int, p string) bool {
		abs := lexical(pid, dirOf(dir), p)
		return abs != "" && !w.inSealed(abs) && w.refused(abs) == ""
	}
	switch {
	case c.Kind == child.WriteSymlink || c.Kind == child.WriteLink:
		if quick(c.Dir2, p2) {
			return cont, false
		}
	case c.Kind == child.WriteRename:
		if quick(c.Dir2, p2) && quick(c.Dir, p) {
			return cont, false
		}
	case quick(c.Dir, p):
		return cont, false
	}
	// What was read names the caller while it waits, before gemkit acts
	// on it: the pid is still its own.
	if ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&req.ID)) != nil {
		return cont, false
	}
	switch c.Kind {
	case child.WriteOpen, child.WriteOpen2:
		if flags&unix.O_PATH != 0 {
			return cont, false
		}
		t := resolve(pid, dirOf(c.Dir), p)
		defer t.close()
		if flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) == 0 && (flags&unix.O_CREAT == 0 || t.exists()) {
			return cont, false // it reads
		}
		if c.Kind == child.WriteOpen && flags&unix.O_TMPFILE != unix.O_TMPFILE {
			if f, sealed := w.sealedOf(t.parent); sealed {
				return w.make(fd, req, pid, &t, f, func(umask uint32) (int, error) {
					return w.open(fd, req, &t, flags, mode&^umask)
				})
			}
		}
		w.report(t.path())
	case child.WriteMkdir, child.WriteMknod:
		t := resolve(pid, dirOf(c.Dir), p)
		defer t.close()
		if f, sealed := w.sealedOf(t.parent); sealed {
			if c.Kind == child.WriteMknod {
				if k := mode & unix.S_IFMT; k != 0 && k != unix.S_IFREG && k != unix.S_IFIFO {
					return w.answer(req, unix.EPERM), false
				}
			}
			return w.make(fd, req, pid, &t, f, func(umask uint32) (int, error) {
				if c.Kind == child.WriteMkdir {
					return -1, w.fixMode(&t, mode&^umask&0o7777, unix.Mkdirat(t.parent, t.base, mode&^umask&0o7777))
				}
				return -1, w.fixMode(&t, mode&^umask&0o7777, unix.Mknodat(t.parent, t.base, mode&^umask, 0))
			})
		}
		w.report(t.path())
	case child.WriteSymlink:
		t := resolve(pid, dirOf(c.Dir2), p2)
		defer t.close()
		if f, sealed := w.sealedOf(t.parent); sealed {
			return w.make(fd, req, pid, &t, f, func(uint32) (int, error) {
				return -1, unix.Symlinkat(p, t.parent, t.base)
			})
		}
		w.report(t.path())
	case child.WriteTruncate:
		t := resolve(pid, dirOf(c.Dir), p)
		defer t.close()
		if f, sealed := w.sealedOf(t.parent); sealed {
			return w.make(fd, req, pid, &t, f, func(uint32) (int, error) {
				nfd, err := w.openBeneath(&t, unix.O_WRONLY, 0)
				if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
					return -1, errGoOn // a link, a mount point: the kernel's
				}
				if err != nil {
					return -1, err
				}
				defer unix.Close(nfd)
				return -1, unix.Ftruncate(nfd, int64(a[1]))
			})
		}
		w.report(t.path())
	case child.WriteUnlink:
		t := resolve(pid, dirOf(c.Dir), p)
		defer t.close()
		var uflags int
		switch int32(c.Nr) {
		case unix.SYS_UNLINKAT:
			uflags = int(a[2])
		case child.SysRmdir:
			uflags = unix.AT_REMOVEDIR
		}
		if f, sealed := w.sealedOf(t.parent); sealed {
			return w.make(fd, req, pid, &t, f, func(uint32) (int, error) {
				if w.mountPoint(t.parent, t.base) {
					return -1, unix.EBUSY
				}
				w.forget(t.path())
				return -1, unix.Unlinkat(t.parent, t.base, uflags)
			})
		}
		w.report(t.path())
	case child.WriteRename:
		t := resolve(pid, dirOf(c.Dir2), p2)
		defer t.close()
		src := resolve(pid, dirOf(c.Dir), p)
		defer src.close()
		f, sealed := w.sealedOf(t.parent)
		if _, from := w.sealedOf(src.parent); sealed || from {
			var rflags uint
			if int32(c.Nr) == unix.SYS_RENAMEAT2 {
				rflags = uint(a[4])
			}
			return w.make(fd, req, pid, &t, f, func(uint32) (int, error) {
				return -1, w.rename(&src, &t, rflags)
			})
		}
		w.report(t.path())
	case child.WriteLink:
		t := resolve(pid, dirOf(c.Dir2), p2)
		defer t.close()
		w.report(t.path())
	}
	return cont, false
}

// exists says whether the target is there (a link counts, as itself).
func (t *callTarget) exists() bool {
	if t.parent < 0 || t.base == "" {
		return false
	}
	var st unix.Stat_t
	return unix.Fstatat(t.parent, t.base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// answer is the answer that fails the call with errno.
func (w *writeWatch) answer(req *seccompNotif, errno unix.Errno) seccompNotifResp {
	return seccompNotifResp{ID: req.ID, Error: -int32(errno)}
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
// refused and reported. do returns a descriptor to hand the tool (-1:
// none) or why it failed, which becomes the call's error.
func (w *writeWatch) make(fd int, req *seccompNotif, pid int, t *callTarget, f *sealedFolder, do func(umask uint32) (int, error)) (seccompNotifResp, bool) {
	if t.base == "" {
		return w.answer(req, unix.EACCES), false
	}
	if f.protected(t.base) {
		w.record(t.path(), WriteProtected)
		return w.answer(req, unix.EACCES), false
	}
	// Read at each call: a program may change its umask as it runs.
	nfd, err := do(toolUmask(pid))
	var errno unix.Errno
	switch {
	case errors.Is(err, errGoOn):
		return seccompNotifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}, false
	case errors.As(err, &errno):
		return w.answer(req, errno), false
	case err != nil:
		return w.answer(req, unix.EIO), false
	case nfd < 0:
		return seccompNotifResp{ID: req.ID}, false
	}
	defer unix.Close(nfd)
	return seccompNotifResp{}, true
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
// hands it the descriptor, which answers its call. The file is opened,
// or created, beneath the folder the tool's path led to, never through
// a link or into another mount: a name that is a link, or a mount point
// (a protected path that exists, another extension's folder), is left
// to the kernel, whose mounts and Landlock decide.
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
	add := seccompNotifAddfd{ID: req.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(nfd), NewfdFlags: fdFlags}
	if err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&add)); err != nil {
		unix.Close(nfd)
		return -1, err
	}
	return nfd, nil
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

// report reports the write of p when the run's policy refuses it.
func (w *writeWatch) report(p string) {
	if why := w.refused(p); why != "" {
		w.record(p, why)
	}
}

// record records the refused write of p.
func (w *writeWatch) record(p, why string) {
	if w.px != nil {
		w.px.RecordPath(WriteMethod, p, why)
	}
}

// refused says why the run's policy refuses a write of p, "" when it
// does not (or when p is no file of the person's: /proc, /dev, /sys).
func (w *writeWatch) refused(p string) string {
	if p == "" || !strings.HasPrefix(p, "/") {
		return ""
	}
	for _, sys := range []string{"/proc", "/dev", "/sys"} {
		if fsutil.Within(sys, p) {
			return ""
		}
	}
	for _, o := range w.readOnly {
		if o.pattern || !fsutil.Within(o.path, p) {
			continue
		}
		switch {
		case w.ext != "" && fsutil.Within(w.ext, p):
			return WriteExtension
		case o.guarded:
			return WriteProtected
		}
		return WriteReadOnly
	}
	for _, r := range w.writable {
		if fsutil.Within(r, p) {
			return ""
		}
	}
	switch {
	case w.ext != "" && fsutil.Within(w.ext, p):
		return WriteExtension
	case w.workspace != "" && fsutil.Within(w.workspace, p) && !w.wsWritable:
		return WriteWorkspace
	case w.workspace != "" && fsutil.Within(w.workspace, p):
		return WriteProtected
	}
	return WriteOutside
}
