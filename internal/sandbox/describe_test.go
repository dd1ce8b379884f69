package sandbox

import (
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/permission"
)

func TestDescribe(t *testing.T) {
	perms := func(read, write permission.Access, hosts ...string) permission.Policy {
		return permission.Policy{Read: read, Write: write, AllowedHosts: hosts}
	}
	full := Capabilities{OS: "linux", LandlockABI: 7, Namespaces: true, UserNS: true, Seccomp: true, MaxProcesses: 1024}
	noNS := Capabilities{OS: "linux", LandlockABI: 7, Seccomp: true, NamespaceErr: "user namespaces refused: operation not permitted"}
	noLL := Capabilities{OS: "linux", Namespaces: true, UserNS: true, Seccomp: true}
	withMem := func(c Capabilities, mem, why string) Capabilities { c.Memory, c.MemoryErr = mem, why; return c }
	cases := []struct {
		name       string
		p          permission.Policy
		c          Capabilities
		wantIn     []string
		unenforced []string
	}{
		{"all available, no network", perms("workspace", "none"), full,
			[]string{"Landlock (ABI 7): reads limited to the workspace", "no writes except a private temp dir", "own network namespace (in a user namespace) with no interface up", "own PID namespace",
				"at most 1024 processes", "~/.gemini (credentials, consent records, other extensions and their settings) is closed"}, nil},
		{"all available, proxy", perms("workspace", "workspace", "api.example.com"), full,
			[]string{"only way out is gemkit's allowlisting HTTP(S) proxy", "api.example.com", "only to the proxy's port",
				"protected paths: read-only, the files other programs run or obey", "git hooks (.husky, .githooks, the core.hooksPath folder)", "environment files (.env, .env.*, .envrc)",
				"GEMINI.md", "~/.bashrc", "empty placeholder bound read-only", "they choose where an agent sends its API key", "home folder (or holds it) is refused"}, nil},
		{"protected writes named", permission.Policy{Read: "workspace", Write: "workspace", ProtectedWrites: []string{".husky"}}, full,
			[]string{"except in the workspace, as the manifest asks and the consent said: .husky"}, nil},
		{"no namespaces, write", perms("home", "home"), noNS, []string{"split out of the write scope by Landlock"}, []string{"second wall (files)"}},
		{"no namespaces, no network", perms("home", "none"), noNS,
			[]string{"seccomp refuses to create any socket", "setsid refused", "NOT available: no mount namespace"}, []string{"second wall (files)"}},
		{"no namespaces, hosts", perms("none", "none", "x.example.com"), noNS,
			[]string{"NOT enforceable"}, []string{"second wall (files)", "network.allowedHosts"}},
		{"memory cgroup", perms("none", "none"), withMem(full, "cgroup v1", ""), []string{"cgroup v1 memory cgroup bounds the tool and everything it starts", "own mount namespace", "no terminal"}, nil},
		{"memory cgroup without swap bound", perms("none", "none"), func() Capabilities { c := withMem(full, "cgroup v1", ""); c.SwapUnbounded = true; return c }(),
			[]string{"cgroup v1 memory cgroup bounds the tool", "cannot bound swap (no swap accounting) and the machine has swap, so RLIMIT_DATA also bounds"}, nil},
		{"memory rlimit", perms("none", "none"), withMem(full, "rlimit", "cgroup v1: permission denied"), []string{"RLIMIT_DATA bounds the memory each process writes", "NOT the process tree", "permission denied"}, nil},
		{"no landlock", perms("workspace", "workspace"), noLL,
			[]string{"Landlock is not available", "bounded only by the timeout"}, []string{"filesystem.read=workspace", "filesystem.write=workspace", "extension folder", "gemkit's configuration", "protected paths"}},
		{"no seccomp filter (a 32-bit CPU)", perms("workspace", "none"), Capabilities{OS: "linux", LandlockABI: 7, Namespaces: true, UserNS: true},
			[]string{"own network namespace", "no seccomp filter for this CPU architecture", "runs are refused unless running unconfined is allowed"}, []string{"kernel interfaces"}},
		{"no namespaces, no seccomp filter", perms("workspace", "none"), Capabilities{OS: "linux", LandlockABI: 7, NamespaceErr: "user namespaces refused"},
			[]string{"may change the modes and times of files it can reach and their xattrs and inode flags", "NOT enforced: no namespaces (user namespaces refused) and no seccomp filter for"},
			[]string{"second wall (files)", "network (none)", "kernel interfaces"}},
		{"full read closes /proc", perms("full", "none"), full, []string{"other processes' /proc entries are closed"}, nil},
		{"darwin", perms("workspace", "none"), Capabilities{OS: "darwin"},
			[]string{"sandbox-exec profile"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			notes := Describe(c.p, c.c)
			var all []string
			var unenforced []string
			for _, n := range notes {
				all = append(all, n.Permission+": "+n.How)
				if !n.Enforced {
					unenforced = append(unenforced, n.Permission)
				}
			}
			text := strings.Join(all, "\n")
			for _, w := range c.wantIn {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
			if !c.c.SwapUnbounded && strings.Contains(text, "cannot bound swap") {
				t.Errorf("says swap is unbounded where it is not:\n%s", text)
			}
			if strings.Join(unenforced, ",") != strings.Join(c.unenforced, ",") {
				t.Errorf("unenforced %v, want %v", unenforced, c.unenforced)
			}
		})
	}
}
