package toolrun

import (
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
)

func TestRefusalHint(t *testing.T) {
	ext := func(read, write extension.Access, hosts ...string) *extension.Extension {
		return &extension.Extension{Manifest: &extension.Manifest{Name: "x", Permissions: &extension.Permissions{
			Filesystem: &extension.FilesystemPermissions{Read: read, Write: write},
			Network:    &extension.NetworkPermissions{AllowedHosts: hosts},
		}}}
	}
	tests := []struct {
		name   string
		ext    *extension.Extension
		stderr string
		denied bool
		want   string // "" for no hint
	}{
		{"python write, write none", ext("workspace", "none"), "OSError: [Errno 30] Read-only file system: 'out.txt'", false,
			`may write no file (permissions.filesystem.write is "none"); if the tool needs more, declare it in gemini-extension.json and agree again (gemkit extensions consent x --grant)`},
		{"node write outside the workspace", ext("workspace", "workspace"), "Error: EROFS: read-only file system, open '/etc/x'", false,
			`refused a write: this tool may write only in the workspace (permissions.filesystem.write is "workspace")`},
		{"landlock", ext("workspace", "none"), "cat: /etc/shadow: Permission denied", false,
			`may read only in the workspace and write no file (permissions.filesystem.read is "workspace", .write is "none")`},
		{"no network", ext("none", "none"), "socket.gaierror: [Errno -3] Temporary failure in name resolution", false,
			"no network (permissions.network.allowedHosts is empty)"},
		{"a host refused", ext("none", "none", "api.example.com"), "curl: (56) CONNECT tunnel failed, response 403", true,
			"permissions.network.allowedHosts lists the hosts"},
		{"an ordinary failure", ext("workspace", "none"), "ValueError: bad input", false, ""},
	}
	for _, tc := range tests {
		got := refusalHint(permission.Resolved{Policy: tc.ext.Manifest.Terms().Policy}, tc.stderr, tc.denied, "gemkit extensions consent x --grant")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: hint %q, want one with %q", tc.name, got, tc.want)
		}
	}
}

// TestRefusalHintHomeTop: under write: home a tool cannot add a file at
// the top of the home folder or directly in ~/.config (by design:
// docs/sandbox-design.md); the refusal says that folder is read-only for the
// tool, why, and where it can write, not "may write only in your home
// folder", which is where it tried.
func TestRefusalHintHomeTop(t *testing.T) {
	pol := permission.Resolved{
		Policy: permission.Policy{Read: permission.AccessHome, Write: permission.AccessHome},
		Home:   "/home/me", Workspace: "/home/me/src/app",
		Closed: []string{"/home/me/.config/gemkit", "/home/me/.gemini/gemkit", "/home/me/.ssh/id_ed25519", "/run/user/1000/gemkit"},
	}
	tests := []struct {
		name, stderr string
		want         []string
		not          string
	}{
		{"shell at the top of home", "sh: 1: cannot create /home/me/notes.txt: Read-only file system",
			[]string{"~/notes.txt would be a new entry directly in ~, which is read-only for this tool",
				"inside the other folders of your home", "directly in ~, ~/.config, ~/.gemini, ~/.ssh", "such as ~/<a folder>/notes.txt",
				"agree again (gemkit extensions consent x --grant)"}, "only in your home folder"},
		{"python in ~/.config", "OSError: [Errno 30] Read-only file system: '/home/me/.config/tool.json'",
			[]string{"~/.config/tool.json would be a new entry directly in ~/.config"}, "only in your home folder"},
		{"node, Landlock without namespaces", "Error: EACCES: permission denied, open '/home/me/.gemini/x'",
			[]string{"~/.gemini/x would be a new entry directly in ~/.gemini"}, ""},
		{"a path in a writable folder", "touch: cannot touch '/home/me/src/app/out': Read-only file system",
			[]string{"may write in the workspace and inside the folders of your home, but no new file or folder directly in ~, ~/.config, ~/.gemini, ~/.ssh"}, "new entry"},
		{"no path", "Read-only file system", []string{"no new file or folder directly in ~,"}, ""},
		// A shell's error starts with its own name or the script's path
		// ("PROGRAM: line N:"), which is not what it tried to write.
		{"a script at the top of home", "/home/me/run.sh: line 1: /home/me/notes.txt: Read-only file system",
			[]string{"~/notes.txt would be a new entry directly in ~"}, "run.sh"},
		{"a program at the top of home", "/home/me/tool: cannot create '/home/me/.config/tool.json': Read-only file system",
			[]string{"~/.config/tool.json would be a new entry directly in ~/.config"}, "~/tool would"},
		{"a read refused, no path", "cat: secrets: Permission denied",
			[]string{"may read only in the workspace and your home folder and write in the workspace and inside the folders of your home, but no new file"}, ""},
	}
	for _, tc := range tests {
		got := refusalHint(pol, tc.stderr, false, "gemkit extensions consent x --grant")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hint %q, want one with %q", tc.name, got, w)
			}
		}
		if tc.not != "" && strings.Contains(got, tc.not) {
			t.Errorf("%s: hint %q says %q", tc.name, got, tc.not)
		}
	}
}
