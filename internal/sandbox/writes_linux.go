package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/proc"
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

func devInoOf(st *unix.Stat_t) devIno { return devIno{uint64(st.Dev), st.Ino} }

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
func selfUmask() uint32 { return toolUmask(os.Getpid()) }

// toolUmask is the umask of the process pid, 022 where it cannot be read.
func toolUmask(pid int) uint32 {
	if m, err := proc.Umask(pid); err == nil {
		return m
	}
	return 0o022
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

// quick reports whether the call goes on at once, told by its paths as
// written. Most calls write where the server may (its data folder, its
// temporary folder); one that leads elsewhere through a link it made
// meets Landlock, which leaves it only reading in a sealed folder.
func (w *writeWatch) quick(r *pendingWrite) bool {
	ok := func(dir int, p string) bool {
		abs := lexical(r.pid, r.dir(dir), p)
		return abs != "" && !w.inSealed(abs) && w.refused(abs) == ""
	}
	switch r.c.Kind {
	case child.WriteSymlink, child.WriteLink:
		return ok(r.c.Dir2, r.p2)
	case child.WriteRename:
		return ok(r.c.Dir2, r.p2) && ok(r.c.Dir, r.p)
	}
	return ok(r.c.Dir, r.p)
}

// handle returns the answer to the notification req of the write call c
// (fd is the listener; a descriptor the call opens is added to the
// caller before, and the answer is its number). A call that a sealed
// folder holds is made by gemkit (make); one refused is reported, and
// goes on to meet Landlock's refusal.
func (w *writeWatch) handle(fd int, req *seccompNotif, c child.WriteCall) seccompNotifResp {
	r, ok := readWrite(req, c)
	if !ok || w.quick(&r) {
		return r.cont()
	}
	// What was read names the caller while it waits, before gemkit acts
	// on it: the pid is still its own.
	if ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&req.ID)) != nil {
		return r.cont()
	}
	switch c.Kind {
	case child.WriteOpen, child.WriteOpen2:
		return w.handleOpen(fd, &r)
	case child.WriteMkdir, child.WriteMknod:
		return w.handleMake(fd, &r)
	case child.WriteSymlink:
		return w.handleSymlink(fd, &r)
	case child.WriteTruncate:
		return w.handleTruncate(fd, &r)
	case child.WriteUnlink:
		return w.handleUnlink(fd, &r)
	case child.WriteRename:
		return w.handleRename(fd, &r)
	case child.WriteLink:
		t := resolve(r.pid, r.dir(c.Dir2), r.p2)
		defer t.close()
		w.report(t.path())
	}
	return r.cont()
}

// answer is the answer that fails the call with errno.
func (w *writeWatch) answer(req *seccompNotif, errno unix.Errno) seccompNotifResp {
	return seccompNotifResp{ID: req.ID, Error: -int32(errno)}
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
