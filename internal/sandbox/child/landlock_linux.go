package child

import (
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Landlock is reached through go-landlock's syscall package: its typed
// ruleset, rule and access-right definitions and its single-thread
// landlock_restrict_self. The high-level landlock package is not used: it
// restricts every thread of the process (which the child, about to exec
// from one locked thread, does not need), opens rule paths following
// symlinks (the child opens them with RESOLVE_NO_SYMLINKS, see
// openRulePath) and builds and enforces the ruleset in one call, while the
// child builds it holding its capabilities and enforces it after dropping
// them.

// LandlockABI returns the Landlock ABI version the running kernel offers,
// 0 when Landlock is missing or disabled.
func LandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

const (
	fsRead = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	// fsFileRights are the rights that make sense on a file rather than
	// a directory; the kernel rejects the others on file rules.
	fsFileRights = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// handledFS is every filesystem right the given ABI can restrict: the
// ruleset denies all of them except where a rule grants them.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return ll.AccessFSResolveUnix<<1 - 1 // + connecting to pathname sockets
	case abi >= 5:
		return ll.AccessFSIoctlDev<<1 - 1
	case abi >= 3:
		return ll.AccessFSTruncate<<1 - 1
	case abi >= 2:
		return ll.AccessFSRefer<<1 - 1
	case abi >= 1:
		return ll.AccessFSMakeSym<<1 - 1
	}
	return 0
}

// landlockRuleset builds a ruleset fd from rules. It runs while the child
// still holds its capabilities so that opening the rule paths is not
// blocked by the user's own directory permissions; restrictSelf applies
// it later.
func landlockRuleset(abi int, rules []PathRule, proxyPort int) (int, error) {
	attr := ll.RulesetAttr{HandledAccessFS: handledFS(abi)}
	if abi >= 4 {
		attr.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	rfd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	for _, r := range rules {
		rights := uint64(fsRead)
		if r.Write {
			rights = attr.HandledAccessFS
		}
		if r.Write && r.NoCreate {
			rights = fsRead
		}
		if r.ListOnly {
			rights = ll.AccessFSReadDir
		}
		if r.File {
			rights &= fsFileRights
		}
		rights &= attr.HandledAccessFS
		pfd, err := openRulePath(r.Path)
		if err == nil && !ruleKind(pfd, r) {
			unix.Close(pfd)
			err = unix.ENOTDIR
			if r.File {
				err = unix.EISDIR
			}
		}
		// An optional path gone since the plan, or no longer of the kind
		// planned (a folder now a file or a link, a folder on the way
		// now a file), has nothing left to grant: the rule is left out,
		// which only takes access away.
		if r.Optional && (err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EISDIR) {
			continue
		}
		if err != nil {
			unix.Close(rfd)
			return -1, fmt.Errorf("landlock rule for %s (%s): %w", r.Path, r.Why, err)
		}
		err = ll.LandlockAddPathBeneathRule(rfd, &ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: pfd}, 0)
		unix.Close(pfd)
		if err != nil {
			unix.Close(rfd)
			return -1, fmt.Errorf("landlock_add_rule %s (%s): %w", r.Path, r.Why, err)
		}
	}
	if abi >= 4 && proxyPort > 0 {
		err := ll.LandlockAddNetPortRule(rfd, &ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(proxyPort)}, 0)
		if err != nil {
			unix.Close(rfd)
			return -1, fmt.Errorf("landlock_add_rule proxy port %d: %w", proxyPort, err)
		}
	}
	return rfd, nil
}

// ruleKind reports whether the path fd has open is of the kind r names:
// a folder, or else anything but one. A file rule on a folder would grant
// its rights to all beneath it.
func ruleKind(fd int, r PathRule) bool {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false
	}
	return (st.Mode&unix.S_IFMT == unix.S_IFDIR) != r.File
}

// landlockRestrictSelf enforces the ruleset on the calling thread, which
// must be the thread that execs the tool. no_new_privs must be set.
func landlockRestrictSelf(rfd int) error {
	err := ll.LandlockRestrictSelf(rfd, 0)
	unix.Close(rfd)
	if err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
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
