package toolrun

import (
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/sandbox"
)

// TestStackBoundHint: the hint comes only where each process's
// RLIMIT_DATA bounds it and the bound is below what a runtime's threads'
// stacks take, and says why the rlimit is there.
func TestStackBoundHint(t *testing.T) {
	cases := []struct {
		name string
		enf  sandbox.Enforcement
		want string // "" for no hint
	}{
		{"rlimit, small", sandbox.Enforcement{Memory: "rlimit", DataRlimit: true, MemoryBytes: 16000000}, "16000000 bytes for each process (no memory cgroup here)"},
		{"cgroup without swap bound, small", sandbox.Enforcement{Memory: "cgroup v1", DataRlimit: true, MemoryBytes: 16000000}, "(beside a cgroup that cannot bound swap)"},
		{"cgroup, small", sandbox.Enforcement{Memory: "cgroup v2", MemoryBytes: 16000000}, ""},
		{"rlimit, at the stacks' bound", sandbox.Enforcement{Memory: "rlimit", DataRlimit: true, MemoryBytes: stacksBound}, ""},
		{"rlimit, default", sandbox.Enforcement{Memory: "rlimit", DataRlimit: true, MemoryBytes: sandbox.DefaultMemoryBytes}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := stackBoundHint(c.enf)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("hint %q, want one with %q", got, c.want)
			}
		})
	}
}
