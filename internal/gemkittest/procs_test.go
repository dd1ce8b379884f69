package gemkittest

import (
	"os/exec"
	"testing"
	"time"
)

// TestExited: a process's end is told as it happens, before its parent
// reaps it, and WaitExit names those that outlive its wait.
func TestExited(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	exited := Exited(pid)
	if left := WaitExit([]int{pid}, 50*time.Millisecond); len(left) != 1 || left[0] != pid {
		t.Errorf("WaitExit of a running sleep = %v, want it left", left)
	}
	select {
	case <-exited:
		t.Fatal("told ended while it runs")
	default:
	}
	cmd.Process.Kill()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("the end of a killed process was never told")
	}
	if left := WaitExit([]int{pid}, time.Minute); len(left) != 0 {
		t.Errorf("WaitExit of an ended process = %v", left)
	}
}
