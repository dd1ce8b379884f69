package gemkittest

import (
	"os"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/proc"
)

// ProcessTree is pid and every process descended from it, read from /proc.
func ProcessTree(pid int) []int {
	children := map[int][]int{}
	pids, _ := proc.Pids()
	for _, p := range pids {
		if pp, err := proc.Parent(p); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// Running tells whether pid is a live process (a zombie has ended).
func Running(pid int) bool {
	st, err := proc.ReadStat(pid)
	return err == nil && st.Running()
}

// AnyRunning tells whether any of pids is a live process.
func AnyRunning(pids []int) bool {
	for _, p := range pids {
		if Running(p) {
			return true
		}
	}
	return false
}

// WaitExit waits up to within for pids to end, and returns those still
// running then. It waits on each process's end (a pidfd, which becomes
// readable as the process exits, whoever its parent is), polling only
// where the system has none.
func WaitExit(pids []int, within time.Duration) (left []int) {
	if !waitExit(pids, within) {
		Poll(within, 20*time.Millisecond, func() bool { return !AnyRunning(pids) })
	}
	for _, p := range pids {
		if Running(p) {
			left = append(left, p)
		}
	}
	return left
}

// EndPrograms waits up to 15 seconds for pids, the processes of programs
// whose terminal has closed, to end (a CLI writes its session files as
// it exits, to a home the test is about to remove), then kills those
// left, saying so in the test's log.
func EndPrograms(t testing.TB, pids []int) {
	t.Helper()
	if left := WaitExit(pids, 15*time.Second); len(left) > 0 {
		t.Logf("processes %v still ran 15s after their terminal closed: killed", left)
		for _, p := range left {
			if pr, err := os.FindProcess(p); err == nil {
				_ = pr.Kill()
			}
		}
	}
}

// Exited returns a channel closed once process pid has ended, whoever its
// parent is (a process in a tmux pane is not the test's child, so it
// cannot be waited for).
func Exited(pid int) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for len(WaitExit([]int{pid}, time.Hour)) > 0 {
		}
	}()
	return ch
}
