package child

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LandlockABI returns the Landlock ABI version the running kernel offers,
// 0 when Landlock is missing or disabled.
func LandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6 (the quiet
// fields of later ABIs are not used; the size passed tells the kernel).
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// pathBeneathAttr is the packed struct landlock_path_beneath_attr; the
// kernel reads its first 12 bytes.
type pathBeneathAttr struct {
	allowed  uint64
	parentFD int32
	_        int32
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed uint64
	port    uint64
}

const landlockRuleNetPort = 2

const (
	fsRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fsFileRights are the rights that make sense on a file rather than
	// a directory; the kernel rejects the others on file rules.
	fsFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS is every filesystem right the given ABI can restrict: the
// ruleset denies all of them except where a rule grants them.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1 // + RESOLVE_UNIX: connecting to pathname sockets
	case abi >= 5:
		return 1<<16 - 1 // + IOCTL_DEV
	case abi >= 3:
		return 1<<15 - 1 // + TRUNCATE
	case abi >= 2:
		return 1<<14 - 1 // + REFER
	case abi >= 1:
		return 1<<13 - 1
	}
	return 0
}

// landlockRuleset builds a ruleset fd from rules. It runs while the child
// still holds its capabilities so that opening the rule paths is not
// blocked by the user's own directory permissions; restrictSelf applies
// it later.
func landlockRuleset(abi int, rules []PathRule, proxyPort int) (int, error) {
	attr := rulesetAttr{handledFS: handledFS(abi)}
	size := unsafe.Sizeof(attr.handledFS)
	if abi >= 4 {
		attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(attr.handledNet)
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	rfd := int(fd)
	for _, r := range rules {
		rights := uint64(fsRead)
		if r.Write {
			rights = attr.handledFS
		}
		if r.ListOnly {
			rights = unix.LANDLOCK_ACCESS_FS_READ_DIR
		}
		if r.File {
			rights &= fsFileRights
		}
		rights &= attr.handledFS
		pfd, err := openRulePath(r.Path)
		if (err == unix.ENOENT || err == unix.ELOOP) && r.Optional {
			continue
		}
		if err != nil {
			unix.Close(rfd)
			return -1, fmt.Errorf("landlock rule for %s (%s): %w", r.Path, r.Why, err)
		}
		pb := pathBeneathAttr{allowed: rights, parentFD: int32(pfd)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rfd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
		unix.Close(pfd)
		if errno != 0 {
			unix.Close(rfd)
			return -1, fmt.Errorf("landlock_add_rule %s (%s): %w", r.Path, r.Why, errno)
		}
	}
	if abi >= 4 && proxyPort > 0 {
		np := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(proxyPort)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rfd), landlockRuleNetPort, uintptr(unsafe.Pointer(&np)), 0, 0, 0)
		if errno != 0 {
			unix.Close(rfd)
			return -1, fmt.Errorf("landlock_add_rule proxy port %d: %w", proxyPort, errno)
		}
	}
	return rfd, nil
}

// landlockRestrictSelf enforces the ruleset on the calling thread, which
// must be the thread that execs the tool. no_new_privs must be set.
func landlockRestrictSelf(rfd int) error {
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rfd), 0, 0)
	unix.Close(rfd)
	if errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// openRulePath opens a rule's path without following any symlink: the
// parent resolved every path already, so a symlink now means the tree
// changed since, possibly to point a rule somewhere else. /proc/self is
// the one symlink meant to be followed (to the tool's own entry).
func openRulePath(path string) (int, error) {
	if path == "/proc/self" {
		return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err == unix.ENOSYS {
		return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	return fd, err
}
