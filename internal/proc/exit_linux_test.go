package proc

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWaitExit: WaitExit waits for a process that is not the caller's
// child until it ends, returns at once for one that has already ended,
// and returns the context's error when the context ends first.
func TestWaitExit(t *testing.T) {
	// A process whose parent is a shell that has exited: not our child.
	sh := exec.Command("/bin/sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $!")
	out, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the shell printed %q", out)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- WaitExit(ctx, pid) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitExit on a running process with its context cancelled = %v, want context.Canceled", err)
	}

	go func() { done <- WaitExit(context.Background(), pid) }()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitExit = %v, want nil once the process was killed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("WaitExit did not return within a minute of the process's kill")
	}
	if s, err := ReadStat(pid); err == nil && s.Running() {
		t.Fatalf("WaitExit returned while process %d still runs (state %c)", pid, s.State)
	}

	// Ended and reaped: nothing to wait for.
	if err := WaitExit(context.Background(), sh.Process.Pid); err != nil {
		t.Errorf("WaitExit on a reaped process = %v, want nil", err)
	}
	if err := WaitExit(context.Background(), 0); err == nil {
		t.Error("WaitExit(0) = nil, want an error")
	}
}
