package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/proc/procstat"
)

// withTerminalEnv marks the copy of the test binary that
// TestToolHasNoTerminal starts with a controlling terminal.
const withTerminalEnv = "GEMKIT_TEST_WITH_TERMINAL"

// TestToolHasNoTerminal: gemkit started from a terminal (its controlling
// terminal, as an agent started from a shell has) runs a tool, which has
// none: it cannot open /dev/tty, and the kernel names no terminal for it
// (/proc/self/stat's tty_nr), in a PID namespace (where the tool stays in
// gemkit's session and the child leaves the terminal) and without one
// (where it gets a session of its own). Read scope full, so that no
// missing /dev/tty in its own root hides a terminal it would have.
func TestToolHasNoTerminal(t *testing.T) {
	if os.Getenv(withTerminalEnv) == "1" {
		toolsWithoutTerminal(t)
		return
	}
	if testing.Short() {
		t.Skip("runs sandboxed processes under a terminal: runs without -short, as in CI")
	}
	ptmx, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here to start gemkit under (%v); CI's machine has /dev/ptmx", err)
	}
	master := os.NewFile(uintptr(ptmx), "ptmx")
	defer master.Close()
	if err := unix.IoctlSetPointerInt(ptmx, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(ptmx, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	go func() { _, _ = bytes.NewBuffer(nil).ReadFrom(master) }() // whatever reaches the terminal
	cmd := exec.Command(os.Args[0], "-test.run=^TestToolHasNoTerminal$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), withTerminalEnv+"=1")
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Run()
	t.Logf("under a terminal:\n%s", out.String())
	if err != nil {
		t.Fatalf("under a terminal: %v", err)
	}
}

// toolsWithoutTerminal runs in the copy of the test binary that has a
// controlling terminal. The tool's tty_nr is read from outside, from
// gemkit's /proc: its own /proc/self/stat is closed to it.
func toolsWithoutTerminal(t *testing.T) {
	f, err := os.Open("/dev/tty")
	if err != nil {
		t.Fatalf("the test's own process has no terminal to leave: %v", err)
	}
	f.Close()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.policy(permission.AccessFull, permission.AccessWorkspace)
			var out, errb gemkittest.Output
			argv := sh(`if (exec 3</dev/tty) 2>/dev/null; then echo opened /dev/tty; else echo no terminal; fi; exec sleep 30`)
			proc, err := m.l.Start(context.Background(), &Command{
				Policy: p, Path: argv[0], Args: argv[1:], Dir: p.Workspace,
				Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + p.Home, "TMPDIR=" + p.TempDir},
				Stdout: &out, Stderr: &errb,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				proc.Kill()
				_ = proc.Wait()
			}()
			if !gemkittest.Poll(20*time.Second, 20*time.Millisecond, func() bool { return strings.Contains(out.String(), "\n") }) {
				t.Fatalf("the tool said nothing: %s", errb.String())
			}
			if got := out.String(); got != "no terminal\n" {
				t.Errorf("the tool said %q", got)
			}
			st, err := procstat.Read(proc.Pid())
			if err != nil {
				t.Fatal(err)
			}
			if st.Tty != 0 {
				t.Errorf("the tool (%s, pid %d) has a terminal: tty_nr %d", st.Comm, proc.Pid(), st.Tty)
			}
		})
	}
}
