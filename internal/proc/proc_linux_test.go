package proc

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/proc/procstat"
	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Stat
		bad      bool
	}{
		{"plain", "42 (bash) S 7 42 42 0", Stat{Comm: "bash", State: 'S', PPid: 7}, false},
		{"spaces and parentheses", "42 (a) b (c) ) Z 1 42", Stat{Comm: "a) b (c) ", State: 'Z', PPid: 1}, false},
		{"kernel thread", "2 (kthreadd) S 0 0 0", Stat{Comm: "kthreadd", State: 'S', PPid: 0}, false},
		{"a terminal", "42 (vim) S 7 42 7 34816 42", Stat{Comm: "vim", State: 'S', PPid: 7, Tty: 34816}, false},
		{"no parenthesis", "42 bash S 7", Stat{}, true},
		{"short", "42 (bash) S", Stat{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := procstat.Parse([]byte(tc.in))
			if (err != nil) != tc.bad || got != tc.want {
				t.Errorf("procstat.Parse(%q) = %+v, %v", tc.in, got, err)
			}
		})
	}
}

// TestSelf: this process's parent, command line, working folder,
// environment and owner, as the system tells them otherwise.
func TestSelf(t *testing.T) {
	pid := os.Getpid()
	if p, err := Parent(pid); err != nil || p != os.Getppid() {
		t.Errorf("Parent = %d, %v; want %d", p, err, os.Getppid())
	}
	if s, err := ReadStat(pid); err != nil || !s.Running() {
		t.Errorf("ReadStat = %+v, %v", s, err)
	}
	if args, err := Cmdline(pid); err != nil || !slices.Equal(args, os.Args) {
		t.Errorf("Cmdline = %q, %v; want %q", args, err, os.Args)
	}
	wd, _ := os.Getwd()
	if d, err := Cwd(pid); err != nil || d != wd {
		t.Errorf("Cwd = %q, %v; want %q", d, err, wd)
	}
	if env, err := Environ(pid); err != nil || !slices.Contains(env, "PATH="+os.Getenv("PATH")) {
		t.Errorf("Environ lacks PATH: %v", err)
	}
	if u, err := UID(pid); err != nil || u != uint32(os.Geteuid()) {
		t.Errorf("UID = %d, %v", u, err)
	}
	if _, err := Parent(1 << 30); err == nil {
		t.Error("Parent of a pid that does not exist gave no error")
	}
}

// TestSockets: a listening socket and both ends of a connection of this
// process, found by state and port through sock_diag, each held by this
// process.
func TestSockets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if c := <-accepted; c != nil {
		defer c.Close()
	}
	listening, err := TCPSockets(Query{States: 1 << TCPListen, LocalPort: port})
	if err != nil {
		t.Fatal(err)
	}
	if len(listening) != 1 || listening[0].Local != netip.MustParseAddrPort(ln.Addr().String()) ||
		listening[0].UID != uint32(os.Geteuid()) || listening[0].State != TCPListen {
		t.Fatalf("listening sockets on %d: %+v", port, listening)
	}
	client := uint16(conn.LocalAddr().(*net.TCPAddr).Port)
	ends, err := TCPSockets(Query{States: 1 << TCPEstablished, LocalPort: client, RemotePort: port})
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != 1 || ends[0].Remote.Port() != port {
		t.Fatalf("the client's end: %+v", ends)
	}
	one, err := TCPSocket(netip.MustParseAddrPort(conn.LocalAddr().String()), netip.MustParseAddrPort(ln.Addr().String()))
	if err != nil || one.Inode != ends[0].Inode || one.State != TCPEstablished {
		t.Errorf("TCPSocket = %+v, %v; want %+v", one, err, ends[0])
	}
	if _, err := TCPSocket(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")); err != ErrNoSocket {
		t.Errorf("TCPSocket of no socket = %v", err)
	}
	owners := SocketOwners([]uint64{listening[0].Inode, ends[0].Inode}, nil)
	if owners[listening[0].Inode] != os.Getpid() || owners[ends[0].Inode] != os.Getpid() {
		t.Errorf("SocketOwners = %v, want this process (%d)", owners, os.Getpid())
	}
	if o := SocketOwners([]uint64{listening[0].Inode}, func(int) bool { return false }); len(o) != 0 {
		t.Errorf("keep refused every process, yet %v", o)
	}

	// A child that holds the client's end too, still running this
	// program, as a child forked by another goroutine holds every
	// descriptor until its exec: the owner is still this process, the
	// child's parent. A program the socket was handed to across an exec
	// (socket activation; sleep here) owns it.
	f, err := conn.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	forked := exec.Command(os.Args[0], "-test.run=^$")
	forked.Env = append(os.Environ(), sleepEnv+"=1")
	handed := exec.Command("sleep", "30")
	for _, child := range []*exec.Cmd{forked, handed} {
		child.ExtraFiles = []*os.File{f}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { child.Process.Kill(); child.Wait() }()
	}
	// The forked child is the newer: the one looked at first.
	if o := SocketOwners([]uint64{ends[0].Inode}, func(pid int) bool { return pid != handed.Process.Pid }); o[ends[0].Inode] != os.Getpid() {
		t.Errorf("with a child of this program holding it too, SocketOwners = %v, want this process (%d), not the child (%d)", o, os.Getpid(), forked.Process.Pid)
	}
	if o := SocketOwners([]uint64{ends[0].Inode}, func(pid int) bool { return pid != forked.Process.Pid }); o[ends[0].Inode] != handed.Process.Pid {
		t.Errorf("with a program it was handed to across an exec, SocketOwners = %v, want that program (%d)", o, handed.Process.Pid)
	}
}

// alive reports whether pid runs (not a zombie).
func alive(pid int) bool {
	s, err := ReadStat(pid)
	return err == nil && s.Running()
}

// waitGone waits up to a minute for pid to end, on its pidfd, which
// becomes readable as the process exits, whoever its parent is.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(time.Minute/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			t.Errorf("process %d still runs (%v)", pid, err)
		}
		return
	}
}

// TestKillGroup: KillGroup ends the child and the grandchild it left
// running in the background.
func TestKillGroup(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 60 & echo $!; wait")
	out, _ := cmd.StdoutPipe()
	if err := StartOwned(cmd); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("no pid: %q", line)
	}
	if pg, _ := syscall.Getpgid(grandchild); pg != cmd.Process.Pid {
		t.Errorf("the grandchild's group is %d, not the child's (%d)", pg, cmd.Process.Pid)
	}
	if err := KillGroup(cmd); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitGone(t, grandchild)
	if err := KillGroup(exec.Command("true")); err == nil {
		t.Error("KillGroup of a command not started gave no error")
	}
}

// ownedEnv makes this test binary, started again with it set, start an
// owned sleep, print its pid and wait to be killed.
const ownedEnv = "GEMKIT_PROC_TEST_OWNED"

// sleepEnv makes this test binary, started again with it set, sleep: a
// child that still runs its parent's program.
const sleepEnv = "GEMKIT_PROC_TEST_SLEEP"

func TestMain(m *testing.M) {
	if os.Getenv(sleepEnv) != "" {
		time.Sleep(30 * time.Second)
		os.Exit(0)
	}
	if os.Getenv(ownedEnv) != "" {
		cmd := exec.Command("sleep", "60")
		if err := StartOwned(cmd); err != nil {
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
		cmd.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestOwnedEndsWithParent: a child started with StartOwned ends when the
// process that started it is killed, which leaves no chance to clean up.
func TestOwnedEndsWithParent(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), ownedEnv+"=1")
	out, _ := parent.StdoutPipe()
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("no pid: %q", line)
	}
	parent.Process.Kill()
	parent.Wait()
	waitGone(t, child)
}

// TestContextEndsGroup: for a command made by exec.CommandContext, the
// end of the context ends its whole group.
func TestContextEndsGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", "sleep 60 & echo $!; wait")
	out, _ := cmd.StdoutPipe()
	if err := StartOwned(cmd); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("no pid: %q", line)
	}
	cancel()
	cmd.Wait()
	waitGone(t, grandchild)
}

// TestNewestFirst orders pids by age across the wrap of pid numbers: past
// pid_max the kernel hands out small pids again, and those are the newest.
func TestNewestFirst(t *testing.T) {
	for _, tc := range []struct {
		pids []int
		last int
		want []int
	}{
		{[]int{1, 300, 20, 4000}, 4000, []int{4000, 300, 20, 1}},
		{[]int{1, 32741, 6095, 6100, 31000, 5000}, 6100, []int{6100, 6095, 5000, 1, 32741, 31000}},
		{[]int{7, 3, 9}, 0, []int{9, 7, 3}}, // last not known: by pid
	} {
		got := slices.Clone(tc.pids)
		newestFirst(got, tc.last)
		if !slices.Equal(got, tc.want) {
			t.Errorf("newestFirst(%v, %d) = %v, want %v", tc.pids, tc.last, got, tc.want)
		}
	}
	pids, err := Pids()
	if err != nil || len(pids) == 0 {
		t.Fatalf("Pids() = %v, %v", pids, err)
	}
	if last := lastPid(); last == 0 {
		t.Error("no last pid in /proc/loadavg")
	}
}
