package child

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// oldRoot is where the host's root stays reachable while the new root is
// built; it is detached before the tool runs.
const oldRoot = "/.gemkit-oldroot"

// buildRoot gives the child (and so the tool) a new root: an empty tmpfs
// on which steps bind what the tool may see, read-only unless it may write
// there, so that everything else is absent and every change of metadata
// (chmod, utimes, xattrs, inode flags) outside the writable binds fails
// with EROFS, which no Landlock right expresses. The child must be in its
// own mount namespace and hold CAP_SYS_ADMIN there. base is an existing
// directory the build starts on (the private temp dir's host folder).
// freshProc says whether /proc is a procfs of the child's own PID
// namespace, rather than the host's bound read-only (see mountProc).
func buildRoot(base string, steps []Mount) (freshProc bool, err error) {
	return (&rootBuilder{}).build(base, steps)
}

// rootBuilder builds a new root. The host's tree may change while it
// does: the parent planned the steps from the tree as it was, and
// another program may remove one of its folders (its temporary folder,
// and a closed place in it) before or during the build. An optional
// step whose path is gone, or is no longer of the kind planned, is left
// out, which only ever takes access away; nothing is created in a folder
// bound from the host, so a path gone there is never made again in the
// person's folder.
type rootBuilder struct {
	// own are the devices of the file systems the build mounted itself
	// (the new root's tmpfs, the private temp dir's, the private
	// folders'): only there are missing folders, mount points and links
	// created.
	own map[uint64]bool
	// hook, nil but in tests, is called at each point of a bind where
	// the host's tree may change under it.
	hook func(at string, s Mount)
}

func (b *rootBuilder) build(base string, steps []Mount) (freshProc bool, err error) {
	// Nothing done here may propagate back to the host's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return false, fmt.Errorf("sandbox child: making mounts private: %w", err)
	}
	if err := unix.Mount("gemkit-root", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=65536"); err != nil {
		return false, fmt.Errorf("sandbox child: new root: %w", err)
	}
	if err := unix.Chdir(base); err != nil {
		return false, err
	}
	if err := os.Mkdir("."+oldRoot, 0o700); err != nil {
		return false, err
	}
	if err := unix.PivotRoot(".", "."+oldRoot); err != nil {
		return false, fmt.Errorf("sandbox child: pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return false, err
	}
	b.own = map[uint64]bool{}
	if err := b.owned("/"); err != nil {
		return false, err
	}
	for _, s := range steps {
		if s.Kind == MountProc {
			freshProc, err = b.mountProc(s.Path)
		} else {
			err = b.step(s)
		}
		if err != nil {
			return false, fmt.Errorf("sandbox child: mounting %s (%s): %w", s.Path, s.Kind, err)
		}
	}
	if err := unix.Unmount(oldRoot, unix.MNT_DETACH); err != nil {
		return false, fmt.Errorf("sandbox child: detaching the old root: %w", err)
	}
	if err := os.Remove(oldRoot); err != nil {
		return false, err
	}
	// The root itself: nothing may be created beside the binds.
	return freshProc, setattr("/", false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

func (b *rootBuilder) step(s Mount) error {
	switch s.Kind {
	case MountDir:
		return b.mkdirAll(s.Path)
	case MountSymlink:
		if _, err := os.Lstat(s.Path); err == nil {
			return nil // already there, inside a bind
		}
		// Only links outside every bind are made: one missing inside
		// a folder bound from the host was removed there since the
		// plan, and the host's tree is shown as it is.
		err := b.mkdirAll(path.Dir(s.Path))
		if err == nil && !b.ownFS(path.Dir(s.Path)) || errors.Is(err, errBound) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.Symlink(s.Target, s.Path)
	case MountTmpfs:
		if err := b.mkdirAll(s.Path); err != nil {
			return err
		}
		opts := "mode=0700,size=" + strconv.FormatUint(s.Size, 10)
		if s.Inodes > 0 {
			opts += ",nr_inodes=" + strconv.FormatUint(s.Inodes, 10)
		}
		if err := unix.Mount("gemkit-tmp", s.Path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return err
		}
		return b.owned(s.Path)
	case MountBind:
		return b.bind(s)
	case MountPrivateDir:
		if err := privateDir(s); err != nil {
			return err
		}
		return b.owned(s.Path)
	case MountFile:
		return b.putFile(s)
	}
	return fmt.Errorf("unknown mount step %q", s.Kind)
}

// mountProc mounts at path the procfs of the child's PID namespace
// (fresh is true), or, where that is refused, binds the host's.
func (b *rootBuilder) mountProc(path string) (fresh bool, err error) {
	if err := b.mkdirAll(path); err != nil {
		return false, err
	}
	err = unix.Mount("proc", path, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if !errors.Is(err, unix.EPERM) {
		return err == nil, err
	}
	// A user namespace may not mount a proc when the host's is partly
	// hidden (a container masking /proc/kcore and the like): bind the
	// host's read-only instead; Landlock still lets the tool see only
	// its own entry in it.
	if err = unix.Mount(oldRoot+"/proc", path, "", unix.MS_BIND|unix.MS_REC, ""); err == nil {
		err = setattr(path, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	}
	return false, err
}

// putFile writes s.Content at s.Path on the root tmpfs, first taking away
// what earlier steps put there: a bind of the host's file is detached, a
// symlink or the empty mount point left is removed. The root is made
// read-only at the end of buildRoot, so the file stays as written.
func (b *rootBuilder) putFile(s Mount) error {
	if err := b.mkdirAll(path.Dir(s.Path)); err != nil {
		return err
	}
	if err := unix.Unmount(s.Path, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return err
	}
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fd, err := unix.Open(s.Path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte(s.Content))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// noSymlinks opens path as O_PATH, refusing symlinks on the way: the
// parent resolved every path, so a symlink found now means the tree
// changed (a concurrent writer) and could carry a bind elsewhere.
func noSymlinks(path string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
}

// gone reports whether err says that a path of the plan is no longer
// there as the parent found it: removed (ENOENT), a folder on the way
// replaced by a file (ENOTDIR) or by a symlink (ELOOP: paths are opened
// with RESOLVE_NO_SYMLINKS), or not made, being inside a bound folder
// (errBound).
func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, errBound)
}

// unlinked reports whether the file fd has open was removed since it
// was opened: a bind of it then fails in ways that name no cause the
// tool could use (move_mount says ENOENT).
func unlinked(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Nlink == 0
}

// bind binds s.Path of the old root at s.Path of the new one. Source and
// target are opened without following symlinks, the source's tree is
// cloned detached (open_tree), given its attributes (read-only, nosuid,
// nodev) before it is attached, and moved onto the opened target, so no
// path is looked up twice. An optional bind whose source goes at any
// point of this, or is no longer of the planned kind (a folder now a
// file, or a link), is left out, with any mount point made for it.
func (b *rootBuilder) bind(s Mount) error {
	source := s.Path
	if s.Source != "" {
		source = s.Source
	}
	src, err := noSymlinks(oldRoot + source)
	if err != nil {
		if s.Optional && gone(err) {
			return nil
		}
		return err
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return err
	}
	if dir := st.Mode&unix.S_IFMT == unix.S_IFDIR; dir == s.File {
		if s.Optional {
			return nil
		}
		want := "a folder"
		if s.File {
			want = "a file"
		}
		return fmt.Errorf("no longer %s", want)
	}
	b.at("opened", s)
	made, err := b.mountpoint(s.Path, s.File)
	if err != nil {
		if s.Optional && (gone(err) || unlinked(src)) {
			return nil
		}
		return err
	}
	// leftOut takes a bind that cannot be made out of the plan, if it is
	// optional and its source went.
	leftOut := func(err error) error {
		if !s.Optional || !gone(err) && !unlinked(src) {
			return err
		}
		if made {
			_ = os.Remove(s.Path)
		}
		return nil
	}
	b.at("mountpoint", s)
	dst, err := noSymlinks(s.Path)
	if err != nil {
		return leftOut(err)
	}
	defer unix.Close(dst)
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	attrFlags := uint(unix.AT_EMPTY_PATH)
	if !s.File {
		// The mounts beneath a folder come along, read-only too.
		flags |= unix.AT_RECURSIVE
		attrFlags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(src, "", flags)
	if err != nil {
		return leftOut(err)
	}
	defer unix.Close(tree)
	b.at("cloned", s)
	attr := uint64(unix.MOUNT_ATTR_NOSUID)
	if !s.Device {
		attr |= unix.MOUNT_ATTR_NODEV
	}
	if !s.Write {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", attrFlags, &unix.MountAttr{Attr_set: attr}); err != nil {
		return leftOut(err)
	}
	b.at("set", s)
	if err := unix.MoveMount(tree, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return leftOut(err)
	}
	return nil
}

func (b *rootBuilder) at(point string, s Mount) {
	if b.hook != nil {
		b.hook(point, s)
	}
}

// privateDir mounts a fresh tmpfs on the folder s.Path, which must be
// there already (the parent made it) and is reached without following
// a symlink: the folder lies in a writable bind, whose tool may have put
// a link there since.
func privateDir(s Mount) error {
	dst, err := noSymlinks(s.Path)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fs)
	for _, o := range [][2]string{{"mode", "0700"}, {"size", strconv.FormatUint(s.Size, 10)}, {"nr_inodes", strconv.FormatUint(s.Inodes, 10)}} {
		if err := unix.FsconfigSetString(fs, o[0], o[1]); err != nil {
			return fmt.Errorf("tmpfs %s: %w", o[0], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return err
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(m)
	return unix.MoveMount(m, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// mountpoint makes sure target exists in the new root, as a directory or
// an empty file, creating what is missing on a file system the build
// mounted itself (ownFS); made says it made target itself.
func (b *rootBuilder) mountpoint(target string, file bool) (made bool, err error) {
	if _, err := os.Lstat(target); err == nil {
		return false, nil
	}
	if !file {
		return true, b.mkdirAll(target)
	}
	if err := b.mkdirAll(path.Dir(target)); err != nil {
		return false, err
	}
	if !b.ownFS(path.Dir(target)) {
		return false, &os.PathError{Op: "create", Path: target, Err: errBound}
	}
	fd, err := unix.Open(target, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return false, err
	}
	return true, unix.Close(fd)
}

// errBound is what making a folder inside a folder bound from the host
// gives: the folder was planned from the host's tree, so it was removed
// there since, and making it again would write in the person's folder
// (or fail, in a read-only bind).
var errBound = errors.New("gone from a folder bound from the host since the plan")

// mkdirAll makes dir and the folders missing on the way to it, as
// os.MkdirAll does, but only on a file system the build mounted itself
// (errBound inside a bind of the host's tree).
func (b *rootBuilder) mkdirAll(dir string) error {
	var st unix.Stat_t
	err := unix.Stat(dir, &st)
	if err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return &os.PathError{Op: "mkdir", Path: dir, Err: unix.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	parent := path.Dir(dir)
	if err := b.mkdirAll(parent); err != nil {
		return err
	}
	if !b.ownFS(parent) {
		return &os.PathError{Op: "mkdir", Path: dir, Err: errBound}
	}
	if err := unix.Mkdir(dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return nil
}

// ownFS reports whether the folder dir lies on a file system the build
// mounted itself, not inside a bind of the host's tree.
func (b *rootBuilder) ownFS(dir string) bool {
	var st unix.Stat_t
	return unix.Stat(dir, &st) == nil && b.own[uint64(st.Dev)]
}

// owned records the file system mounted at path as the build's own.
func (b *rootBuilder) owned(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return err
	}
	b.own[uint64(st.Dev)] = true
	return nil
}

// setattr sets mount attributes on the mount at path, and on every mount
// beneath it when recursive (a bind of /home brings the mounts under it).
func setattr(path string, recursive bool, set uint64) error {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: set})
}
