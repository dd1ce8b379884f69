package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LoadAverage is the machine's load average over 1, 5 and 15 minutes, as
// /proc/loadavg writes it ("0.52 0.58 0.59").
func LoadAverage() (string, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "", errors.New("proc: malformed loadavg")
	}
	return strings.Join(f[:3], " "), nil
}

// SwapBytes is the machine's swap space (/proc/meminfo's SwapTotal),
// whether used or not.
func SwapBytes() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "SwapTotal:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("proc: meminfo's SwapTotal: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("proc: meminfo has no SwapTotal")
}

// CPUs is the number of processors the machine has (those /proc/cpuinfo
// lists), whatever this process's affinity allows it.
func CPUs() (int, error) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, _, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "processor" {
			n++
		}
	}
	return n, sc.Err()
}

// Exe is the path of pid's executable.
func Exe(pid int) (string, error) { return os.Readlink(dir(pid) + "/exe") }

// Children are the processes pid started that still run, the children of
// each of its threads.
func Children(pid int) ([]int, error) {
	tasks, err := os.ReadDir(dir(pid) + "/task")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue // the thread ended meanwhile
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// Tree is pid and its descendants, parents before their children.
func Tree(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		kids, _ := Children(out[i])
		out = append(out, kids...)
	}
	return out
}

// StatusBytes reads a size of /proc/PID/status, which the kernel gives
// in kB ("VmRSS", "RssAnon", "VmHWM"), in bytes.
func StatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(dir(pid) + "/status")
	if err != nil {
		return 0, err
	}
	return sizeField(b, field+":")
}

// ThreadGroup is the process of the thread tid (its Tgid in
// /proc/TID/status): a seccomp notification names the calling thread.
func ThreadGroup(tid int) (int, error) {
	v, err := statusField(tid, "Tgid")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("proc: malformed Tgid %q", v)
	}
	return n, nil
}

// Umask is pid's umask (Umask in /proc/PID/status, Linux 4.7 and later),
// read without changing it, as umask(2) cannot.
func Umask(pid int) (uint32, error) {
	v, err := statusField(pid, "Umask")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("proc: malformed Umask %q", v)
	}
	return uint32(n), nil
}

// statusField is the value of field in /proc/PID/status, space trimmed.
func statusField(pid int, field string) (string, error) {
	b, err := os.ReadFile(dir(pid) + "/status")
	if err != nil {
		return "", err
	}
	return field1(b, field)
}

// field1 is the value of the first "key:" line of a status file b.
func field1(b []byte, key string) (string, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("proc: no %s", key)
}

// sizeField reads the size in kB of the first line of b that begins
// with key, in bytes.
func sizeField(b []byte, key string) (int64, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("proc: malformed %s %q", key, line)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("proc: no %s", strings.TrimSuffix(key, ":"))
}

// MemoryOf reads pid's resident and proportional set sizes.
func MemoryOf(pid int) (Memory, error) {
	b, err := os.ReadFile(dir(pid) + "/smaps_rollup")
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	if m.RSS, err = sizeField(b, "Rss:"); err != nil {
		return Memory{}, err
	}
	if m.PSS, err = sizeField(b, "Pss:"); err != nil {
		return Memory{}, err
	}
	return m, nil
}

// CPUTime is the time every thread of pid has spent on a CPU (the first
// field of each /proc/PID/task/TID/schedstat).
func CPUTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(dir(pid) + "/task/*/schedstat")
	if err != nil {
		return 0, err
	}
	if len(tasks) == 0 {
		return 0, fmt.Errorf("proc: no threads of %d", pid)
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended meanwhile
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total, nil
}

// Mappings reads pid's memory mappings from /proc/PID/smaps.
func Mappings(pid int) ([]Mapping, error) {
	b, err := os.ReadFile(dir(pid) + "/smaps")
	if err != nil {
		return nil, err
	}
	return parseMappings(b)
}

// parseMappings reads a /proc/PID/smaps (or maps) text: a header line
// per mapping ("start-end perms offset dev inode path"), in smaps
// followed by its "Key: value kB" lines.
func parseMappings(b []byte) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if strings.HasSuffix(f[0], ":") {
			// A field of the last mapping: "Anonymous:   8 kB".
			if len(out) == 0 || len(f) < 2 {
				continue
			}
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "Anonymous:":
				out[len(out)-1].Anonymous = kb << 10
			case "Swap:":
				out[len(out)-1].Swap = kb << 10
			}
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok || len(f) < 5 {
			return nil, fmt.Errorf("proc: malformed mapping %q", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("proc: malformed mapping %q", sc.Text())
		}
		m := Mapping{Start: uintptr(start), End: uintptr(end), Perms: f[1]}
		if len(f) > 5 {
			m.Path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// Cgroups are pid's cgroups (/proc/PID/cgroup): the path in each v1
// hierarchy by controller, and the v2 one under "".
func Cgroups(pid int) (map[string]string, error) {
	b, err := os.ReadFile(dir(pid) + "/cgroup")
	if err != nil {
		return nil, err
	}
	return parseCgroups(b), nil
}

func parseCgroups(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// CgroupMounts finds where pid sees the cgroup filesystems
// (/proc/PID/mountinfo): the v2 hierarchy, and the v1 hierarchy of each
// of controllers mounted. Only mounts of a hierarchy's root count.
func CgroupMounts(pid int, controllers ...string) (v2 string, v1 map[string]string, err error) {
	b, err := os.ReadFile(dir(pid) + "/mountinfo")
	if err != nil {
		return "", map[string]string{}, err
	}
	v2, v1 = parseCgroupMounts(b, controllers)
	return v2, v1, nil
}

func parseCgroupMounts(b []byte, controllers []string) (v2 string, v1 map[string]string) {
	v1 = map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f1, f2 := strings.Fields(pre), strings.Fields(post)
		if len(f1) < 5 || len(f2) < 3 || f1[3] != "/" {
			continue
		}
		switch f2[0] {
		case "cgroup2":
			if v2 == "" {
				v2 = f1[4]
			}
		case "cgroup":
			for _, o := range strings.Split(f2[2], ",") {
				for _, c := range controllers {
					if o == c {
						if _, ok := v1[o]; !ok {
							v1[o] = f1[4]
						}
					}
				}
			}
		}
	}
	return v2, v1
}

// MountNS names pid's mount namespace (its ns/mnt link: "mnt:[INODE]");
// pid 0 is this process.
func MountNS(pid int) (string, error) {
	if pid == 0 {
		return os.Readlink("/proc/self/ns/mnt")
	}
	return os.Readlink(dir(pid) + "/ns/mnt")
}

// PidfdPid is the pid of the process this process's pidfd fd refers to
// (its fdinfo's Pid: line), -1 once that process has ended.
func PidfdPid(fd int) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	v, err := field1(b, "Pid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}
