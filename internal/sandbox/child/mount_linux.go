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
	for _, s := range steps {
		if s.Kind == MountProc {
			freshProc, err = mountProc(s.Path)
		} else {
			err = step(s)
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

func step(s Mount) error {
	switch s.Kind {
	case MountDir:
		return mkdirAll(s.Path)
	case MountSymlink:
		if _, err := os.Lstat(s.Path); err == nil {
			return nil // already there, inside a bind
		}
		if err := mkdirAll(path.Dir(s.Path)); err != nil {
			return err
		}
		return os.Symlink(s.Target, s.Path)
	case MountTmpfs:
		if err := mkdirAll(s.Path); err != nil {
			return err
		}
		opts := "mode=0700,size=" + strconv.FormatUint(s.Size, 10)
		if s.Inodes > 0 {
			opts += ",nr_inodes=" + strconv.FormatUint(s.Inodes, 10)
		}
		return unix.Mount("gemkit-tmp", s.Path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts)
	case MountBind:
		return bind(s)
	case MountPrivateDir:
		return privateDir(s)
	case MountFile:
		return putFile(s)
	}
	return fmt.Errorf("unknown mount step %q", s.Kind)
}

// mountProc mounts at path the procfs of the child's PID namespace
// (fresh is true), or, where that is refused, binds the host's.
func mountProc(path string) (fresh bool, err error) {
	if err := mkdirAll(path); err != nil {
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
func putFile(s Mount) error {
	if err := mkdirAll(path.Dir(s.Path)); err != nil {
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

// bind binds s.Path of the old root at s.Path of the new one. Source and
// target are opened without following symlinks, the source's tree is
// cloned detached (open_tree), given its attributes (read-only, nosuid,
// nodev) before it is attached, and moved onto the opened target, so no
// path is looked up twice.
func bind(s Mount) error {
	source := s.Path
	if s.Source != "" {
		source = s.Source
	}
	src, err := noSymlinks(oldRoot + source)
	if err != nil {
		if s.Optional && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(src)
	if err := mountpoint(s.Path, s.File); err != nil {
		return err
	}
	dst, err := noSymlinks(s.Path)
	if err != nil {
		return err
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
		if s.Optional && errors.Is(err, unix.ENOENT) {
			return nil // removed since it was opened: nothing to show
		}
		return err
	}
	defer unix.Close(tree)
	attr := uint64(unix.MOUNT_ATTR_NOSUID)
	if !s.Device {
		attr |= unix.MOUNT_ATTR_NODEV
	}
	if !s.Write {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", attrFlags, &unix.MountAttr{Attr_set: attr}); err != nil {
		return err
	}
	return unix.MoveMount(tree, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
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

// mountpoint makes sure target exists in the new root, as a directory or an
// empty file, creating what is missing on the root tmpfs.
func mountpoint(target string, file bool) error {
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	if !file {
		return mkdirAll(target)
	}
	if err := mkdirAll(path.Dir(target)); err != nil {
		return err
	}
	fd, err := unix.Open(target, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func mkdirAll(path string) error { return os.MkdirAll(path, 0o755) }

// setattr sets mount attributes on the mount at path, and on every mount
// beneath it when recursive (a bind of /home brings the mounts under it).
func setattr(path string, recursive bool, set uint64) error {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: set})
}
