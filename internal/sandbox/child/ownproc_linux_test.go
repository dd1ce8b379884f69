package child

import "testing"

// TestOwnProcRules: /proc/self becomes /proc only when the tool may read
// its own processes and /proc is the fresh procfs of its own PID
// namespace; over the host's /proc (the fallback bind) it stays
// /proc/self.
func TestOwnProcRules(t *testing.T) {
	for _, c := range []struct {
		ownProc, freshProc bool
		want               string
	}{{true, true, "/proc"}, {true, false, "/proc/self"}, {false, true, "/proc/self"}, {false, false, "/proc/self"}} {
		rules := []PathRule{{Path: "/usr"}, {Path: "/proc/self"}}
		ownProcRules(rules, c.ownProc, c.freshProc)
		if rules[1].Path != c.want || rules[0].Path != "/usr" {
			t.Errorf("ownProc %v, freshProc %v: %v, want %s", c.ownProc, c.freshProc, rules, c.want)
		}
	}
}
