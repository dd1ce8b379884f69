package proc

import (
	"bytes"
	"cmp"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/internal/proc/procstat"
)

func dir(pid int) string { return "/proc/" + strconv.Itoa(pid) }

// ReadStat reads /proc/PID/stat (procstat.Read).
func ReadStat(pid int) (Stat, error) { return procstat.Read(pid) }

// Parent is pid's parent.
func Parent(pid int) (int, error) {
	s, err := ReadStat(pid)
	return s.PPid, err
}

// Cmdline is pid's arguments, nil for a process that has none (a kernel
// thread, a zombie).
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(dir(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\x00"), nil
}

// Cwd is pid's working folder.
func Cwd(pid int) (string, error) { return os.Readlink(dir(pid) + "/cwd") }

// Environ is pid's environment as it started, KEY=VALUE entries (at
// most 1 MiB of it).
func Environ(pid int) ([]string, error) {
	f, err := os.Open(dir(pid) + "/environ")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

// UID is the owner of pid (the owner of /proc/PID, its effective uid).
func UID(pid int) (uint32, error) {
	fi, err := os.Stat(dir(pid))
	if err != nil {
		return 0, err
	}
	return ownerOf(fi), nil
}

// Pids are the processes this one can see, newest first: a process that
// has just connected is most often among the last started, so a lookup
// that stops when it finds what it wants ends after a few of them. The
// kernel hands out pids upwards and starts again from the bottom past
// pid_max (32768 by default, soon reached on a machine that builds), so
// the newest are those at and below the last pid handed out, then those
// above it (newestFirst).
func Pids() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	newestFirst(pids, lastPid())
	return pids, nil
}

// newestFirst orders pids from the newest to the oldest, last being the
// last pid handed out (0 when not known: then by pid alone).
func newestFirst(pids []int, last int) {
	slices.SortFunc(pids, func(a, b int) int {
		// Above last: handed out before the pids wrapped, older than
		// every pid at or below it.
		return cmp.Compare(b-wrapped(b, last), a-wrapped(a, last))
	})
}

func wrapped(pid, last int) int {
	if last > 0 && pid > last {
		return 1 << 30
	}
	return 0
}

// lastPid is the pid the kernel handed out last in this process's pid
// namespace: /proc/loadavg's fifth field; 0 when not known.
func lastPid() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 5 {
		return 0
	}
	n, _ := strconv.Atoi(f[4])
	return n
}

// SocketOwners finds, for each socket inode, the process that holds it
// (among its descriptors in /proc/PID/fd), as ss and lsof do; a socket
// whose process cannot be seen (another user's, another PID namespace,
// gone meanwhile) is absent from the map. keep, when not nil, says which
// processes to look into (by pid), so that a caller looking for its own
// user's processes reads no other's descriptors. The newest processes are
// looked at first, and the look stops once every inode is found. A
// process that forks lends its child every descriptor until the child's
// exec, so the newest holder may be such a child, still running its
// parent's program: the owner is then the parent (forkedFrom). A program
// a socket was handed to across an exec (socket activation) owns it.
func SocketOwners(inodes []uint64, keep func(pid int) bool) map[uint64]int {
	want := make(map[string]uint64, len(inodes))
	for _, ino := range inodes {
		want[socketLink(ino)] = ino
	}
	found := make(map[uint64]int, len(inodes))
	pids, err := Pids()
	if err != nil {
		return found
	}
	for _, pid := range pids {
		if len(found) == len(want) {
			break
		}
		if keep != nil && !keep(pid) {
			continue
		}
		fdDir := dir(pid) + "/fd/"
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(fdDir + fd.Name())
			if err != nil || !strings.HasPrefix(target, "socket:[") {
				continue
			}
			if ino, ok := want[target]; ok {
				if _, seen := found[ino]; !seen {
					found[ino] = forkedFrom(pid, target, keep)
				}
			}
		}
	}
	return found
}

func socketLink(ino uint64) string { return "socket:[" + strconv.FormatUint(ino, 10) + "]" }

// forkedFrom is the process pid was forked from while pid has not run a
// program of its own yet: its parent (and so on up), while that runs the
// same executable and holds the socket link too; else pid.
func forkedFrom(pid int, link string, keep func(pid int) bool) int {
	for range 8 {
		parent, err := Parent(pid)
		if err != nil || parent <= 1 || keep != nil && !keep(parent) {
			return pid
		}
		exe, err1 := Exe(pid)
		pexe, err2 := Exe(parent)
		if err1 != nil || err2 != nil || exe != pexe || !holds(parent, link) {
			return pid
		}
		pid = parent
	}
	return pid
}

// holds says whether pid has a descriptor whose link is link.
func holds(pid int, link string) bool {
	fdDir := dir(pid) + "/fd/"
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(fdDir + fd.Name()); err == nil && target == link {
			return true
		}
	}
	return false
}

func ownerOf(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return ^uint32(0)
}

// VoluntarySwitches is the number of times the threads of pid have
// slept (voluntary context switches: a wait, a sleep of Go's system
// monitor), summed over its live threads.
func VoluntarySwitches(pid int) (int, error) {
	tasks, err := os.ReadDir(dir(pid) + "/task")
	if err != nil {
		return 0, err
	}
	total := 0
	for _, t := range tasks {
		b, err := os.ReadFile(dir(pid) + "/task/" + t.Name() + "/status")
		if err != nil {
			continue // a thread that ended meanwhile
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
				k, _ := strconv.Atoi(strings.TrimSpace(v))
				total += k
			}
		}
	}
	return total, nil
}
