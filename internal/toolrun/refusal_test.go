package toolrun

import (
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
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
		got := refusalHint(tc.ext.Manifest.Terms().Policy, tc.stderr, tc.denied, "gemkit extensions consent x --grant")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: hint %q, want one with %q", tc.name, got, tc.want)
		}
	}
}
