package proc

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParseMappings(t *testing.T) {
	const smaps = `00400000-01b42000 r-xp 00000000 fe:00 10019251                           /usr/bin/gemkit
Size:              24840 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me
01b42000-03c22000 r--p 01742000 fe:00 10019251                           /usr/bin/gemkit
Anonymous:            12 kB
Swap:                  0 kB
03c22000-03c23000 r--p 03822000 fe:00 10019251                           /usr/bin/gemkit
Anonymous:             0 kB
Swap:                  4 kB
03cbd000-05d00000 rw-p 00000000 00:00 0
7f002000-7f003000 r-xp 00000000 fe:00 78                         /usr/bin/gemkit old
`
	got, err := parseMappings([]byte(smaps))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x400000, End: 0x1b42000, Perms: "r-xp", Path: "/usr/bin/gemkit"},
		{Start: 0x1b42000, End: 0x3c22000, Perms: "r--p", Path: "/usr/bin/gemkit", Anonymous: 12 << 10},
		{Start: 0x3c22000, End: 0x3c23000, Perms: "r--p", Path: "/usr/bin/gemkit", Swap: 4 << 10},
		{Start: 0x3cbd000, End: 0x5d00000, Perms: "rw-p"},
		{Start: 0x7f002000, End: 0x7f003000, Perms: "r-xp", Path: "/usr/bin/gemkit old"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("parseMappings =\n%+v\nwant\n%+v", got, want)
	}
	for _, bad := range []string{"zz-yy r-xp 0 0:0 1 /usr/bin/gemkit\n", "00400000 r-xp 0 0:0 1 /x\n", "2000-1000 r-xp 0 0:0 1 /x\n"} {
		if _, err := parseMappings([]byte(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestParseCgroups(t *testing.T) {
	got := parseCgroups([]byte("12:memory:/user.slice/a\n11:cpu,cpuacct:/user.slice\n0::/user.slice/user-0.slice/session-1.scope\n"))
	want := map[string]string{"memory": "/user.slice/a", "cpu": "/user.slice", "cpuacct": "/user.slice", "": "/user.slice/user-0.slice/session-1.scope"}
	if len(got) != len(want) {
		t.Fatalf("parseCgroups = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("parseCgroups[%q] = %q, want %q", k, got[k], v)
		}
	}
	const mountinfo = `25 1 0:23 / /sys rw,nosuid - sysfs sysfs rw
30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
35 30 0:31 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
36 30 0:32 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
37 30 0:33 /sub /elsewhere/memory rw,nosuid - cgroup cgroup rw,memory
38 30 0:34 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu,cpuacct
`
	v2, v1 := parseCgroupMounts([]byte(mountinfo), []string{"memory", "pids"})
	if v2 != "/sys/fs/cgroup/unified" || len(v1) != 2 || v1["memory"] != "/sys/fs/cgroup/memory" || v1["pids"] != "/sys/fs/cgroup/pids" {
		t.Errorf("parseCgroupMounts = %q, %v", v2, v1)
	}
}

// TestSelfInfo: this process's executable, memory, CPU time, mappings
// and cgroups, a child it starts, and the machine's load and processors,
// as the system tells them.
// TestStatusFields: the fields of a status file as Linux 6.x writes
// them (tabs after the key; the umask in octal).
func TestStatusFields(t *testing.T) {
	status := []byte("Name:\tnode\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nNgid:\t0\nPid:\t4250\n")
	for _, c := range []struct{ key, want string }{{"Tgid", "4242"}, {"Umask", "0022"}, {"Pid", "4250"}, {"Name", "node"}} {
		if v, err := field1(status, c.key); err != nil || v != c.want {
			t.Errorf("%s = %q, %v; want %q", c.key, v, err, c.want)
		}
	}
	if v, err := field1(status, "Tracer"); err == nil {
		t.Errorf("a field that is not there: %q", v)
	}
}

func TestSelfInfo(t *testing.T) {
	pid := os.Getpid()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err := Exe(pid); err != nil || exe != self {
		t.Errorf("Exe = %q, %v; want %q", exe, err, self)
	}
	if rss, err := StatusBytes(pid, "VmRSS"); err != nil || rss <= 0 {
		t.Errorf("StatusBytes(VmRSS) = %d, %v", rss, err)
	}
	if _, err := StatusBytes(pid, "NoSuchField"); err == nil {
		t.Error("StatusBytes of a field that is not there gave no error")
	}
	if tg, err := ThreadGroup(pid); err != nil || tg != pid {
		t.Errorf("ThreadGroup(%d) = %d, %v", pid, tg, err)
	}
	if tid := syscall.Gettid(); tid != pid {
		if tg, err := ThreadGroup(tid); err != nil || tg != pid {
			t.Errorf("ThreadGroup of thread %d = %d, %v; want %d", tid, tg, err, pid)
		}
	}
	old := syscall.Umask(0o027)
	m, err := Umask(pid)
	syscall.Umask(old)
	if err != nil || m != 0o027 {
		t.Errorf("Umask = %o, %v; want 27", m, err)
	}
	if m, err := MemoryOf(pid); err != nil || m.RSS <= 0 || m.PSS <= 0 || m.PSS > m.RSS {
		t.Errorf("MemoryOf = %+v, %v", m, err)
	}
	if d, err := CPUTime(pid); err != nil || d <= 0 {
		t.Errorf("CPUTime = %v, %v", d, err)
	}
	maps, err := Mappings(pid)
	if err != nil || !slices.ContainsFunc(maps, func(m Mapping) bool { return m.Path == self && strings.HasPrefix(m.Perms, "r-x") }) {
		t.Errorf("Mappings hold no code of %s: %v", self, err)
	}
	if cg, err := Cgroups(pid); err != nil || len(cg) == 0 {
		t.Errorf("Cgroups = %v, %v", cg, err)
	}
	if _, _, err := CgroupMounts(pid, "memory"); err != nil {
		t.Errorf("CgroupMounts: %v", err)
	}
	if l, err := LoadAverage(); err != nil || len(strings.Fields(l)) != 3 {
		t.Errorf("LoadAverage = %q, %v", l, err)
	}
	if n, err := CPUs(); err != nil || n < 1 {
		t.Errorf("CPUs = %d, %v", n, err)
	}
	if n, err := SwapBytes(); err != nil || n < 0 || n%1024 != 0 {
		t.Errorf("SwapBytes = %d, %v", n, err)
	}

	// A child, and the shell's own child below it.
	sh := exec.Command("/bin/sh", "-c", "sleep 30 & echo started; wait")
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { KillGroup(sh); sh.Process.Kill(); sh.Wait() }()
	if _, err := out.Read(make([]byte, 8)); err != nil { // "started": the sleep has been forked
		t.Fatal(err)
	}
	kids, err := Children(pid)
	if err != nil || !slices.Contains(kids, sh.Process.Pid) {
		t.Errorf("Children = %v, %v; want %d among them", kids, err, sh.Process.Pid)
	}
	tree := Tree(sh.Process.Pid)
	if len(tree) != 2 || tree[0] != sh.Process.Pid {
		t.Fatalf("Tree = %v, want the shell and its sleep", tree)
	}
	if p, err := Parent(tree[1]); err != nil || p != sh.Process.Pid {
		t.Errorf("the parent of the shell's child = %d, %v", p, err)
	}
}
