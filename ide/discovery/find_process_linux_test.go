//go:build linux

package discovery

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// The test binary plays the editor and its pty host when started with
// GEMKIT_DISCOVERY_HELPER set, so that a real process tree
// editor → pty host → shell → CLI can be built with real programs.
func TestMain(m *testing.M) {
	switch os.Getenv("GEMKIT_DISCOVERY_HELPER") {
	case "ide":
		// The editor starts its pty host and waits for it.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GEMKIT_DISCOVERY_HELPER=pty")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		_ = cmd.Run()
		os.Exit(0)
	case "pty":
		// The pty host runs the shell, which runs the "CLI" (sleep) in the
		// background and prints its pid.
		shell := os.Getenv("GEMKIT_DISCOVERY_SHELL")
		cmd := exec.Command(shell, "-c", `sleep 30 & echo $!; wait`)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		_ = cmd.Run()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startTree starts editor → pty host → shell → sleep and returns the pids
// of the editor and of the sleep.
func startTree(t *testing.T, shell string) (idePID, cliPID int) {
	t.Helper()
	path, err := exec.LookPath(shell)
	if err != nil {
		t.Fatalf("this test needs %s: %v", shell, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GEMKIT_DISCOVERY_HELPER=ide", "GEMKIT_DISCOVERY_SHELL="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		cliPID, err = strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			t.Fatalf("helper printed %q", s)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("process tree did not start")
	}
	// The shell forks before it execs sleep; wait for the exec so that the
	// leaf is the "CLI" and not a copy of the shell.
	// The shell's exec of sleep is seen only by reading /proc.
	if !gemkittest.Poll(10*time.Second, 2*time.Millisecond, func() bool {
		_, c := procLookup(context.Background(), cliPID)
		return strings.HasPrefix(c, "sleep")
	}) {
		t.Fatal("sleep did not start")
	}
	return cmd.Process.Pid, cliPID
}

func TestFindIDEProcessRealTree(t *testing.T) {
	for _, shell := range []string{"bash", "sh", "dash"} {
		t.Run(shell, func(t *testing.T) {
			idePID, cliPID := startTree(t, shell)
			noEnv := func(string) string { return "" }
			for name, lookup := range map[string]ProcessLookup{"proc": procLookup, "ps": psLookup} {
				got := FindIDEProcess(context.Background(), FindOptions{Getenv: noEnv, SelfPID: cliPID, Lookup: lookup})
				if got.PID != idePID || got.Source != "shell" {
					t.Errorf("%s: FindIDEProcess = %+v; want pid %d (the shell's grandparent)", name, got, idePID)
				}
				if !strings.Contains(got.Command, os.Args[0]) {
					t.Errorf("%s: command %q does not name the editor %q", name, got.Command, os.Args[0])
				}
			}
		})
	}
}

func TestProcAndPSAgree(t *testing.T) {
	_, cliPID := startTree(t, "bash")
	ctx := context.Background()
	for pid := cliPID; pid > 1; {
		p1, c1 := procLookup(ctx, pid)
		p2, c2 := psLookup(ctx, pid)
		if p1 != p2 || programName(c1) != programName(c2) {
			t.Fatalf("pid %d: /proc says (%d, %q), ps says (%d, %q)", pid, p1, c1, p2, c2)
		}
		pid = p1
	}
	if p, c := procLookup(ctx, 1<<30); p != 0 || c != "" {
		t.Errorf("missing process: got (%d, %q)", p, c)
	}
	if p, c := psLookup(ctx, 1<<30); p != 0 || c != "" {
		t.Errorf("missing process via ps: got (%d, %q)", p, c)
	}
}
